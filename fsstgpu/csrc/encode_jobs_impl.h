// The AVX-512 job kernel, part of kernels_impl.h (included inside its per-instruction-set
// namespace after encode_lanes_impl.h; the AVX-512 copy only).
//
// The lane kernels give each lane a run of strings, so a lane whose string ends must find its
// next one (a gather of its end, a scatter of its start), a branch that goes either way about
// every other step. Here, as in the reference FSST's AVX-512 kernel, a lane holds one string,
// a "job": when it ends, its state is packed away and the next job of a queue is expanded
// into the lane, with no branch at all. Jobs finish out of order, so each string gets its own
// worst-case region of a scratch buffer, and a last pass copies the regions, in order, into
// the output.
//
// The strings come in batches of at most kJobBytes bytes and kJobStrings strings, so that a
// job packs into 64 bits:
//   out  bits  0-18  its output position in the scratch buffer
//   idx  bits 19-31  the string, within the batch
//   end  bits 32-47  its end in the data, from the batch's first byte
//   cur  bits 48-63  its position, from the same place
// Empty strings are no jobs; strings longer than kJobLong are no jobs either (one lane would
// hold a long string while the queue runs dry): the scalar lanes encode a run of them.
//
// One step of a lane: lane_step's choice (see encode_lanes_impl.h), branch-free in vectors:
// the slot's long symbol (its length <= rem), else short_code of the next two bytes, or of the
// last byte and single_hi when one byte is left (matcher.h). Its loads come in two variants:
// gathers (job_step: LaneTable::key/vcl, a gather per field) or scalar loads through stack
// buffers (job_step_e: slot_entry -> ventry), which kAuto takes (kernels_impl.h says why).

#if FSSTGPU_ISA_LEVEL >= 2
constexpr int64_t kJobBytes = 65535;   // 16 bits of cur and end
constexpr int64_t kJobStrings = 8191;  // 13 bits of idx
constexpr int64_t kJobLong = 1024;
constexpr int kJobLanes = 32;  // 4 registers: enough chains to cover the loads' latency (6: no faster)
// A string's region: 2 bytes per byte + 2 (the 4-byte stores of a last escape), so
// region(k) = 2 * (its start - batch start) + 2 * k; the batch's at most:
constexpr int64_t kJobScratch = 2 * kJobBytes + 2 * kJobStrings + 64;  // < 2^19
static_assert(kJobScratch < (int64_t(1) << 19), "out fits in 19 bits");
// Lanes are stepped while at least this many are live (fewer finish one at a time, each step
// a chain of dependent loads: about 3 times the cost of a code in a full register).
constexpr int kJobDrain = 12;

// The low min(max(n, 0), 8) bits.
FSSTGPU_TARGET inline unsigned lanes_of(int64_t n) {
    return n >= 8 ? 0xFFu : n <= 0 ? 0u : (1u << n) - 1;
}

// The end of a step, both loads' kinds alike: v advanced past the code written (one byte, two
// with an escape's literal) and past the input its symbol took (cl: length << 8 | code; rem: the
// bytes that were left); returns the live lanes whose string is now done (the step's length is
// what was left).
template <bool Full>
FSSTGPU_TARGET __attribute__((always_inline)) inline __mmask8 job_advance(__m512i& v, __m512i cl, __m512i rem, __mmask8 live) {
    const __m512i ff = _mm512_set1_epi64(0xFF);
    const __mmask8 esc = _mm512_cmpeq_epi64_mask(_mm512_and_si512(cl, ff), ff);
    const __m512i one = _mm512_set1_epi64(1);
    const __m512i len = _mm512_and_si512(cl, _mm512_set1_epi64(0x0F00));
    const __mmask8 fin = Full ? _mm512_cmpeq_epi64_mask(len, _mm512_slli_epi64(rem, 8))
                              : _mm512_mask_cmpeq_epi64_mask(live, len, _mm512_slli_epi64(rem, 8));
    v = _mm512_add_epi64(v, _mm512_or_si512(_mm512_slli_epi64(len, 40), one));
    v = _mm512_mask_add_epi64(v, esc, v, one);
    return fin;
}

