// plan_chunks (chunk_plan.h): a chunk a task, each task's results kept apart and joined in
// chunk order at the end, so that the threads share nothing but the buffer's disjoint ranges.
#include "chunk_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>

#include "cpu.h"
#include "crc32.h"
#include "errors.h"
#include "page_headers.h"
#include "parallel.h"
#include "parquet_pages.h"

namespace fsstgpu_native {

namespace {

// Parquet's encodings and page types, by number (formats/page_plan.py's)
constexpr int64_t kPlain = 0, kPlainDictionary = 2, kRle = 3, kDeltaLength = 6, kDelta = 7,
                  kRleDictionary = 8;
constexpr int64_t kDataPage = 0, kDictionaryPage = 2;
constexpr int64_t kMaxPages = int64_t{1} << 20;  // (formats/raw_pages.py's MAX_PAGES)

bool dictionary_encoding(int64_t e) { return e == kPlainDictionary || e == kRleDictionary; }

bool leaf_takes(int64_t leaf, int64_t e) {  // (page_plan.py's _TAKES)
    switch (static_cast<Leaf>(leaf)) {
        case Leaf::codes: return e == kDeltaLength || e == kDelta || dictionary_encoding(e);
        case Leaf::lengths: return e == kPlain || dictionary_encoding(e);
        case Leaf::cuts: return e == kPlain;
        case Leaf::table: return dictionary_encoding(e);
    }
    return false;
}

// One chunk's results, or its error.
struct Planned {
    std::vector<int64_t> rows, crcs;
    std::vector<uint64_t> entries;
    int64_t dictionary[3] = {-1, -1, -1};
    PlanError error = PlanError::none;
    int64_t page = -1;
    std::string message;
};

// An error that ends a chunk's task: what Planned keeps of it.
struct Refusal {
    PlanError kind;
    int64_t page;
    std::string message;
};

[[noreturn]] void refuse(PlanError kind, int64_t page, std::string message) {
    throw Refusal{kind, page, std::move(message)};
}

// A chunk's result made its refusal.
void keep(Planned& out, Refusal&& r) {
    out.error = r.kind, out.page = r.page, out.message = std::move(r.message);
}

// The bytes a read task takes at most: a chunk is read in pieces of this, all of a window's
// chunks' pieces spread over the threads (a window of a few large codes chunks read a chunk a
// thread kept 2-3 of the device host's 16 cores busy: session 86's planning, 2.3x faster on 16
// threads than on one). On the H100 host (session 87), 16 threads reading a 102 MB file from
// the page cache a 32 MiB window at a time: 1 MiB pieces 5.8 GB/s, 2 MiB 9.4, 4 MiB 11.3 (each
// read is a costly system call there).
constexpr int64_t kReadPiece = int64_t{4} << 20;

// One piece of a chunk: bytes [at, at + size) of it.
struct Piece {
    int64_t chunk, at, size;
};

// Reads a piece; what a sequential read of its chunk would have refused, had it got here.
void read_piece(int fd, uint8_t* out, const ChunkSpec& s, const Piece& piece) {
    int64_t got = 0;
    while (got < piece.size) {
        const int64_t from = piece.at + got;
        const ssize_t n = pread(fd, out + from, static_cast<size_t>(piece.size - got),
                                static_cast<off_t>(s.file_at + from));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) refuse(PlanError::os, errno, std::strerror(errno));
        if (n == 0) {
            refuse(PlanError::short_file, -1, "the file ends " + std::to_string(s.size - from) +
                                                  " bytes into a column chunk");
        }
        got += n;
    }
}

uint32_t le32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;  // (little-endian hosts: the build is Linux x86-64 / aarch64)
}

