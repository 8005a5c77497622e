// Parallel encoding of a column: strings cut into chunks (never across a block), each chunk
// encoded into its own worst-case buffer, then the chunks packed in order. Strings encode
// independently, so the result does not depend on the cuts or the thread count.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "checks.h"
#include "codec.h"
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

Codes encode_column(const uint8_t* data, int64_t size, const int64_t* off, int64_t n,
                    const int64_t* bs, int64_t nblocks, const Matcher* const* matchers,
                    int threads, int64_t* co) {
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    check_offsets(off, n, size, "offsets");
    if (nblocks < 0 || bs[0] != 0 || bs[nblocks] != n) {
        throw std::invalid_argument("block_starts must run from 0 to " + std::to_string(n) +
                                    ", one more than the tables");
    }
    check_offsets(bs, nblocks, n, "block_starts");
    for (int64_t b = 0; b < nblocks; ++b) {
        if (matchers[b] == nullptr) throw std::invalid_argument("a matcher is None");
    }
    const Kernels& kern = kernels(active_isa());
    std::vector<Chunk> chunks;
    for (int64_t b = 0; b < nblocks; ++b) {
        if (bs[b] < bs[b + 1]) cut_block(off, bs[b], bs[b + 1], matchers[b], threads, chunks);
    }
    parallel_for(static_cast<int64_t>(chunks.size()), threads, [&](int64_t k) {
        Chunk& c = chunks[k];
        // 2 bytes per input byte at worst, + 1 for the speculative literal (pages that are
        // never written are never mapped in)
        c.buf.reset(new uint8_t[2 * (off[c.hi] - off[c.lo]) + 8]);
        c.size = kern.encode(data, size, off, c.lo, c.hi, *c.matcher, c.buf.get(), 0, co);
    });
    Codes out;
    for (Chunk& c : chunks) {
        c.base = out.size;
        out.size += c.size;
    }
    out.bytes.reset(new uint8_t[std::max<int64_t>(out.size, 1)]);
    uint8_t* dst = out.bytes.get();
    parallel_for(static_cast<int64_t>(chunks.size()), threads, [&](int64_t k) {
        Chunk& c = chunks[k];
        std::copy(c.buf.get(), c.buf.get() + c.size, dst + c.base);
        c.buf.reset();
        for (int64_t i = c.lo; i < c.hi; ++i) co[i] += c.base;
    });
    co[n] = out.size;
    return out;
}

}  // namespace fsstgpu_native
