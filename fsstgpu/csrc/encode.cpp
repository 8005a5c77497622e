// Parallel encoding of a column: strings cut into chunks (never across a block), claimed in
// order by the pool's threads. A thread encodes a chunk into a scratch buffer of its own (reused
// chunk after chunk, so its pages stay mapped and its lines in cache) and copies the codes to
// their place in the column's buffer once every earlier chunk's size is known; it keeps a few
// chunks pending meanwhile, so it rarely waits. The column's buffer is reserved at the worst
// case (2 bytes per input byte) and shrunk after: only the codes' pages are ever touched, once
// (an earlier design encoded into per-chunk regions of one large buffer and copied them to a
// second one, handing the regions' pages back with madvise: every page faulted twice, and each
// madvise shot down the TLBs of every core running the pool; BENCHMARKS.md section 22). One
// thread: chunk after chunk straight into the column's buffer. Strings encode independently, so
// the result does not depend on the cuts or the thread count. A block's lookup tables are built
// by the first of its chunks to run and freed after its last.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
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
constexpr int kPendingChunks = 3;  // encoded chunks a thread holds before it waits

struct Chunk {
    int64_t lo, hi;  // strings
    int64_t block;
    int64_t room = 0;  // its worst case: 2 bytes per input byte + the kernels' slack
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

// The chunks encoded on `threads` and their codes laid end to end in `buf`, in chunk order;
// returns the codes' size. encode(chunk, into, at) writes a chunk's codes from into[at] (and its
// strings' code offsets, relative to `into`) and returns their end.
template <typename Encode>
int64_t place_in_order(std::vector<Chunk>& chunks, int threads, uint8_t* buf, int64_t* co,
                       Encode& encode) {
    const int64_t nchunks = static_cast<int64_t>(chunks.size());
    std::vector<int64_t> sizes(static_cast<size_t>(nchunks), -1);
    std::vector<int64_t> base(static_cast<size_t>(nchunks) + 1, 0);
    std::mutex mu;
    std::condition_variable placed;  // `known` grew, or an error
    int64_t known = 0;  // chunks 0:known have their sizes, so chunks 0:known+1 their bases
    std::atomic<int64_t> next{0};
    std::exception_ptr error;
    struct Held {
        int64_t k;
        std::unique_ptr<uint8_t, FreeBytes> bytes;
        int64_t room;
    };
    auto worker = [&](int64_t) {
        std::deque<Held> pending;  // encoded, in claim order (so in chunk order)
        std::vector<Held> spare;
        // copy out the pending chunks whose bases are known; wait for the oldest if `wait`
        auto place = [&](bool wait) {
            while (!pending.empty()) {
                const int64_t k = pending.front().k;
                int64_t at;
                {
                    std::unique_lock<std::mutex> lock(mu);
                    if (wait) placed.wait(lock, [&] { return known >= k || error; });
                    if (error) return false;
                    if (known < k) return true;
                    at = base[static_cast<size_t>(k)];
                }
                Held h = std::move(pending.front());
                pending.pop_front();
                const Chunk& c = chunks[static_cast<size_t>(k)];
                std::memcpy(buf + at, h.bytes.get(), static_cast<size_t>(sizes[k]));
                for (int64_t i = c.lo; i < c.hi; ++i) co[i] += at;
                spare.push_back(std::move(h));
                wait = false;
            }
            return true;
        };
        try {
            for (;;) {
                if (!place(static_cast<int>(pending.size()) >= kPendingChunks)) return;
                const int64_t k = next.fetch_add(1, std::memory_order_relaxed);
                if (k >= nchunks) break;
                Chunk& c = chunks[static_cast<size_t>(k)];
                Held h{k, nullptr, 0};
                if (!spare.empty()) {
                    h = std::move(spare.back());
                    spare.pop_back();
                    h.k = k;
                }
                if (h.room < c.room) {  // grown to the largest chunk seen (a long string's)
                    h.bytes.reset(static_cast<uint8_t*>(std::malloc(static_cast<size_t>(c.room))));
                    if (!h.bytes) throw std::bad_alloc();
                    h.room = c.room;
                }
                const int64_t end = encode(c, h.bytes.get(), 0);
                {
                    std::lock_guard<std::mutex> lock(mu);
                    sizes[static_cast<size_t>(k)] = end;
                    const int64_t before = known;
                    while (known < nchunks && sizes[static_cast<size_t>(known)] >= 0) {
                        base[static_cast<size_t>(known) + 1] =
                            base[static_cast<size_t>(known)] + sizes[static_cast<size_t>(known)];
                        ++known;
                    }
                    if (known != before) placed.notify_all();
                }
                pending.push_back(std::move(h));
            }
            while (!pending.empty()) {
                if (!place(true)) return;
            }
        } catch (...) {
            std::lock_guard<std::mutex> lock(mu);
            if (!error) error = std::current_exception();
            next.store(nchunks, std::memory_order_relaxed);
            placed.notify_all();
        }
    };
    parallel_for(std::min<int64_t>(std::max(threads, 1), nchunks), threads, worker);
    if (error) std::rethrow_exception(error);
    return base[static_cast<size_t>(nchunks)];
}

Codes encode_with(const uint8_t* data, int64_t size, const int64_t* off, int64_t n,
                  const int64_t* bs, int64_t nblocks, const Matcher* const* matchers,
                  const BlockSymbols* symbols, int threads, int64_t* co) {
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    check_offsets(off, n, size, "offsets", threads);
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
        (off[n] - off[0]) / (kChunksPerThread * int64_t(std::max(threads, 1))), kMinChunkBytes,
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
    int64_t reserve = 0;
    for (Chunk& c : chunks) {
        c.room = 2 * (off[c.hi] - off[c.lo]) + kEncodeSlack;
        reserve += c.room - kEncodeSlack;
    }
    reserve += kEncodeSlack;
    Codes out;
    out.bytes.reset(static_cast<uint8_t*>(std::malloc(static_cast<size_t>(reserve + 8))));
    if (!out.bytes) throw std::bad_alloc();
    uint8_t* buf = out.bytes.get();
    auto encode = [&](Chunk& c, uint8_t* into, int64_t at) {
        BlockTables& t = tables_of(c.block);
        const int64_t end = kern.encode(data, size, off, c.lo, c.hi, *t.matcher, t.lanes.get(),
                                        loop, into, at, co);
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
            next = encode(c, buf, next);
        }
        out.size = next;
    } else {
        out.size = place_in_order(chunks, threads, buf, co, encode);
    }
    // shrinking a large block remaps its pages: no copy
    if (void* smaller = std::realloc(buf, static_cast<size_t>(out.size + 8))) {
        out.bytes.release();
        out.bytes.reset(static_cast<uint8_t*>(smaller));
    }
    co[n] = out.size;
    return out;
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