// The dictionary page's sizes (codes) or values (lengths) as page_dictionaries.py read them.
void read_dictionary(const uint8_t* raw, const ChunkSpec& s, Planned& out) {
    const int64_t start = out.dictionary[0] - s.col_at, size = out.dictionary[1],
                  count = out.dictionary[2];
    const uint8_t* page = raw + start;
    if (s.leaf == static_cast<int64_t>(Leaf::lengths)) {
        const int64_t width = s.wide ? 8 : 4;
        if (count > size / width) {
            refuse(PlanError::corrupt, -2, std::to_string(count) + " values in " +
                                               std::to_string(size) + " bytes");
        }
        out.entries.resize(static_cast<size_t>(count));
        for (int64_t k = 0; k < count; ++k) {
            uint64_t v = 0;
            std::memcpy(&v, page + k * width, static_cast<size_t>(width));
            out.entries[static_cast<size_t>(k)] = v;
        }
        return;
    }
    // codes: each entry's size (its 4-byte length walked; none of its bytes copied), the count
    // checked first as the plain_byte_arrays binding checks it (4 bytes an entry at least)
    std::vector<int64_t> offsets;
    try {
        check_value_count(count, size / 4, "PLAIN byte arrays");
        offsets.resize(static_cast<size_t>(count) + 1);
        decode_plain_byte_arrays(page, size, count, offsets.data(), nullptr);
    } catch (const CorruptData& e) {
        refuse(PlanError::corrupt, -2, e.what());
    }
    out.entries.resize(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) {
        out.entries[static_cast<size_t>(k)] =
            static_cast<uint64_t>(offsets[static_cast<size_t>(k) + 1] -
                                  offsets[static_cast<size_t>(k)]);
    }
}

// A chunk's page headers (page_headers.h rows), parsed from its bytes and checked: a
// dictionary page only first, the data pages' values summing to the footer's.
std::vector<int64_t> chunk_pages(const uint8_t* raw, const ChunkSpec& s) {
    std::vector<int64_t> pages;
    try {
        pages = page_headers(raw, static_cast<size_t>(s.size), kMaxPages);
    } catch (const CorruptData& e) {
        refuse(PlanError::corrupt, -1, e.what());
    }
    const int64_t npages = static_cast<int64_t>(pages.size()) / kPageFields;
    int64_t found = 0;
    for (int64_t p = 0; p < npages; ++p) {
        const int64_t* page = pages.data() + p * kPageFields;
        if (page[0] == kDictionaryPage) {
            if (p) refuse(PlanError::corrupt, -1, "a dictionary page after the chunk's first page");
        } else {
            found += page[2];  // (each under 2**31: page_headers checked them)
        }
    }
    if (found != s.num_values) {
        refuse(PlanError::corrupt, -1, "the pages hold " + std::to_string(found) +
                                           " values, the footer says " +
                                           std::to_string(s.num_values));
    }
    return pages;
}

