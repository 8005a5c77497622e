// The column checks of checks_column.h, with fsstgpu/checks.py's messages.
#include "checks_column.h"

#include <cstring>
#include <string>

#include "errors.h"

namespace fsstgpu_native {

namespace {

// numba's int64 arithmetic wraps; C++'s signed overflow is undefined
inline int64_t wrap(uint64_t v) { return int64_t(v); }

constexpr int64_t kBlock = 256;

struct Scan {
    int status = 0;  // 1: negative length, 2: past the limit
    int64_t index = 0;
    int64_t total = 0;  // of the lengths before index (all of them when status is 0)
};

// checks.py's serial loop over lengths[lo:hi] from a running total of base (<= limit);
// prefix[p] = the running total at string eff[p], for the p whose eff lies in [lo, hi).
Scan scan(const int64_t* lengths, int64_t lo, int64_t hi, int64_t limit, int64_t base,
          const int64_t* eff, int64_t npos, int64_t* prefix) {
    int64_t p = std::lower_bound(eff, eff + npos, lo) - eff;
    int64_t total = base;
    for (int64_t i = lo;;) {
        for (; p < npos && eff[p] == i; ++p) prefix[p] = total;
        const int64_t stop = p < npos ? std::min(eff[p], hi) : hi;
        while (i < stop) {
            const int64_t end = std::min(i + kBlock, stop);
            if (end - i == kBlock) {
                // lengths under 2**53 (their OR says so) that fit: summed without branches
                uint64_t bits = 0, sum = 0;
                for (int64_t j = i; j < end; ++j) {
                    bits |= uint64_t(lengths[j]);
                    sum += uint64_t(lengths[j]);
                }
                if (!(bits >> 53) && int64_t(sum) <= limit - total) {
                    total += int64_t(sum);
                    i = end;
                    continue;
                }
            }
            for (; i < end; ++i) {
                const int64_t v = lengths[i];
                if (v < 0) return {1, i, total};
                if (v > limit - total) return {2, i, total};  // v > limit, or the total passes it
                total += v;
            }
        }
        if (i >= hi) return {0, hi, total};
    }
}

}  // namespace

int64_t length_sums(const int64_t* lengths, int64_t n, int64_t ncodes, const int64_t* positions,
                    int64_t npos, int64_t* prefix, int threads) {
    if (ncodes < 0 || ncodes > (int64_t(1) << 59)) {
        throw std::invalid_argument("ncodes out of range");
    }
    const int64_t limit = 8 * ncodes;
    // where the serial loop fills each prefix entry: positions made non-decreasing, in 0..n
    std::vector<int64_t> eff(static_cast<size_t>(npos));
    int64_t last = 0;
    for (int64_t p = 0; p < npos; ++p) eff[p] = last = std::min(std::max(last, positions[p]), n);
    const int64_t ntasks = tasks_for(n, threads);
    std::vector<Scan> parts(static_cast<size_t>(ntasks));
    auto lo = [&](int64_t t) { return int64_t((__int128)n * t / ntasks); };
    parallel_for(ntasks, threads, [&](int64_t t) {
        parts[t] = scan(lengths, lo(t), lo(t + 1), limit, 0, eff.data(), npos, prefix);
    });
    Scan end;
    std::vector<int64_t> base(static_cast<size_t>(ntasks), 0);
    for (int64_t t = 0; t < ntasks; ++t) {
        const Scan& s = parts[t];
        base[t] = end.total;
        if (s.total > limit - end.total) {  // the total passes the limit before s.index
            end = scan(lengths, lo(t), lo(t + 1), limit, end.total, eff.data(), 0, nullptr);
            break;
        }
        end.total += s.total;
        if (s.status) {
            end.status = s.status;
            end.index = s.index;
            break;
        }
    }
    if (end.status == 1) {
        throw CorruptData("lengths must be non-negative (string " + std::to_string(end.index) +
                          ": " + std::to_string(lengths[end.index]) + ")");
    }
    if (end.status == 2) {
        throw CorruptData("the lengths' total exceeds the " + std::to_string(limit) + " bytes " +
                          std::to_string(ncodes) + " codes can hold (by string " +
                          std::to_string(end.index) + ")");
    }
    int64_t t = 0;
    for (int64_t p = 0; p < npos; ++p) {
        if (eff[p] == n) {
            prefix[p] = end.total;
            continue;
        }
        while (eff[p] >= lo(t + 1)) ++t;
        prefix[p] += base[t];
    }
    return end.total;
}

int64_t first_misfit(const int64_t* co, const int64_t* lengths, int64_t n, int threads) {
    return first_over_chunks(n, threads, [&](int64_t lo, int64_t hi) {
        return first_in_blocks(lo, hi, [&](int64_t i) {
            const int64_t c = wrap(uint64_t(co[i + 1]) - uint64_t(co[i]));
            return (c > wrap(2 * uint64_t(lengths[i]))) | (lengths[i] > wrap(8 * uint64_t(c)));
        });
    });
}

int64_t first_filled_null(const uint8_t* validity, const int64_t* lengths, const int64_t* co,
                          int64_t n, int threads) {
    return first_over_chunks(n, threads, [&](int64_t lo, int64_t hi) {
        auto null = [&](int64_t i) { return !((validity[i >> 3] >> (i & 7)) & 1); };
        if (!co) {
            return first_in_blocks(lo, hi, [&](int64_t i) { return null(i) & (lengths[i] != 0); });
        }
        return first_in_blocks(lo, hi, [&](int64_t i) {
            return null(i) & ((lengths[i] != 0) | (co[i + 1] != co[i]));
        });
    });
}

int64_t count_set_bits(const uint8_t* bitmap, int64_t nbytes) {
    int64_t count = 0, j = 0;
    for (; j + 8 <= nbytes; j += 8) {
        uint64_t word;
        std::memcpy(&word, bitmap + j, 8);
        count += __builtin_popcountll(word);
    }
    for (; j < nbytes; ++j) count += __builtin_popcount(bitmap[j]);
    return count;
}

bool mark_code_starts(const int64_t* co, int64_t n, int64_t bit, uint8_t* out, int64_t nbits) {
    for (int64_t i = 0; i < n; ++i) {
        if (co[i + 1] <= co[i]) continue;  // no codes: an empty or null string starts nothing
        const uint64_t p = uint64_t(bit) + uint64_t(co[i]);  // wraps where forged: then > nbits
        if (p >= uint64_t(nbits)) return false;
        out[p >> 3] |= uint8_t(1u << (p & 7));
    }
    return true;
}

void or_bits(const uint8_t* src, int64_t nbits, uint8_t* out, int64_t bit) {
    const int64_t nbytes = (nbits + 7) / 8, at = bit >> 3;
    const unsigned shift = unsigned(bit & 7);
    int64_t k = 0;
    // eight bytes at a time while the nine output bytes they reach come before the last one
    // the bits reach (a batch of file columns ORs in a bit a code), the bits shifted out of a
    // word carried into the next in a register (a byte store there, read back by the next
    // word's load, stalled the loop 20x)
    uint64_t carry = 0;
    for (; k + 9 <= nbytes; k += 8) {
        uint64_t v, w;
        std::memcpy(&v, src + k, 8);
        std::memcpy(&w, out + at + k, 8);
        w |= (v << shift) | carry;
        std::memcpy(out + at + k, &w, 8);
        carry = shift ? v >> (64 - shift) : 0;  // whole bytes of src: no mask
    }
    if (carry) out[at + k] |= uint8_t(carry);
    for (; k < nbytes; ++k) {
        unsigned v = src[k];
        if (k == nbytes - 1 && (nbits & 7)) v &= (1u << (nbits & 7)) - 1;  // bits past nbits
        out[at + k] |= uint8_t(v << shift);
        // the high part only where it holds bits: they lie before bit + nbits, inside out
        if (shift && (v >> (8 - shift))) out[at + k + 1] |= uint8_t(v >> (8 - shift));
    }
}

}  // namespace fsstgpu_native
