// A Parquet leaf column chunk decoded into Arrow's layout (parquet_leaf.h).
#include "parquet_leaf.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "errors.h"
#include "parquet_pages.h"

namespace fsstgpu_native {

namespace {

constexpr int kPlain = 0, kPlainDictionary = 2, kRle = 3, kDeltaLength = 6, kDeltaBytes = 7,
              kRleDictionary = 8;

[[noreturn]] void unsupported(const std::string& what) { throw std::domain_error(what); }

int bit_width(int v) {
    int w = 0;
    while (v >> w) ++w;
    return w;
}

// Byte arrays of one run (count of them) in `encoding` appended to offsets/data (offsets'
// last entry the running end); returns the bytes read. With `in_place` (not null) a
// DELTA_LENGTH_BYTE_ARRAY run's bytes are not copied: *in_place is where they start in p.
// Without `copy_plain` a PLAIN run's bytes are not copied either (only their offsets: value k
// lies at 4 * (k + 1) + its offset in p).
int64_t append_bytes(const uint8_t* p, int64_t size, int encoding, int64_t count,
                     std::vector<int64_t>& offsets, std::vector<uint8_t>& data,
                     int64_t* in_place = nullptr, bool copy_plain = true) {
    const int64_t base = static_cast<int64_t>(data.size());
    // (a PLAIN array takes 4 bytes at least; the callers' other counts are rows of a row
    // group: bounded before anything is allocated)
    if (count < 0 || (encoding == kPlain && count > size / 4)) {
        throw CorruptData(std::to_string(count) + " byte arrays cannot be in " +
                          std::to_string(size) + " bytes");
    }
    std::vector<int64_t> offs(static_cast<size_t>(count + 1));
    int64_t used = 0;
    if (encoding == kPlain && !copy_plain) {
        used = decode_plain_byte_arrays(p, size, count, offs.data(), nullptr);
    } else if (encoding == kPlain) {
        data.resize(static_cast<size_t>(base + size));  // (at most the page's bytes)
        used = decode_plain_byte_arrays(p, size, count, offs.data(), data.data() + base);
        data.resize(static_cast<size_t>(base + offs[static_cast<size_t>(count)]));
    } else if (encoding == kDeltaLength) {
        const int64_t start = decode_delta_length_offsets(p, size, count, offs.data(),
                                                          "DELTA_LENGTH_BYTE_ARRAY data");
        const int64_t total = offs[static_cast<size_t>(count)];
        if (in_place) {
            *in_place = start;
        } else {
            data.insert(data.end(), p + start, p + start + total);
        }
        used = start + total;
    } else if (encoding == kDeltaBytes) {
        std::vector<int64_t> prefix(static_cast<size_t>(count));
        std::vector<int64_t> suffix(static_cast<size_t>(count + 1));
        int64_t out_size = 0;
        const int64_t start = decode_delta_byte_array_runs(p, size, count, prefix.data(),
                                                           suffix.data(), &out_size);
        data.resize(static_cast<size_t>(base + out_size));
        const int64_t wrote = decode_delta_strings(prefix.data(), suffix.data(), p + start, count,
                                                   offs.data(), data.data() + base, out_size);
        data.resize(static_cast<size_t>(base + wrote));
        used = start + suffix[static_cast<size_t>(count)];
    } else {
        unsupported("byte arrays in encoding " + std::to_string(encoding));
    }
    const int64_t end = offsets.back();
    for (int64_t k = 1; k <= count; ++k) offsets.push_back(end + offs[static_cast<size_t>(k)]);
    return used;
}

// Where each row's bytes start (LeafColumn::starts) from the runs: a non-empty value lies
// inside one run (a page's values are one run, or a run each; merging joins whole values).
void row_starts(LeafColumn& col, const int64_t* body_starts, size_t pages) {
    const int64_t rows = col.rows;
    col.starts.assign(static_cast<size_t>(rows), 0);
    const int64_t* run = col.regions.data();
    const size_t runs = col.regions.size() / 3;
    size_t r = 0;
    int64_t run_lo = 0;  // the values' byte where run r starts
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t lo = col.offsets[static_cast<size_t>(row)];
        const int64_t hi = col.offsets[static_cast<size_t>(row + 1)];
        if (hi == lo) continue;
        while (r < runs && run_lo + run[3 * r + 2] <= lo) run_lo += run[3 * r++ + 2];
        if (r == runs || hi > run_lo + run[3 * r + 2]) {
            throw std::logic_error("decode_leaf: a value outside its page's runs");
        }
        const int64_t source = run[3 * r], at = run[3 * r + 1] + (lo - run_lo);
        if (source >= static_cast<int64_t>(pages) ||
            (source >= 0 && (body_starts[source] < 0 ||
                             body_starts[source] > INT64_MAX - at))) {
            throw std::invalid_argument("body_starts: a page whose values stay in place has "
                                        "no start in the chunk (or one past 2**63)");
        }
        col.starts[static_cast<size_t>(row)] = source < 0 ? -1 - at : body_starts[source] + at;
    }
}

}  // namespace