// A chunk whose bytes were read, pages parsed (chunk_pages) and CRCs compared (crc_failed: its
// first page whose CRC differs, or -1) planned, as page_plan._chunk_rows did it.
void finish_chunk(const uint8_t* raw, const ChunkSpec& s, int64_t chunk,
                  const std::vector<int64_t>& pages, int64_t crc_failed, Planned& out) {
    const int64_t npages = static_cast<int64_t>(pages.size()) / kPageFields;
    auto at = [&](int64_t p, int f) { return pages[static_cast<size_t>(p * kPageFields + f)]; };
    if (crc_failed >= 0) {
        refuse(PlanError::corrupt, -1, "page " + std::to_string(crc_failed) +
                                           " fails its CRC check (the file is damaged)");
    }
    for (int64_t p = 0; p < npages; ++p) {
        out.crcs.insert(out.crcs.end(), {chunk, at(p, 3), at(p, 4), at(p, 6)});
    }
    int64_t first = s.first_row;
    bool has_dictionary = false;
    for (int64_t p = 0; p < npages; ++p) {
        const int64_t type = at(p, 0), encoding = at(p, 1), count = at(p, 2), start = at(p, 3),
                      size = at(p, 4), body = s.col_at + start;
        if (size != at(p, 5)) {  // (the chunk's codec: none)
            refuse(PlanError::corrupt, p, "a stored page of " + std::to_string(size) +
                                              " bytes, its header says " +
                                              std::to_string(at(p, 5)));
        }
        if (type == kDictionaryPage) {
            if (encoding != kPlain && encoding != kPlainDictionary) {
                refuse(PlanError::unsupported, p,
                       "a dictionary page of encoding " + std::to_string(encoding));
            }
            out.dictionary[0] = body, out.dictionary[1] = size, out.dictionary[2] = count;
            has_dictionary = true;
            continue;
        }
        if (!leaf_takes(s.leaf, encoding)) {
            refuse(PlanError::unsupported, p, "values of encoding " + std::to_string(encoding));
        }
        const int64_t end = body + size;
        int64_t levels_at, levels_size;
        if (type == kDataPage) {
            if (at(p, 9) != kRle) {
                refuse(PlanError::unsupported, p,
                       "levels of encoding " + std::to_string(at(p, 9)));
            }
            if (size < 4) {
                refuse(PlanError::corrupt, p, "a page of " + std::to_string(size) +
                                                  " bytes has no levels");
            }
            const int64_t nlevels = le32(raw + start);
            if (nlevels > size - 4) {
                refuse(PlanError::corrupt, p, std::to_string(nlevels) +
                                                  " bytes of levels in a page of " +
                                                  std::to_string(size));
            }
            levels_at = body + 4, levels_size = nlevels;
        } else {
            if (at(p, 10)) refuse(PlanError::corrupt, p, "repetition levels in a top-level column");
            levels_at = body, levels_size = at(p, 7);
        }
        int64_t values = levels_at + levels_size, width = 0;
        if (dictionary_encoding(encoding)) {
            if (values >= end) refuse(PlanError::corrupt, p, "no room for the indices' bit width");
            if (!has_dictionary) {
                refuse(PlanError::corrupt, p, "dictionary indices without a dictionary page");
            }
            width = raw[values - s.col_at];
            if (width > 32) {
                refuse(PlanError::corrupt, p,
                       "dictionary indices of " + std::to_string(width) + " bits");
            }
            values += 1;
        }
        out.rows.insert(out.rows.end(), {levels_at, levels_size, values, end, count, first,
                                         encoding, width, s.group, chunk, p});
        first += count;  // (the rows end at first_row + num_values: `found` was checked)
    }
    if (has_dictionary && (s.leaf == static_cast<int64_t>(Leaf::codes) ||
                           s.leaf == static_cast<int64_t>(Leaf::lengths))) {
        read_dictionary(raw, s, out);
    }
}

}  // namespace

