// Parallel encoding of a column: strings cut into chunks (never across a block), each chunk
// encoded into its own worst-case buffer, then the chunks packed in order. Strings encode
// independently, so the result does not depend on the cuts or the thread count.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "entry.h"
#include "kernels.h"
#include "parallel.h"

namespace fsstgpu_native {

namespace {

constexpr int64_t kMaxChunkBytes = 1 << 20;  // a chunk's buffer stays in L2/L3
constexpr int64_t kMinChunkBytes = 64 << 10;  // ~100 us of work: >> a task's overhead
constexpr int kChunksPerThread = 4;  // a late-starting thread still gets a share

struct Chunk {
    int64_t lo, hi;  // strings
    const Matcher* matcher;
    std::unique_ptr<uint8_t[]> buf;
    int64_t size = 0, base = 0;  // code bytes, and where they go in the output
};

void cut_block(const int64_t* off, int64_t lo, int64_t hi, const Matcher* m, int threads,
               std::vector<Chunk>& chunks) {
    const int64_t span = off[hi] - off[lo];
    const int64_t want = std::clamp<int64_t>(span / (kChunksPerThread * std::max(threads, 1)),
                                             kMinChunkBytes, kMaxChunkBytes);
    const int64_t n = std::max<int64_t>(1, std::min<int64_t>(hi - lo, span / want));
    int64_t prev = lo;
    for (int64_t c = 1; c <= n; ++c) {
        int64_t cut = hi;
        if (c < n) {
            const int64_t target = off[lo] + static_cast<int64_t>((__int128)span * c / n);
            cut = std::lower_bound(off + prev, off + hi, target) - off;
        }
        if (cut > prev) {
            chunks.push_back(Chunk{prev, cut, m, nullptr});
            prev = cut;
        }
    }
}

}  // namespace

py::tuple encode_blocks(const Array<uint8_t>& data, const Array<int64_t>& offsets,
                        const Array<int64_t>& block_starts,
                        const std::vector<std::shared_ptr<Matcher>>& matchers, int threads) {
    const int64_t size = length_1d(data, "data");
    const int64_t n = length_1d(offsets, "offsets") - 1;
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    const int64_t* off = offsets.data();
    check_offsets(off, n, size, "offsets");
    const int64_t nblocks = length_1d(block_starts, "block_starts") - 1;
    const int64_t* bs = block_starts.data();
    if (nblocks != static_cast<int64_t>(matchers.size()) || bs[0] != 0 || bs[nblocks] != n) {
        throw std::invalid_argument("block_starts must run from 0 to " + std::to_string(n) +
                                    ", one more than the tables");
    }
    check_offsets(bs, nblocks, n, "block_starts");
    for (const auto& m : matchers) {
        if (!m) throw std::invalid_argument("a matcher is None");
    }
    const Kernels& kern = kernels(active_isa());
    Array<int64_t> code_offsets(n + 1);
    int64_t* co = code_offsets.mutable_data();
    std::unique_ptr<uint8_t[]> codes;
    int64_t total = 0;
    {
        py::gil_scoped_release nogil;
        std::vector<Chunk> chunks;
        for (int64_t b = 0; b < nblocks; ++b) {
            if (bs[b] < bs[b + 1]) cut_block(off, bs[b], bs[b + 1], matchers[b].get(), threads,
                                             chunks);
        }
        const uint8_t* src = data.data();
        parallel_for(static_cast<int64_t>(chunks.size()), threads, [&](int64_t k) {
            Chunk& c = chunks[k];
            // 2 bytes per input byte at worst, + 1 for the speculative literal (pages that are
            // never written are never mapped in)
            c.buf.reset(new uint8_t[2 * (off[c.hi] - off[c.lo]) + 8]);
            c.size = kern.encode(src, size, off, c.lo, c.hi, *c.matcher, c.buf.get(), 0, co);
        });
        for (Chunk& c : chunks) {
            c.base = total;
            total += c.size;
        }
        codes.reset(new uint8_t[std::max<int64_t>(total, 1)]);
        parallel_for(static_cast<int64_t>(chunks.size()), threads, [&](int64_t k) {
            Chunk& c = chunks[k];
            std::copy(c.buf.get(), c.buf.get() + c.size, codes.get() + c.base);
            c.buf.reset();
            for (int64_t i = c.lo; i < c.hi; ++i) co[i] += c.base;
        });
        co[n] = total;
        if (n == 0) co[0] = 0;
    }
    uint8_t* raw = codes.release();
    py::capsule owner(raw, [](void* p) { delete[] static_cast<uint8_t*>(p); });
    Array<uint8_t> out({total}, {int64_t(1)}, raw, owner);
    return py::make_tuple(out, code_offsets);
}

}  // namespace fsstgpu_native