// One step of the jobs of v in lanes live (Full: all 8, no masks); returns the live lanes whose
// string is now done. A lane that is not live holds a finished job (or none): its loads and
// stores are masked off (its position may be the data's last byte).
template <bool Full>
FSSTGPU_TARGET inline __mmask8 job_step(__m512i& v, __mmask8 live, const uint8_t* base,
                                        const Matcher& m, const LaneTable& t, uint8_t* scratch) {
    const __m512i ff = _mm512_set1_epi64(0xFF);
    const __m512i cur = _mm512_srli_epi64(v, 48);
    const __m512i end = _mm512_and_si512(_mm512_srli_epi64(v, 32), _mm512_set1_epi64(0xFFFF));
    const __m512i rem = _mm512_sub_epi64(end, cur);
    const __m512i word =
        Full ? _mm512_i64gather_epi64(cur, base, 1)
             : _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), live, cur, base, 1);
    // the short entry: of the next two bytes, or of the last byte alone
    const __mmask8 single = _mm512_cmpeq_epi64_mask(rem, _mm512_set1_epi64(1));
    __m512i sidx = _mm512_and_si512(word, _mm512_set1_epi64(0xFFFF));
    sidx = _mm512_mask_ternarylogic_epi64(  // (word & 0xFF) | single_hi
        sidx, single, ff, _mm512_set1_epi64(static_cast<int64_t>(m.single_hi)), 0xEA);
    const __m512i sc = _mm512_i64gather_epi64(sidx, m.short_code, 2);  // low 16 bits: the entry
    // slot(): the low 3 bytes times the prime in 32 bits (the upper halves stay zero)
    __m512i h = _mm512_mullo_epi32(_mm512_and_si512(word, _mm512_set1_epi64(0xFFFFFF)),
                                   _mm512_set1_epi64(static_cast<uint32_t>(kHashPrime)));
    h = _mm512_and_si512(_mm512_xor_si512(h, _mm512_srli_epi32(h, 15)),
                         _mm512_set1_epi64(kHashSize - 1));
    const __m512i key = _mm512_i64gather_epi64(h, t.key, 8);
    const __m512i vcl = _mm512_i64gather_epi64(h, t.vcl, 8);
    const __m512i mask = _mm512_srlv_epi64(_mm512_set1_epi64(-1), _mm512_and_si512(vcl, ff));
    __mmask8 hit = _mm512_cmpeq_epi64_mask(_mm512_and_si512(word, mask), key);
    hit = _mm512_mask_cmple_epu64_mask(hit, _mm512_srli_epi64(vcl, 16), rem);
    // code | length << 8 in the low 16 bits
    const __m512i cl = _mm512_mask_mov_epi64(sc, hit, _mm512_srli_epi64(vcl, 8));
    // the code and the literal in one 4-byte store (the region has room for it; its last two
    // bytes are whatever: later codes or nothing overwrite them): cl's low byte, word's next
    const __m512i pair = _mm512_ternarylogic_epi64(_mm512_slli_epi64(word, 8), cl, ff, 0xD8);
    const __m512i at = _mm512_and_si512(v, _mm512_set1_epi64(0x7FFFF));
    if (Full) {
        _mm512_i64scatter_epi32(scratch, at, _mm512_cvtepi64_epi32(pair), 1);
    } else {
        _mm512_mask_i64scatter_epi32(scratch, live, at, _mm512_cvtepi64_epi32(pair), 1);
    }
    return job_advance<Full>(v, cl, rem, live);
}