ChunkPlans plan_chunks(int fd, uint8_t* buffer, const std::vector<ChunkSpec>& specs,
                       bool check_crc, int threads) {
    // In phases, each spread over the threads, a chunk dropping out at its first refusal, which
    // each phase meets in the order one chunk's sequential plan would: its bytes read (pieces
    // of every chunk), its page headers parsed and checked, its pages' CRCs (a task a page of
    // every chunk), then the rest of its plan.
    const int64_t n = static_cast<int64_t>(specs.size());
    std::vector<Planned> planned(static_cast<size_t>(n));
    auto task = [&](int64_t c, auto&& step) {
        Planned& out = planned[static_cast<size_t>(c)];
        try {
            step(specs[static_cast<size_t>(c)], out);
        } catch (Refusal& r) {
            keep(out, std::move(r));
        }
    };
    std::vector<Piece> pieces;
    for (int64_t c = 0; c < n; ++c) {
        for (int64_t at = 0, size = specs[static_cast<size_t>(c)].size; at < size;
             at += kReadPiece) {
            pieces.push_back({c, at, std::min(kReadPiece, size - at)});
        }
    }
    std::vector<std::optional<Refusal>> refused(pieces.size());  // (a piece's, kept apart)
    parallel_for(static_cast<int64_t>(pieces.size()), threads, [&](int64_t k) {
        const Piece& piece = pieces[static_cast<size_t>(k)];
        const ChunkSpec& s = specs[static_cast<size_t>(piece.chunk)];
        try {
            read_piece(fd, buffer + s.buf_at, s, piece);
        } catch (Refusal& r) {
            refused[static_cast<size_t>(k)] = std::move(r);
        }
    });
    for (size_t k = 0; k < pieces.size(); ++k) {  // (a chunk's first piece refused: its error)
        Planned& out = planned[static_cast<size_t>(pieces[k].chunk)];
        if (out.error == PlanError::none && refused[k]) keep(out, std::move(*refused[k]));
    }
    std::vector<std::vector<int64_t>> pages(static_cast<size_t>(n));
    parallel_for(n, threads, [&](int64_t c) {
        if (planned[static_cast<size_t>(c)].error != PlanError::none) return;
        task(c, [&](const ChunkSpec& s, Planned&) {
            pages[static_cast<size_t>(c)] = chunk_pages(buffer + s.buf_at, s);
        });
    });
    std::vector<std::pair<int64_t, int64_t>> stored;  // (chunk, page) of each stored CRC
    for (int64_t c = 0; check_crc && c < n; ++c) {
        if (planned[static_cast<size_t>(c)].error != PlanError::none) continue;
        const std::vector<int64_t>& rows = pages[static_cast<size_t>(c)];
        for (size_t p = 0; p * kPageFields < rows.size(); ++p) {
            if (rows[p * kPageFields + 6] >= 0) stored.emplace_back(c, static_cast<int64_t>(p));
        }
    }
    const bool clmul = active_isa() != Isa::scalar;  // (FSSTGPU_ISA=scalar: the table CRC)
    std::vector<uint8_t> crc_ok(stored.size());
    parallel_for(static_cast<int64_t>(stored.size()), threads, [&](int64_t k) {
        const auto [c, p] = stored[static_cast<size_t>(k)];
        const int64_t* page = pages[static_cast<size_t>(c)].data() + p * kPageFields;
        const uint8_t* raw = buffer + specs[static_cast<size_t>(c)].buf_at;
        crc_ok[static_cast<size_t>(k)] =
            crc32(0, raw + page[3], static_cast<size_t>(page[4]), clmul) ==
            static_cast<uint32_t>(page[6]);
    });
    std::vector<int64_t> crc_failed(static_cast<size_t>(n), -1);  // (a chunk's first)
    for (size_t k = stored.size(); k-- > 0;) {
        if (!crc_ok[k]) crc_failed[static_cast<size_t>(stored[k].first)] = stored[k].second;
    }
    parallel_for(n, threads, [&](int64_t c) {
        if (planned[static_cast<size_t>(c)].error != PlanError::none) return;
        task(c, [&](const ChunkSpec& s, Planned& out) {
            finish_chunk(buffer + s.buf_at, s, c, pages[static_cast<size_t>(c)],
                         crc_failed[static_cast<size_t>(c)], out);
        });
    });
    ChunkPlans plans;
    plans.entry_at.push_back(0);
    for (int64_t c = 0; c < n; ++c) {
        Planned& p = planned[static_cast<size_t>(c)];
        if (p.error != PlanError::none) {  // (the first in chunk order; those after it dropped)
            plans.error_chunk = c, plans.error = p.error, plans.error_page = p.page;
            plans.message = std::move(p.message);
            break;
        }
        plans.rows.insert(plans.rows.end(), p.rows.begin(), p.rows.end());
        plans.crcs.insert(plans.crcs.end(), p.crcs.begin(), p.crcs.end());
        plans.dictionaries.insert(plans.dictionaries.end(), p.dictionary, p.dictionary + 3);
        plans.entries.insert(plans.entries.end(), p.entries.begin(), p.entries.end());
        plans.entry_at.push_back(static_cast<int64_t>(plans.entries.size()));
    }
    return plans;
}

}  // namespace fsstgpu_native