LeafColumn decode_leaf(const std::vector<LeafPage>& pages, int physical, int max_def,
                       bool keep_indices, int64_t max_rows, bool in_place,
                       const int64_t* body_starts) {
    if (max_def < 0 || max_def > 2) unsupported("definition levels above 2");
    if (physical < kLeafBytes || physical > kLeafInt64) unsupported("a physical type");
    const int width = bit_width(max_def);
    const int item = physical == kLeafInt32 ? 4 : 8;
    LeafColumn col;
    std::vector<int64_t> dict_ints;
    bool have_dict = false;
    std::vector<int64_t> values_offsets{0};  // bytes of the present values, page after page
    std::vector<uint8_t> values_data;
    std::vector<int64_t> values_ints;
    std::vector<uint32_t> values_idx;
    std::vector<uint32_t> lv;
    // (sized for the chunk once: appending a row at a time cost ~10 ns a row). A page's
    // values are bounded by its bytes (2**24 a byte: a run's varint of 3 bytes says 2**21),
    // so forged counts are refused before anything is allocated for them
    int64_t total = 0;
    for (const LeafPage& page : pages) {
        if (page.kind == kDictionaryPage) continue;
        if (page.num_values < 0 || page.size < 0 ||
            page.num_values > (page.size + 1) * (int64_t{1} << 24) ||
            page.num_values > max_rows - total) {
            throw CorruptData("a page of " + std::to_string(page.size) + " bytes cannot hold " +
                              std::to_string(page.num_values) + " of the row group's " +
                              std::to_string(max_rows) + " rows");
        }
        total += page.num_values;
    }
    col.levels.resize(static_cast<size_t>(total));
    int64_t filled = 0;
    values_offsets.reserve(static_cast<size_t>(total) + 1);
    // with in_place, the bytes of the present values, page after page: each run
    // (source page or -1 for data, start, bytes)
    // (a run that continues the last one in the same body extends it)
    auto region = [&](int64_t source, int64_t start, int64_t bytes) {
        if (!in_place || !bytes) return;
        const size_t n = col.regions.size();
        if (n && col.regions[n - 3] == source && col.regions[n - 2] + col.regions[n - 1] == start) {
            col.regions[n - 1] += bytes;
            return;
        }
        col.regions.push_back(source);
        col.regions.push_back(start);
        col.regions.push_back(bytes);
    };
    int64_t dict_page = -1;  // (the dictionary page's index: in_place regions point into it)
    for (size_t page_index = 0; page_index < pages.size(); ++page_index) {
        const LeafPage& page = pages[page_index];
        if (page.size < 0 || page.num_values < 0) throw CorruptData("a page of negative size");
        if (page.kind == kDictionaryPage) {
            if (have_dict) throw CorruptData("a second dictionary page");
            if (page.encoding != kPlain && page.encoding != kPlainDictionary) {
                unsupported("a dictionary page in encoding " + std::to_string(page.encoding));
            }
            have_dict = true;
            dict_page = static_cast<int64_t>(page_index);
            if (physical == kLeafBytes) {
                // (in place the values stay in this page: only where its entries lie is
                // wanted, unless the dictionary itself is returned)
                col.dict_offsets.assign(1, 0);
                append_bytes(page.body, page.size, kPlain, page.num_values, col.dict_offsets,
                             col.dict_data, nullptr, keep_indices || !in_place);
            } else {
                if (page.num_values > page.size / item) {
                    throw CorruptData("a dictionary page shorter than its values");
                }
                dict_ints.resize(static_cast<size_t>(page.num_values));
                for (int64_t k = 0; k < page.num_values; ++k) {
                    if (item == 4) {
                        int32_t v;
                        std::memcpy(&v, page.body + 4 * k, 4);
                        dict_ints[static_cast<size_t>(k)] = v;
                    } else {
                        std::memcpy(&dict_ints[static_cast<size_t>(k)], page.body + 8 * k, 8);
                    }
                }
            }
            continue;
        }
        // the definition levels, then the values' bytes
        const int64_t n = page.num_values;
        if (n > max_rows - filled) {
            throw CorruptData("the pages hold more values than the row group's " +
                              std::to_string(max_rows) + " rows");
        }
        const uint8_t* p = page.body;
        int64_t left = page.size;
        lv.assign(static_cast<size_t>(n), 0);
        if (page.kind == kDataV2) {
            if (page.rep_size < 0 || page.levels_size < page.rep_size ||
                page.levels_size > left) {
                throw CorruptData("a version 2 page's levels outside it");
            }
            if (width) {
                decode_rle_hybrid(p + page.rep_size, page.levels_size - page.rep_size, width, n,
                                  lv.data());
            }
            p += page.levels_size;
            left -= page.levels_size;
        } else if (width) {
            if (page.levels_encoding != kRle) unsupported("definition levels not RLE");
            if (left < 4) throw CorruptData("a page ends inside its levels' length");
            uint32_t size;
            std::memcpy(&size, p, 4);
            if (size > static_cast<uint64_t>(left - 4)) {
                throw CorruptData("definition levels run past their page");
            }
            decode_rle_hybrid(p + 4, size, width, n, lv.data());
            p += 4 + static_cast<int64_t>(size);
            left -= 4 + static_cast<int64_t>(size);
        }
        int64_t count = 0;
        uint32_t highest = 0;
        uint8_t* levels = col.levels.data() + filled;
        for (int64_t k = 0; k < n; ++k) {
            const uint32_t level = lv[static_cast<size_t>(k)];
            highest = level > highest ? level : highest;
            levels[k] = static_cast<uint8_t>(level);
            count += level == static_cast<uint32_t>(max_def);
        }
        if (highest > static_cast<uint32_t>(max_def)) {
            throw CorruptData("a definition level over the column's " + std::to_string(max_def));
        }
        filled += n;
        col.present += count;
        if (page.encoding == kRleDictionary || page.encoding == kPlainDictionary) {
            if (!have_dict) throw CorruptData("dictionary indices without a dictionary");
            const int64_t dict_size = physical == kLeafBytes
                                          ? static_cast<int64_t>(col.dict_offsets.size()) - 1
                                          : static_cast<int64_t>(dict_ints.size());
            const size_t at = values_idx.size();
            values_idx.resize(at + static_cast<size_t>(count));
            if (count) {
                if (left < 1) throw CorruptData("a page ends before its indices' bit width");
                if (p[0] > 32) throw CorruptData("dictionary indices of over 32 bits");
                decode_rle_hybrid(p + 1, left - 1, p[0], count, values_idx.data() + at);
            }
            for (size_t k = at; k < values_idx.size(); ++k) {
                if (values_idx[k] >= static_cast<uint64_t>(dict_size)) {
                    throw CorruptData("a dictionary index past its " + std::to_string(dict_size) +
                                      " values");
                }
            }
            if (keep_indices) continue;  // (the indices kept: a table's index a row)
            if (physical == kLeafBytes) {  // (sized first, then copied: no growth a row)
                const int64_t from = static_cast<int64_t>(values_data.size());
                const int64_t* dict = col.dict_offsets.data();
                int64_t end = values_offsets.back();  // (the values' running end: with
                const int64_t first = end;            // in_place, past bytes not in data)
                for (size_t k = at; k < values_idx.size(); ++k) {
                    end += dict[values_idx[k] + 1] - dict[values_idx[k]];
                    values_offsets.push_back(end);
                }
                if (in_place) {  // each value where the dictionary page holds it (a PLAIN
                    // entry: its 4-byte length, then its bytes): nothing copied
                    col.regions.reserve(col.regions.size() + 3 * (values_idx.size() - at));
                    for (size_t k = at; k < values_idx.size(); ++k) {
                        const int64_t i = values_idx[k];
                        region(dict_page, dict[i] + 4 * (i + 1), dict[i + 1] - dict[i]);
                    }
                    values_idx.resize(at);
                    continue;
                }
                size_t to = values_data.size();
                values_data.resize(static_cast<size_t>(from + (end - first)));
                for (size_t k = at; k < values_idx.size(); ++k) {
                    const int64_t a = dict[values_idx[k]], b = dict[values_idx[k] + 1];
                    if (b > a) std::memcpy(values_data.data() + to, col.dict_data.data() + a,
                                           static_cast<size_t>(b - a));
                    to += static_cast<size_t>(b - a);
                }
                region(-1, from, static_cast<int64_t>(values_data.size()) - from);
            } else {
                values_ints.reserve(values_ints.size() + (values_idx.size() - at));
                for (size_t k = at; k < values_idx.size(); ++k) {
                    values_ints.push_back(dict_ints[values_idx[k]]);
                }
            }
            values_idx.resize(at);  // (materialised: the indices are not kept)
        } else {
            // (a leaf whose indices are kept takes only dictionary-encoded pages)
            if (keep_indices) unsupported("values beside dictionary indices");
            if (physical == kLeafBytes) {
                const int64_t from = static_cast<int64_t>(values_data.size());
                const int64_t end = values_offsets.back();
                int64_t start = -1;
                append_bytes(p, left, page.encoding, count, values_offsets, values_data,
                             in_place && page.encoding == kDeltaLength ? &start : nullptr);
                if (start >= 0) {  // the page's bytes where they are
                    region(static_cast<int64_t>(page_index), (p - page.body) + start,
                           values_offsets.back() - end);
                } else {
                    region(-1, from, static_cast<int64_t>(values_data.size()) - from);
                }
            } else if (page.encoding == kPlain) {
                if (count > left / item) throw CorruptData("PLAIN values run past their page");
                values_ints.reserve(values_ints.size() + static_cast<size_t>(count));
                for (int64_t k = 0; k < count; ++k) {
                    if (item == 4) {
                        int32_t v;
                        std::memcpy(&v, p + 4 * k, 4);
                        values_ints.push_back(v);
                    } else {
                        int64_t v;
                        std::memcpy(&v, p + 8 * k, 8);
                        values_ints.push_back(v);
                    }
                }
            } else {
                unsupported("ints in encoding " + std::to_string(page.encoding));
            }
        }
    }
    // spread over the rows
    col.levels.resize(static_cast<size_t>(filled));
    const int64_t rows = filled;
    col.rows = rows;
    const uint8_t top = static_cast<uint8_t>(max_def);
    col.indexed = keep_indices;
    if (keep_indices && !have_dict && rows) unsupported("indices kept without a dictionary");
    if (col.indexed) {
        col.indices.assign(static_cast<size_t>(rows), 0);
        size_t j = 0;
        for (int64_t r = 0; r < rows; ++r) {
            if (col.levels[static_cast<size_t>(r)] == top) {
                col.indices[static_cast<size_t>(r)] = values_idx[j++];
            }
        }
    }
    if (col.indexed) {
        return col;
    } else if (physical == kLeafBytes) {
        col.offsets.assign(static_cast<size_t>(rows + 1), 0);
        size_t j = 0;
        for (int64_t r = 0; r < rows; ++r) {
            int64_t add = 0;
            if (col.levels[static_cast<size_t>(r)] == top) {
                add = values_offsets[j + 1] - values_offsets[j];
                ++j;
            }
            col.offsets[static_cast<size_t>(r + 1)] = col.offsets[static_cast<size_t>(r)] + add;
        }
        col.data.swap(values_data);
        if (in_place && body_starts) row_starts(col, body_starts, pages.size());
    } else {
        col.ints.assign(static_cast<size_t>(rows), 0);
        size_t j = 0;
        for (int64_t r = 0; r < rows; ++r) {
            if (col.levels[static_cast<size_t>(r)] == top) {
                col.ints[static_cast<size_t>(r)] = values_ints[j++];
            }
        }
    }
    return col;
}

}  // namespace fsstgpu_native
