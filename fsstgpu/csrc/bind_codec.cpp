// The bodies of module.cpp's encode and decode bindings (declared in bind_codec.h): the shape
// checks, the copies of the caller's split points and tables, the alloc callback's output. They
// live here, not in module.cpp, because module.cpp is compiled plain (no sanitizers) in the
// sanitizer test: what reads the caller's arrays must be in an instrumented source.
#include "bind_codec.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "codec.h"
#include "decode.h"
#include "matcher.h"

namespace py = pybind11;

namespace fsstgpu_native {
namespace bindings {

using bind::Array;
using bind::length;

namespace {

// The encoder's result as (codes, code_offsets) arrays; the codes keep their malloc'd buffer.
py::tuple as_arrays(Codes& codes, const Array<int64_t>& code_offsets) {
    uint8_t* bytes = codes.bytes.release();
    py::capsule owner(bytes, [](void* p) { std::free(p); });
    return py::make_tuple(Array<uint8_t>({codes.size}, {int64_t(1)}, bytes, owner),
                          code_offsets);
}

void check_tables(const Array<uint64_t>& packed, const Array<uint8_t>& lens, int ndim) {
    length(packed, "packed", ndim);
    length(lens, "lens", ndim);
    if (packed.shape(ndim - 1) != 256 || lens.shape(ndim - 1) != 256 ||
        packed.shape(0) != lens.shape(0)) {
        throw std::invalid_argument("symbol tables must be rows of 256 symbols and lengths");
    }
}

// alloc(size): the caller's output (pyarrow's memory pool, say): exactly size writable uint8
// bytes in C order, written in place, never a converted copy.
Array<uint8_t> output_of(const py::object& alloc, int64_t size) {
    py::object got = alloc(size);
    if (!py::isinstance<Array<uint8_t>>(got)) {
        throw std::invalid_argument("alloc must return a C-ordered uint8 numpy array");
    }
    Array<uint8_t> out = got.cast<Array<uint8_t>>();
    if (out.ptr() != got.ptr() || out.ndim() != 1 || out.shape(0) != size || !out.writeable()) {
        throw std::invalid_argument("alloc must return " + std::to_string(size) +
                                    " writable bytes");
    }
    return out;
}

// The column decode (decode.h) with string ends of type Off (or none: an empty array).
template <class Off>
py::tuple decode_column_as(const Array<uint8_t>& codes, const Splits& splits, int64_t nsc,
                           int64_t nso, const CompactTables& tables, int64_t total_out,
                           const Array<Off>& ends, bool check_ends,
                           const Array<int64_t>& code_offsets, bool utf8, int threads,
                           const py::object& alloc) {
    const int64_t nends = length(ends, "string_ends");
    const int64_t ncodes = length(codes, "codes");
    const int64_t noffs = length(code_offsets, "code_offsets");
    if (!nends && (check_ends || utf8 || noffs)) {
        throw std::invalid_argument("checking string ends or UTF-8 needs the string ends");
    }
    const Off* ends_p = nends ? ends.data() : nullptr;
    const int64_t* offs_p = noffs ? code_offsets.data() : nullptr;
    check_column<Off>(ncodes, splits, nsc, nso, tables, total_out, ends_p, nends, offs_p,
                      noffs ? noffs : -1, threads);
    // only once the splits say how much is coming
    Array<uint8_t> out = alloc.is_none() ? Array<uint8_t>(total_out) : output_of(alloc, total_out);
    uint8_t* dst = out.mutable_data();
    const StringEnds<Off> se{ends_p, nends - 1, offs_p, check_ends, utf8};
    int64_t bad;
    bad = bind::without_gil([&] {
        return decode_column<Off>(codes.data(), splits, tables, dst, total_out,
                                 nends ? &se : nullptr, threads);
    });
    return py::make_tuple(out, bad);
}

// A 1-D array of T as int64 values (an array of another dtype cast to T, as any Array<T>).
template <class T>
std::vector<int64_t> widened(const py::array& a) {
    const Array<T> typed = bind::as_array<T>(a, "split_table");
    return std::vector<int64_t>(typed.data(), typed.data() + length(typed, "split_table"));
}

}  // namespace

std::shared_ptr<Matcher> make_matcher(const Array<uint64_t>& packed,
                                      const Array<uint8_t>& lengths) {
    const int64_t n = length(packed, "packed");
    if (length(lengths, "lengths") != n) {
        throw std::invalid_argument("packed and lengths differ in length");
    }
    auto m = std::make_shared<Matcher>();  // build_matcher checks the symbols first
    build_matcher(*m, packed.data(), lengths.data(), n);
    return m;
}

py::tuple encode_blocks(const Array<uint8_t>& data, const Array<int64_t>& offsets,
                        const Array<int64_t>& block_starts,
                        const std::vector<std::shared_ptr<Matcher>>& matchers, int threads) {
    const int64_t size = length(data, "data");
    const int64_t n = length(offsets, "offsets") - 1;
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    const int64_t nblocks = length(block_starts, "block_starts") - 1;
    if (nblocks != static_cast<int64_t>(matchers.size())) {
        throw std::invalid_argument("block_starts must run from 0 to " + std::to_string(n) +
                                    ", one more than the tables");
    }
    std::vector<const Matcher*> raw;
    for (const auto& m : matchers) raw.push_back(m.get());
    Array<int64_t> code_offsets(n + 1);
    int64_t* co = code_offsets.mutable_data();
    Codes codes;
    codes = bind::without_gil([&] {
        return encode_column(data.data(), size, offsets.data(), n, block_starts.data(),
                              nblocks, raw.data(), threads, co);
    });
    return as_arrays(codes, code_offsets);
}

// encode_blocks with each block's table as symbols (values/lengths, counts[b] of them for
// block b): the lookup tables are built inside, in parallel, a few at a time.
py::tuple encode_symbols(const Array<uint8_t>& data, const Array<int64_t>& offsets,
                         const Array<int64_t>& block_starts, const Array<uint64_t>& values,
                         const Array<uint8_t>& lengths, const Array<int64_t>& counts,
                         int threads) {
    const int64_t size = length(data, "data");
    const int64_t n = length(offsets, "offsets") - 1;
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    const int64_t nblocks = length(block_starts, "block_starts") - 1;
    if (nblocks != length(counts, "counts")) {
        throw std::invalid_argument("block_starts must run from 0 to " + std::to_string(n) +
                                    ", one more than the tables");
    }
    const int64_t nvalues = length(values, "values");
    if (length(lengths, "lengths") != nvalues) {
        throw std::invalid_argument("values and lengths differ in length");
    }
    const std::vector<int64_t> first = block_symbol_starts(counts.data(), nblocks, values.data(),
                                                           lengths.data(), nvalues);
    const BlockSymbols symbols{values.data(), lengths.data(), first.data()};
    Array<int64_t> code_offsets(n + 1);
    int64_t* co = code_offsets.mutable_data();
    Codes codes;
    codes = bind::without_gil([&] {
        return encode_column(data.data(), size, offsets.data(), n, block_starts.data(),
                             nblocks, symbols, threads, co);
    });
    return as_arrays(codes, code_offsets);
}

int64_t decode_range(const Array<uint8_t>& codes, int64_t start, int64_t end,
                     const Array<uint64_t>& packed, const Array<uint8_t>& lens,
                     Array<uint8_t>& out, int64_t out_pos, int64_t out_end) {
    const int64_t ncodes = length(codes, "codes");
    const int64_t nout = length(out, "out");
    check_tables(packed, lens, 1);
    uint8_t* dst = out.mutable_data();
    return bind::without_gil([&] {
        return decode_one(codes.data(), ncodes, start, end, packed.data(), lens.data(), dst, nout,
                          out_pos, out_end);
    });
}

// The tables (objects with 1-D .packed uint64 and .lengths uint8 arrays of one length, at most
// kMaxSymbols) laid out as decode_all reads them (codec.py's compact_tables): a Python loop of
// np.concatenate over 4047 tables took 9 ms of a 16-core decode of 1 GiB, 1 us a table.
py::tuple compact_tables(const py::sequence& tables) {
    const int64_t nt = static_cast<int64_t>(py::len(tables));
    const py::str packed_name("packed"), lengths_name("lengths");
    std::vector<Array<uint64_t>> packed_of;
    std::vector<Array<uint8_t>> lengths_of;
    packed_of.reserve(static_cast<size_t>(nt));
    lengths_of.reserve(static_cast<size_t>(nt));
    Array<int64_t> first(nt + 1);
    int64_t* f = first.mutable_data();
    f[0] = 0;
    for (int64_t t = 0; t < nt; ++t) {
        const py::object table = tables[static_cast<size_t>(t)];
        const py::object p = table.attr(packed_name), l = table.attr(lengths_name);
        if (!py::isinstance<Array<uint64_t>>(p) || !py::isinstance<Array<uint8_t>>(l)) {
            throw std::invalid_argument("table " + std::to_string(t) +
                                        ": packed must be uint64 and lengths uint8 arrays");
        }
        packed_of.push_back(p.cast<Array<uint64_t>>());
        lengths_of.push_back(l.cast<Array<uint8_t>>());
        const int64_t count = length(lengths_of.back(), "lengths");
        if (length(packed_of.back(), "packed") != count || count > kMaxSymbols) {
            throw std::invalid_argument("table " + std::to_string(t) + " has " +
                                        std::to_string(count) + " lengths and " +
                                        std::to_string(packed_of.back().shape(0)) +
                                        " symbols (one each, at most 255)");
        }
        f[t + 1] = f[t] + count;
    }
    const int64_t total = f[nt];
    Array<uint64_t> packed(total + kMaxSymbols);  // zero words after the last table's symbols
    Array<uint8_t> lens({std::max<int64_t>(nt, 1), int64_t(256)});  // one row at least
    uint64_t* pk = packed.mutable_data();
    uint8_t* ln = lens.mutable_data();
    std::fill(pk + total, pk + total + kMaxSymbols, uint64_t(0));
    std::fill(ln, ln + 256 * std::max<int64_t>(nt, 1), uint8_t(0));
    for (int64_t t = 0; t < nt; ++t) {
        const int64_t count = f[t + 1] - f[t];
        std::copy(packed_of[t].data(), packed_of[t].data() + count, pk + f[t]);
        std::copy(lengths_of[t].data(), lengths_of[t].data() + count, ln + 256 * t);
    }
    return py::make_tuple(packed, first, lens);
}

py::tuple decode_all(const Array<uint8_t>& codes, const Array<int64_t>& split_codes,
                     const Array<int64_t>& split_out, const py::array& split_table,
                     const Array<uint64_t>& packed, const Array<int64_t>& first,
                     const Array<uint8_t>& lens, int64_t total_out, const py::array& ends,
                     bool check_ends, const Array<int64_t>& code_offsets, bool utf8,
                     int threads, const py::object& alloc) {
    const int64_t ntables = length(first, "first") - 1;
    length(lens, "lens", 2);
    if (ntables < 0 || lens.shape(1) != 256 || lens.shape(0) < std::max<int64_t>(ntables, 1)) {
        throw std::invalid_argument("tables must be ntables + 1 starts and rows of 256 lengths");
    }
    const CompactTables tables{packed.data(), length(packed, "packed"), first.data(), lens.data(),
                               ntables};
    // The split points are checked, then read again by the decode, with the GIL released and
    // after alloc (Python) ran: the caller's arrays (numpy views of a user's writable arrays,
    // say) could change in between, and a split end or table index changed after its check
    // sent the stores, the code reads or the table lookups outside their buffers. The decode
    // reads private copies (24 bytes a split of ~4 KiB of output), checked as they are.
    const int64_t nsc = length(split_codes, "split_codes"), nso = length(split_out, "split_out");
    const std::vector<int64_t> sc(split_codes.data(), split_codes.data() + nsc);
    const std::vector<int64_t> so(split_out.data(), split_out.data() + nso);
    // a column's own uint16 table indices are widened in this copy, not in an int64 copy made
    // first (8 bytes a split more at the peak: split_size=1 makes a split a code)
    const std::vector<int64_t> st = py::isinstance<Array<uint16_t>>(split_table)
                                        ? widened<uint16_t>(split_table)
                                        : widened<int64_t>(split_table);
    const int64_t nst = static_cast<int64_t>(st.size());
    const Splits splits{sc.data(), so.data(), st.data(), nst};
    if (py::isinstance<Array<int32_t>>(ends)) {
        return decode_column_as<int32_t>(codes, splits, nsc, nso, tables, total_out,
                                         ends.cast<Array<int32_t>>(), check_ends, code_offsets,
                                         utf8, threads, alloc);
    }
    return decode_column_as<int64_t>(codes, splits, nsc, nso, tables, total_out,
                                     ends.cast<Array<int64_t>>(), check_ends, code_offsets, utf8,
                                     threads, alloc);
}

template <class Off>
int64_t first_invalid(const Array<uint8_t>& data, const Array<Off>& offsets, int threads) {
    const int64_t size = length(data, "data");
    const int64_t n = length(offsets, "offsets") - 1;
    return bind::without_gil(
        [&] { return first_invalid_string(data.data(), size, offsets.data(), n, threads); });
}

template int64_t first_invalid<int32_t>(const Array<uint8_t>&, const Array<int32_t>&, int);
template int64_t first_invalid<int64_t>(const Array<uint8_t>&, const Array<int64_t>&, int);

}  // namespace bindings
}  // namespace fsstgpu_native