// job_step with the gathers and the scatter done by scalar loads and stores through stack
// buffers: on Zen 4 a 512-bit gather or scatter issues for ~15-18 cycles whatever its mask,
// 8 scalar loads take ~3. dummy: a scratch offset that takes the stores of lanes not live.
template <bool Full>
FSSTGPU_TARGET inline __mmask8 job_step_e(__m512i& v, __mmask8 live, const uint8_t* base,
                                          const Matcher& m, const LaneTable& t,
                                          uint8_t* scratch, int64_t dummy) {
    alignas(64) uint64_t ia[8], ib[8], wa[8], wb[8], wc[8], wd[8];
    const __m512i ff = _mm512_set1_epi64(0xFF);
    __m512i cur = _mm512_srli_epi64(v, 48);
    if (!Full) cur = _mm512_maskz_mov_epi64(live, cur);  // lanes not live read data[base]
    const __m512i end = _mm512_and_si512(_mm512_srli_epi64(v, 32), _mm512_set1_epi64(0xFFFF));
    const __m512i rem = _mm512_sub_epi64(end, cur);
    _mm512_store_si512(ia, cur);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) wa[k] = load64(base + ia[k]);
    const __m512i word = _mm512_load_si512(wa);
    const __mmask8 single = _mm512_cmpeq_epi64_mask(rem, _mm512_set1_epi64(1));
    __m512i sidx = _mm512_and_si512(word, _mm512_set1_epi64(0xFFFF));
    sidx = _mm512_mask_ternarylogic_epi64(
        sidx, single, ff, _mm512_set1_epi64(static_cast<int64_t>(m.single_hi)), 0xEA);
    __m512i h = _mm512_mullo_epi32(_mm512_and_si512(word, _mm512_set1_epi64(0xFFFFFF)),
                                   _mm512_set1_epi64(static_cast<uint32_t>(kHashPrime)));
    h = _mm512_and_si512(_mm512_xor_si512(h, _mm512_srli_epi32(h, 15)),
                         _mm512_set1_epi64(kHashSize - 1));
    _mm512_store_si512(ia, sidx);
    _mm512_store_si512(ib, h);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
        wb[k] = m.short_code[ia[k]];
        const LaneTable::VEntry& ve = t.ventry[t.slot_entry[ib[k]]];
        wc[k] = ve.key;
        wd[k] = ve.vcl;
    }
    const __m512i sc = _mm512_load_si512(wb);
    const __m512i key = _mm512_load_si512(wc);
    const __m512i vcl = _mm512_load_si512(wd);
    const __m512i mask = _mm512_srlv_epi64(_mm512_set1_epi64(-1), _mm512_and_si512(vcl, ff));
    __mmask8 hit = _mm512_cmpeq_epi64_mask(_mm512_and_si512(word, mask), key);
    hit = _mm512_mask_cmple_epu64_mask(hit, _mm512_srli_epi64(vcl, 16), rem);
    const __m512i cl = _mm512_mask_mov_epi64(sc, hit, _mm512_srli_epi64(vcl, 8));
    const __m512i pair = _mm512_ternarylogic_epi64(_mm512_slli_epi64(word, 8), cl, ff, 0xD8);
    __m512i at = _mm512_and_si512(v, _mm512_set1_epi64(0x7FFFF));
    if (!Full) at = _mm512_mask_mov_epi64(_mm512_set1_epi64(dummy), live, at);
    _mm512_store_si512(ia, at);
    _mm512_store_si512(ib, pair);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
        const uint32_t two = static_cast<uint32_t>(ib[k]);
        std::memcpy(scratch + ia[k], &two, 4);
    }
    return job_advance<Full>(v, cl, rem, live);
}

// One step of group v (lanes l; F: all of them live) with gathers or with scalar loads.
#define FSSTGPU_JOB_STEP(F, v, l)                                                          \
    (Gather ? job_step<F>(v, l, bdata, m, t, scratch)                                      \
            : job_step_e<F>(v, l, bdata, m, t, scratch, dummy))

// The rest of job j with lane_step; its end goes to endpos[idx].
FSSTGPU_TARGET inline void job_finish(uint64_t j, const uint8_t* data, int64_t base,
                                      const Matcher& m, const LaneTable& t, uint8_t* scratch,
                                      int64_t* endpos) {
    Lane L{base + static_cast<int64_t>(j >> 48),
           base + static_cast<int64_t>((j >> 32) & 0xFFFF),
           static_cast<int64_t>(j & 0x7FFFF), 0, 0};
    while (L.pos < L.end) lane_step(L, data, m, t, scratch);
    endpos[(j >> 19) & 0x1FFF] = L.out;
}

