// Parallel encoding of a column: strings cut into chunks (never across a block), each chunk
// encoded into its own worst-case region of one buffer, then copied, in parallel, to its place
// in a buffer of the codes' size (one thread: chunk after chunk in one buffer, shrunk after).
// Strings encode independently, so the result does not depend on the cuts or the thread
// count. Memory: the worst case (2 bytes per input byte) is only reserved; pages never written
// are never mapped in, and a region's pages are handed back once copied, so the peak is about
// the codes' size. A block's lookup tables are built by the first of its chunks to run and
// freed after its last.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "checks.h"
#include "codec.h"
#include "kernels.h"
#include "parallel.h"

namespace fsstgpu_native {

namespace {

constexpr int64_t kMaxChunkBytes = 1 << 20;  // a chunk's buffer stays in L2/L3
constexpr int64_t kMinChunkBytes = 64 << 10;  // ~100 us of work: >> a task's overhead
constexpr int kChunksPerThread = 4;  // a late-starting thread still gets a share
// Reserves this large are mmap'd by malloc (its threshold is at most 32 MB): their pages can
// be handed back with madvise while the buffer lives.
constexpr int64_t kReleaseBytes = int64_t(64) << 20;

// Hand the whole pages of [p, p + bytes) back to the kernel (an mmap'd buffer's interior):
// they read as zeros if touched again.
void release_pages(uint8_t* p, size_t bytes) {
    const uintptr_t page = 4096;
    const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
    if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

struct Chunk {
    int64_t lo, hi;  // strings
    int64_t block;
    int64_t region = 0;          // where its codes are written
    int64_t size = 0, base = 0;  // code bytes, and where they end up
};

// Strings lo:hi of a block as chunks of about `want` bytes.
void cut_block(const int64_t* off, int64_t lo, int64_t hi, int64_t block, int64_t want,
               std::vector<Chunk>& chunks) {
    const int64_t span = off[hi] - off[lo];
    const int64_t n = std::max<int64_t>(1, std::min<int64_t>(hi - lo, span / want));
    int64_t prev = lo;
    for (int64_t c = 1; c <= n; ++c) {
        int64_t cut = hi;
        if (c < n) {
            const int64_t target = off[lo] + static_cast<int64_t>((__int128)span * c / n);
            cut = std::lower_bound(off + prev, off + hi, target) - off;
        }
        if (cut > prev) {
            chunks.push_back(Chunk{prev, cut, block});
            prev = cut;
        }
    }
}

// A block's lookup tables while its chunks encode: the matcher (given, or built from the
// block's symbols by the first chunk to need it) and its lane table (null where it chains),
// released after the block's last chunk.
struct BlockTables {
    std::once_flag built;
    std::unique_ptr<Matcher> owned;
    const Matcher* matcher = nullptr;
    std::unique_ptr<LaneTable> lanes;
    std::atomic<int64_t> chunks_left{0};
};

Codes encode_with(const uint8_t* data, int64_t size, const int64_t* off, int64_t n,
                  const int64_t* bs, int64_t nblocks, const Matcher* const* matchers,
                  const BlockSymbols* symbols, int threads, int64_t* co) {
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    check_offsets(off, n, size, "offsets");
    if (nblocks < 0 || bs[0] != 0 || bs[nblocks] != n) {
        throw std::invalid_argument("block_starts must run from 0 to " + std::to_string(n) +
                                    ", one more than the tables");
    }
    check_offsets(bs, nblocks, n, "block_starts");
    if (matchers != nullptr) {
        for (int64_t b = 0; b < nblocks; ++b) {
            if (matchers[b] == nullptr) throw std::invalid_argument("a matcher is None");
        }
    }
    const Kernels& kern = kernels(active_isa());
    const int loop = encode_loop();
    std::unique_ptr<BlockTables[]> tables(new BlockTables[static_cast<size_t>(nblocks)]);
    // Chunks sized for the column, not the block: a column of many small blocks gets a chunk
    // a block (its lookups are built once, by the chunk that encodes it, while the other
    // threads encode other blocks), a column of one block kChunksPerThread chunks a thread.
    const int64_t want = std::clamp<int64_t>(
        (off[n] - off[0]) / (kChunksPerThread * std::max(threads, 1)), kMinChunkBytes,
        kMaxChunkBytes);
    std::vector<Chunk> chunks;
    for (int64_t b = 0; b < nblocks; ++b) {
        if (bs[b] == bs[b + 1]) continue;
        const size_t before = chunks.size();
        cut_block(off, bs[b], bs[b + 1], b, want, chunks);
        tables[b].chunks_left.store(static_cast<int64_t>(chunks.size() - before));
    }
    // each block's tables, built once (a matcher is ~280 KB, its lane table 60 KB: a few
    // microseconds each, but thousands of blocks would hold a GB)
    auto tables_of = [&](int64_t b) -> BlockTables& {
        BlockTables& t = tables[b];
        std::call_once(t.built, [&] {
            if (matchers != nullptr) {
                t.matcher = matchers[b];
            } else {
                t.owned.reset(new Matcher);
                const int64_t first = symbols->first[b];
                build_matcher(*t.owned, symbols->values + first, symbols->lengths + first,
                              symbols->first[b + 1] - first);
                t.matcher = t.owned.get();
            }
            t.lanes.reset(new LaneTable);
            if (!build_lane_table(*t.lanes, *t.matcher)) t.lanes.reset();
        });
        return t;
    };
    // each region: 2 bytes per input byte at worst, + the kernels' slack
    int64_t reserve = 0;
    for (Chunk& c : chunks) {
        c.region = reserve;
        reserve += 2 * (off[c.hi] - off[c.lo]) + kEncodeSlack;
    }
    Codes out;
    out.bytes.reset(static_cast<uint8_t*>(std::malloc(static_cast<size_t>(reserve + 8))));
    if (!out.bytes) throw std::bad_alloc();
    uint8_t* buf = out.bytes.get();
    auto encode = [&](Chunk& c, int64_t at) {
        BlockTables& t = tables_of(c.block);
        const int64_t end = kern.encode(data, size, off, c.lo, c.hi, *t.matcher, t.lanes.get(),
                                        loop, buf, at, co);
        if (t.chunks_left.fetch_sub(1) == 1) {  // the block's last chunk
            t.lanes.reset();
            t.owned.reset();
        }
        return end;
    };
    if (threads <= 1 || chunks.size() <= 1) {
        // one thread: each chunk right after the one before, so nothing moves afterwards
        int64_t next = 0;
        for (Chunk& c : chunks) {
            next = encode(c, next);
        }
        out.size = next;
        // shrinking a large block remaps its pages: no copy
        if (void* smaller = std::realloc(buf, static_cast<size_t>(std::max<int64_t>(next, 1)))) {
            out.bytes.release();
            out.bytes.reset(static_cast<uint8_t*>(smaller));
        }
        co[n] = out.size;
        return out;
    }
    parallel_for(static_cast<int64_t>(chunks.size()), threads, [&](int64_t k) {
        Chunk& c = chunks[k];
        c.size = encode(c, c.region) - c.region;
    });
    // Each chunk's codes copied to their place in a buffer of the codes' size, in parallel
    // (moving them down in place must go in order, on one thread: 0.21 s of a 0.58 s encode
    // of 1 GiB on 16 cores), each region's pages handed back once copied, so the peak stays
    // about the codes' size plus a chunk a thread.
    for (Chunk& c : chunks) {
        c.base = out.size;
        out.size += c.size;
    }
    Codes packed;
    packed.bytes.reset(static_cast<uint8_t*>(std::malloc(static_cast<size_t>(out.size + 8))));
    if (!packed.bytes) throw std::bad_alloc();
    packed.size = out.size;
    uint8_t* dst = packed.bytes.get();
    const bool release = reserve >= kReleaseBytes;
    parallel_for(static_cast<int64_t>(chunks.size()), threads, [&](int64_t k) {
        const Chunk& c = chunks[k];
        std::memcpy(dst + c.base, buf + c.region, static_cast<size_t>(c.size));
        for (int64_t i = c.lo; i < c.hi; ++i) co[i] += c.base - c.region;
        if (release) {  // the region's whole pages (the lane kernels write past c.size)
            release_pages(buf + c.region,
                          static_cast<size_t>(2 * (off[c.hi] - off[c.lo]) + kEncodeSlack));
        }
    });
    co[n] = packed.size;
    return packed;
}


}  // namespace

Codes encode_column(const uint8_t* data, int64_t size, const int64_t* off, int64_t n,
                    const int64_t* bs, int64_t nblocks, const Matcher* const* matchers,
                    int threads, int64_t* co) {
    return encode_with(data, size, off, n, bs, nblocks, matchers, nullptr, threads, co);
}

Codes encode_column(const uint8_t* data, int64_t size, const int64_t* off, int64_t n,
                    const int64_t* bs, int64_t nblocks, const BlockSymbols& symbols,
                    int threads, int64_t* co) {
    return encode_with(data, size, off, n, bs, nblocks, nullptr, &symbols, threads, co);
}

std::vector<int64_t> block_symbol_starts(const int64_t* counts, int64_t nblocks,
                                         const uint64_t* values, const uint8_t* lengths,
                                         int64_t nvalues) {
    std::vector<int64_t> first(static_cast<size_t>(std::max<int64_t>(nblocks, 0) + 1), 0);
    for (int64_t b = 0; b < nblocks; ++b) {
        if (counts[b] < 0 || counts[b] > kMaxSymbols) {
            throw std::invalid_argument("a symbol table holds 0-255 symbols, not " +
                                        std::to_string(counts[b]));
        }
        first[b + 1] = first[b] + counts[b];
    }
    if (first.back() != nvalues) {
        throw std::invalid_argument("symbol counts must add up to the symbols given");
    }
    for (int64_t b = 0; b < nblocks; ++b) {
        check_symbols(values + first[b], lengths + first[b], counts[b]);
    }
    return first;
}

}  // namespace fsstgpu_native