// Strings lo:hi into codes from out0 (room: 2 bytes per input byte + kEncodeSlack); returns
// the end. Same codes and offsets as encode_chained for a table without chains. Gather: the
// steps load with gathers (job_step), else with scalar loads (job_step_e).
template <bool Gather>
FSSTGPU_TARGET int64_t encode_jobs(const uint8_t* data, int64_t size, const int64_t* offsets,
                                   int64_t lo, int64_t hi, const Matcher& m, const LaneTable& t,
                                   uint8_t* codes, int64_t out0, int64_t* code_offsets) {
    // the strings whose every 8-byte load stays inside data: those ending <= size - 7
    int64_t a = lo, b = hi;
    while (a < b) {
        const int64_t mid = a + (b - a) / 2;
        if (offsets[mid + 1] <= size - 7) a = mid + 1; else b = mid;
    }
    const int64_t fast = a;
    // scratch sized for the call: regions, then the queue, the done jobs and endpos
    const int64_t span = offsets[fast] - offsets[lo];
    const int64_t nbytes = span < kJobBytes ? span : kJobBytes;
    const int64_t nstr = fast - lo < kJobStrings ? fast - lo : kJobStrings;
    const int64_t room = (2 * nbytes + 2 * nstr + 64 + 63) & ~int64_t(63);
    const int64_t jobs_room = nstr + kJobLanes + 8;
    uint8_t* mem = static_cast<uint8_t*>(
        std::malloc(static_cast<size_t>(room + 3 * 8 * jobs_room + 64)));
    if (mem == nullptr) {
        return encode_lanes(data, size, offsets, lo, hi, m, t, codes, out0, code_offsets);
    }
    uint8_t* scratch = mem;
    const int64_t dummy = room - 8;  // past every region and the copies' reads
    uint64_t* queue = reinterpret_cast<uint64_t*>(mem + room);
    uint64_t* done = queue + jobs_room;
    int64_t* endpos = reinterpret_cast<int64_t*>(done + jobs_room);
    int64_t out = out0;
    int64_t i = lo;
    while (i < fast) {
        if (offsets[i + 1] - offsets[i] > kJobLong) {  // a run of long strings
            int64_t j = i + 1;
            while (j < fast && offsets[j + 1] - offsets[j] > kJobLong) ++j;
            out = encode_lanes(data, size, offsets, i, j, m, t, codes, out, code_offsets);
            i = j;
            continue;
        }
        // the batch: strings i:j, and the jobs of the non-empty ones
        const int64_t base = offsets[i];
        int64_t j = i, nq = 0;
        while (j < fast && j - i < kJobStrings) {
            const int64_t s = offsets[j] - base, e = offsets[j + 1] - base;
            if (e - s > kJobLong || e > kJobBytes) break;
            const int64_t k = j - i;
            const int64_t region = 2 * s + 2 * k;
            endpos[k] = region;
            queue[nq] = static_cast<uint64_t>(region) | static_cast<uint64_t>(k) << 19 |
                        static_cast<uint64_t>(e) << 32 | static_cast<uint64_t>(s) << 48;
            nq += e > s;
            ++j;
        }
        const uint8_t* bdata = data + base;
        int64_t qp = 0, nd = 0;
        if (nq >= kJobDrain) {
            // the first jobs, lanes without one not live
            __mmask8 l0 = static_cast<__mmask8>(lanes_of(nq)), l1 = static_cast<__mmask8>(lanes_of(nq - 8));
            __mmask8 l2 = static_cast<__mmask8>(lanes_of(nq - 16)), l3 = static_cast<__mmask8>(lanes_of(nq - 24));
            __m512i v0 = _mm512_maskz_loadu_epi64(l0, queue);
            __m512i v1 = _mm512_maskz_loadu_epi64(l1, queue + 8);
            __m512i v2 = _mm512_maskz_loadu_epi64(l2, queue + 16);
            __m512i v3 = _mm512_maskz_loadu_epi64(l3, queue + 24);
            qp = nq < kJobLanes ? nq : kJobLanes;
            // Finished jobs go to the done list, the next ones into their lanes:
            // while every lane can be refilled, no masks,
            if (l3 == 0xFF) {
                while (qp + kJobLanes <= nq) {
#define FSSTGPU_JOB_REFILL(v)                                                              \
                    {                                                                      \
                        const __mmask8 f = FSSTGPU_JOB_STEP(true, v, 0xFF);               \
                        _mm512_storeu_si512(done + nd, _mm512_maskz_compress_epi64(f, v)); \
                        v = _mm512_mask_expand_epi64(v, f, _mm512_loadu_si512(queue + qp)); \
                        const int c = __builtin_popcount(static_cast<unsigned>(f));        \
                        nd += c;                                                           \
                        qp += c;                                                           \
                    }
                    FSSTGPU_JOB_REFILL(v0)
                    FSSTGPU_JOB_REFILL(v1)
                    FSSTGPU_JOB_REFILL(v2)
                    FSSTGPU_JOB_REFILL(v3)
#undef FSSTGPU_JOB_REFILL
                }
            }
            // then, with the last jobs, while enough lanes are live to be worth a step (a step
            // costs the same whatever its mask)
            for (;;) {
                const int live = __builtin_popcount(static_cast<unsigned>(l0)) +
                                 __builtin_popcount(static_cast<unsigned>(l1)) +
                                 __builtin_popcount(static_cast<unsigned>(l2)) +
                                 __builtin_popcount(static_cast<unsigned>(l3));
                if (live < kJobDrain) break;
#define FSSTGPU_JOB_DRAIN(v, l)                                                            \
                {                                                                          \
                    const __mmask8 f = FSSTGPU_JOB_STEP(false, v, l);                      \
                    _mm512_storeu_si512(done + nd, _mm512_maskz_compress_epi64(f, v));     \
                    nd += __builtin_popcount(static_cast<unsigned>(f));                    \
                    const int64_t avail = nq - qp;                                         \
                    const unsigned take =                                                  \
                        avail >= 8 ? f : _pdep_u32(lanes_of(avail), f);                    \
                    v = _mm512_mask_expand_epi64(v, static_cast<__mmask8>(take),           \
                                                 _mm512_loadu_si512(queue + qp));          \
                    qp += __builtin_popcount(take);                                        \
                    l = static_cast<__mmask8>((l & ~f) | take);                            \
                }
                FSSTGPU_JOB_DRAIN(v0, l0)
                FSSTGPU_JOB_DRAIN(v1, l1)
                FSSTGPU_JOB_DRAIN(v2, l2)
                FSSTGPU_JOB_DRAIN(v3, l3)
#undef FSSTGPU_JOB_DRAIN
            }
            alignas(64) uint64_t jobs[kJobLanes];
            _mm512_store_si512(jobs, v0);
            _mm512_store_si512(jobs + 8, v1);
            _mm512_store_si512(jobs + 16, v2);
            _mm512_store_si512(jobs + 24, v3);
            const unsigned live = unsigned(l0) | unsigned(l1) << 8 | unsigned(l2) << 16 |
                                  unsigned(l3) << 24;
            for (int k = 0; k < kJobLanes; ++k) {
                if ((live >> k) & 1) job_finish(jobs[k], data, base, m, t, scratch, endpos);
            }
            for (int64_t d = 0; d < nd; ++d) {
                endpos[(done[d] >> 19) & 0x1FFF] = static_cast<int64_t>(done[d] & 0x7FFFF);
            }
        }
        for (; qp < nq; ++qp) job_finish(queue[qp], data, base, m, t, scratch, endpos);
        // the regions, in order, into the output (32-byte copies: the scratch has 64 bytes
        // past the last region, the output kEncodeSlack past 2 bytes per byte)
        for (int64_t s = i; s < j; ++s) {
            const int64_t k = s - i;
            code_offsets[s] = out;
            const int64_t region = 2 * (offsets[s] - base) + 2 * k;
            const int64_t n = endpos[k] - region;
            for (int64_t c = 0; c < n; c += 32) {
                _mm256_storeu_si256(
                    reinterpret_cast<__m256i*>(codes + out + c),
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scratch + region + c)));
            }
            out += n;
        }
        i = j;
    }
    std::free(mem);
    if (fast < hi) out = encode_chained(data, size, offsets, fast, hi, m, codes, out,
                                        code_offsets);
    return out;
}
#endif
