// fsstgpu._native's bindings of scan.h, checks_column.h, layout.h, splits.h and storage_rows.h
// (fsstgpu/native/scan.py is their face): shapes checked here, the GIL dropped around the loops.
#include "bind_scan.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "bind_arrays.h"
#include "checks_column.h"
#include "layout.h"
#include "scan.h"
#include "splits.h"
#include "storage_rows.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

using bind::Array;
template <class T>
using Maybe = std::optional<Array<T>>;

void need(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
}


py::tuple walk(const Array<uint8_t>& codes, const Array<int64_t>& block_starts,
               const Array<uint8_t>& symlen, const Maybe<int64_t>& code_offsets,
               const Maybe<int64_t>& lengths, int mode, int64_t cut_size, int64_t max_cuts,
               const Maybe<int64_t>& split_codes, const Maybe<int64_t>& split_out,
               int threads) {
    WalkInput in{};
    in.codes = codes.data();
    in.ncodes = bind::length(codes, "codes");
    in.mode = mode;
    need(mode >= kCheck && mode <= kLong, "mode must be CHECK, OFFSETS, LENGTHS or LONG");
    if (mode == kOffsets) {
        need(bool(lengths), "OFFSETS needs the lengths");
        in.n = bind::length(*lengths, "lengths");
    } else {
        need(bool(code_offsets), "the walk needs code_offsets but in OFFSETS mode");
        in.n = bind::length(*code_offsets, "code_offsets") - 1;
        need(in.n >= 0, "code_offsets must hold n + 1 entries");
        in.code_offsets = code_offsets->data();
        if (mode != kLengths) {
            need(bool(lengths) && bind::length(*lengths, "lengths") == in.n,
                 "lengths must hold one entry a string");
        }
    }
    if (mode != kLengths) in.lengths = lengths->data();
    in.nblocks = bind::length(block_starts, "block_starts") - 1;
    need(in.nblocks >= 0, "block_starts must hold nblocks + 1 entries");
    in.block_starts = block_starts.data();
    need(symlen.ndim() == 2 && symlen.shape(1) == 256 && symlen.shape(0) >= in.nblocks,
         "symlen must be a row of 256 lengths a block");
    in.symlen = symlen.data();
    in.cut_size = cut_size;
    in.max_cuts = max_cuts;
    need(bool(split_codes) == bool(split_out), "split_codes and split_out come together");
    if (split_codes) {
        const int64_t k = bind::length(*split_codes, "split_codes");
        need(bind::length(*split_out, "split_out") == k,
             "split_codes and split_out differ in length");
        in.nsplits = std::max<int64_t>(k - 1, 0);
        in.split_codes = split_codes->data();
        in.split_out = split_out->data();
    }
    std::optional<Array<int64_t>> offsets_out, lengths_out;
    if (mode == kOffsets) {
        offsets_out.emplace(in.n + 1);
        in.offsets_out = offsets_out->mutable_data();
    }
    if (mode == kLengths) {
        lengths_out.emplace(in.n);
        in.lengths_out = lengths_out->mutable_data();
    }
    WalkCuts cuts;
    cuts = bind::without_gil([&] {
        return walk_codes(in, threads);
    });
    py::object none = py::none();
    py::object code = bind::to_array_freed(cuts.code), out = bind::to_array_freed(cuts.out);
    py::object row = bind::to_array_freed(cuts.row);
    return py::make_tuple(offsets_out ? py::object(*offsets_out) : none,
                          lengths_out ? py::object(*lengths_out) : none, code, out, row);
}

py::tuple sums(const Array<int64_t>& lengths, int64_t ncodes, const Array<int64_t>& positions,
               int threads) {
    const int64_t n = bind::length(lengths, "lengths"), npos = bind::length(positions, "positions");
    Array<int64_t> prefix(npos);
    int64_t* out = prefix.mutable_data();
    int64_t total;
    total = bind::without_gil([&] {
        return length_sums(lengths.data(), n, ncodes, positions.data(), npos, out, threads);
    });
    return py::make_tuple(total, prefix);
}

int64_t misfit(const Array<int64_t>& code_offsets, const Array<int64_t>& lengths, int threads) {
    const int64_t n = bind::length(lengths, "lengths");
    need(bind::length(code_offsets, "code_offsets") == n + 1,
         "code_offsets must hold n + 1 entries");
    return bind::without_gil(
        [&] { return first_misfit(code_offsets.data(), lengths.data(), n, threads); });
}

int64_t filled_null(const Array<uint8_t>& validity, const Array<int64_t>& lengths,
                    const Maybe<int64_t>& code_offsets, int threads) {
    const int64_t n = bind::length(lengths, "lengths");
    need(bind::length(validity, "validity") >= (n + 7) / 8, "validity must hold a bit a string");
    need(!code_offsets || bind::length(*code_offsets, "code_offsets") == n + 1,
         "code_offsets must hold n + 1 entries");
    const int64_t* co = code_offsets ? code_offsets->data() : nullptr;
    return bind::without_gil(
        [&] { return first_filled_null(validity.data(), lengths.data(), co, n, threads); });
}

void gather_strings(const Array<uint8_t>& data, const Array<int64_t>& starts,
                    const Array<int64_t>& lengths, const Array<int64_t>& out_offsets,
                    Array<uint8_t>& out, int threads) {
    const int64_t n = bind::length(starts, "starts");
    need(bind::length(lengths, "lengths") >= n && bind::length(out_offsets, "out_offsets") >= n,
         "lengths and out_offsets must hold an entry for each start");
    const int64_t ndata = bind::length(data, "data"), nout = bind::length(out, "out");
    uint8_t* dst = out.mutable_data();
    bind::without_gil([&] {
        gather(data.data(), ndata, starts.data(), lengths.data(), out_offsets.data(), n, dst, nout,
               threads);
    });
}

template <class Out>
void sum_into(const Array<int64_t>& lengths, bind::Output<Out>& out, int threads) {
    const int64_t n = bind::length(lengths, "lengths");
    need(bind::length(out, "out") == n + 1, "out must hold n + 1 entries");
    Out* dst = bind::aligned_output(out, "out");
    bind::without_gil([&] { running_sum(lengths.data(), n, dst, threads); });
}

// out: an unsigned array of the lengths' count, written in place (its width picks the loop)
uint64_t narrow_into(const Array<int64_t>& lengths, py::array& out, int threads) {
    const int64_t n = bind::length(lengths, "lengths");
    // native byte order only (a '>u2' array is of kind 'u' too)
    const int width = py::isinstance<py::array_t<uint8_t>>(out)    ? 1
                      : py::isinstance<py::array_t<uint16_t>>(out) ? 2
                      : py::isinstance<py::array_t<uint32_t>>(out) ? 4
                      : py::isinstance<py::array_t<uint64_t>>(out) ? 8
                                                                   : 0;
    need(width > 0, "out must be uint8, uint16, uint32 or uint64");
    need(out.ndim() == 1 && int64_t(out.shape(0)) == n, "out must hold one entry a length");
    need(out.writeable(), "out must be writable");
    need((out.flags() & py::array::c_style) != 0, "out must be contiguous");
    void* dst = out.mutable_data();
    need(reinterpret_cast<uintptr_t>(dst) % width == 0, "out must be aligned for its dtype");
    const Isa isa = active_isa();  // (reads FSSTGPU_ISA: with the GIL held)
    return bind::without_gil(
        [&] { return narrow_lengths(lengths.data(), n, dst, width, isa, threads); });
}

py::array_t<int64_t> diff(const Array<int64_t>& offsets, int threads) {
    const int64_t n = bind::length(offsets, "offsets") - 1;
    need(n >= 0, "offsets must hold n + 1 entries");
    py::array_t<int64_t> out(n);
    int64_t* dst = out.mutable_data();
    bind::without_gil([&] { differences(offsets.data(), n, dst, threads); });
    return out;
}

py::array_t<int64_t> at_or_after(const Array<int64_t>& offsets, int64_t step, int64_t count,
                                 int threads) {
    const int64_t n = bind::length(offsets, "offsets") - 1;
    need(n >= 0, "offsets must hold n + 1 entries");
    need(step >= 1 && count >= 0, "step must be positive and count non-negative");
    need(count == 0 || step <= INT64_MAX / count, "step * count must fit in int64");
    py::array_t<int64_t> out(count);
    int64_t* dst = out.mutable_data();
    bind::without_gil([&] { first_at_or_after(offsets.data(), n, step, count, dst, threads); });
    return out;
}

py::tuple split_starts(const Array<int64_t>& block_starts, const Array<int64_t>& row,
                       const Array<int64_t>& code, const Array<int64_t>& out, bool by_row,
                       const Array<int64_t>& cut_code, const Array<int64_t>& cut_out,
                       const Array<int64_t>& cut_row, int64_t ncodes, int64_t total,
                       int threads) {
    const int64_t nblocks = bind::length(block_starts, "block_starts") - 1;
    const int64_t nrow = bind::length(row, "row");
    const int64_t nvalues = bind::length(code, "code");
    const int64_t ncut = bind::length(cut_code, "cut_code");
    need(nblocks >= 0 && nblocks <= nrow, "row must begin with the blocks' first strings");
    need(bind::length(out, "out") == nvalues && (by_row || nvalues == nrow),
         "code and out must hold a position per row (or, by row, per string)");
    need(bind::length(cut_out, "cut_out") == ncut && bind::length(cut_row, "cut_row") == ncut,
         "the cuts' arrays differ in length");
    // written in place at their largest size, then trimmed: the pages past the splits written
    // are never touched, and numpy's resize gives the rest back where it lies
    const py::ssize_t most = nrow + ncut;
    Array<int64_t> codes(most + 1), outs(most + 1);
    Array<uint16_t> table(most);
    int64_t* const pc = codes.mutable_data();
    int64_t* const po = outs.mutable_data();
    uint16_t* const pt = table.mutable_data();
    const int64_t n = bind::without_gil([&] {
        return assemble_splits_into(block_starts.data(), nblocks, row.data(), nrow, code.data(),
                                    out.data(), nvalues, by_row, cut_code.data(), cut_out.data(),
                                    cut_row.data(), ncut, ncodes, total, threads, pc, po, pt);
    });
    codes.resize({n + 1});
    outs.resize({n + 1});
    table.resize({n});
    return py::make_tuple(codes, outs, table);
}

template <class T>
int64_t decrease(const Array<T>& a, int threads) {
    const int64_t n = bind::length(a, "a");
    return bind::without_gil([&] { return first_decrease(a.data(), n, threads); });
}

// A bitmap argument: none, or a uint8 array holding bits first .. first + n - 1.
Bits bits_of(const Maybe<uint8_t>& bitmap, int64_t first, int64_t n, const char* what) {
    if (!bitmap) return Bits{};
    const int64_t nbytes = bind::length(*bitmap, what);
    // in bits, each side bounded by the array's size: a forged first or n cannot overflow
    need(first >= 0 && n <= 8 * nbytes && first <= 8 * nbytes - n,
         std::string(what) + " must hold the rows' bits");
    return Bits{bitmap->data(), first};
}

template <class L>
py::tuple rows(int64_t n, const Maybe<uint8_t>& row_bits, int64_t row_first,
               const Maybe<uint8_t>& codes_bits, int64_t codes_first,
               const Array<int64_t>& code_offsets, int64_t data_size,
               const Maybe<uint8_t>& length_bits, int64_t length_first, const Array<L>& lengths,
               const Maybe<uint8_t>& table_bits, int64_t table_first,
               const Array<uint16_t>& table_index, const Array<int32_t>& table_of,
               bind::Output<int64_t>& lengths_out,
               std::optional<bind::Output<int64_t>>& code_offsets_out) {
    need(n >= 0 && data_size >= 0, "n and data_size must be non-negative");
    // (length - 1 == n: n + 1 overflows for a forged n)
    need(bind::length(code_offsets, "code_offsets") - 1 == n,
         "code_offsets must hold n + 1 entries");
    need(bind::length(lengths, "lengths") == n && bind::length(table_index, "table_index") == n,
         "lengths and table_index must hold an entry a row");
    StoredRows in;
    in.n = n;
    in.row = bits_of(row_bits, row_first, n, "row_bits");
    in.codes_valid = bits_of(codes_bits, codes_first, n, "codes_bits");
    in.lengths_valid = bits_of(length_bits, length_first, n, "length_bits");
    in.table_valid = bits_of(table_bits, table_first, n, "table_bits");
    in.code_offsets = code_offsets.data();
    in.data_size = data_size;
    if constexpr (sizeof(L) == 8) {
        in.lengths64 = lengths.data();
    } else {
        in.lengths32 = lengths.data();
    }
    in.table_index = table_index.data();
    in.table_of = table_of.data();
    in.ntable_of = bind::length(table_of, "table_of");
    // offsets from 0 are the caller's own: no copy
    const bool rebase = code_offsets.data()[0] != 0;
    need(bind::length(lengths_out, "lengths_out") == n, "lengths_out must hold an entry a row");
    need(!rebase || (code_offsets_out &&
                     bind::length(*code_offsets_out, "code_offsets_out") - 1 == n),
         "code_offsets_out must hold n + 1 entries when code_offsets do not start at 0");
    int64_t* co = rebase ? bind::aligned_output(*code_offsets_out, "code_offsets_out") : nullptr;
    int64_t* lens = bind::aligned_output(lengths_out, "lengths_out");
    RowsFound found = bind::without_gil([&] { return stored_rows(in, co, lens); });
    py::list nulls;
    for (int64_t k : found.nulls) nulls.append(k);
    return py::make_tuple(int(found.status), nulls,
                          rebase ? py::object(*code_offsets_out) : py::object(code_offsets),
                          bind::to_array(found.run_starts), bind::to_array(found.run_tables));
}

}  // namespace

void bind_scan(py::module_& m) {
    // uint32 lengths first: a uint64 array must not be narrowed into them
    auto def_rows = [&m](auto length) {
        m.def("stored_rows", &rows<decltype(length)>, py::arg("n"), py::arg("row_bits"),
              py::arg("row_first"), py::arg("codes_bits"), py::arg("codes_first"),
              py::arg("code_offsets"), py::arg("data_size"), py::arg("length_bits"),
              py::arg("length_first"), py::arg("lengths").noconvert(), py::arg("table_bits"),
              py::arg("table_first"), py::arg("table_index"), py::arg("table_of"),
              py::arg("lengths_out").noconvert(), py::arg("code_offsets_out").noconvert());
    };
    def_rows(uint32_t{});
    def_rows(uint64_t{});
    m.def("walk_codes", &walk, py::arg("codes"), py::arg("block_starts"), py::arg("symlen"),
          py::arg("code_offsets"), py::arg("lengths"), py::arg("mode"), py::arg("cut_size"),
          py::arg("max_cuts"), py::arg("split_codes"), py::arg("split_out"), py::arg("threads"));
    m.def("length_sums", &sums, py::arg("lengths"), py::arg("ncodes"), py::arg("positions"),
          py::arg("threads"));
    m.def("first_misfit", &misfit, py::arg("code_offsets"), py::arg("lengths"),
          py::arg("threads"));
    m.def("first_filled_null", &filled_null, py::arg("validity"), py::arg("lengths"),
          py::arg("code_offsets"), py::arg("threads"));
    m.def("count_set_bits", [](const Array<uint8_t>& bitmap) {
        const int64_t n = bind::length(bitmap, "bitmap");
        return bind::without_gil([&] { return count_set_bits(bitmap.data(), n); });
    }, py::arg("bitmap"));
    // out is written in place: never a converted copy
    m.def("mark_code_starts", [](const Array<int64_t>& code_offsets, int64_t bit,
                                 Array<uint8_t>& out) {
        const int64_t n = bind::length(code_offsets, "code_offsets") - 1;
        need(n >= 0, "code_offsets must hold n + 1 entries");
        const int64_t nbits = 8 * bind::length(out, "out");
        need(bit >= 0 && bit <= nbits, "bit must lie inside out");
        const bool inside = bind::without_gil(
            [&] { return mark_code_starts(code_offsets.data(), n, bit, out.mutable_data(), nbits); });
        need(inside, "a code offset lies outside the bitmap");
    }, py::arg("code_offsets"), py::arg("bit"), py::arg("out").noconvert());
    m.def("or_bits", [](const Array<uint8_t>& src, int64_t nbits, Array<uint8_t>& out,
                        int64_t bit) {
        need(nbits >= 0 && bit >= 0, "nbits and bit must not be negative");
        // in bits, each side bounded by the array's size: a forged nbits or bit cannot overflow
        // (bit + nbits wrapped past the check, and or_bits wrote at bit / 8)
        const int64_t src_bits = 8 * bind::length(src, "src");
        const int64_t out_bits = 8 * bind::length(out, "out");
        need(nbits <= src_bits, "src must hold nbits bits");
        need(bit <= out_bits && nbits <= out_bits - bit, "out must hold bit + nbits bits");
        bind::without_gil([&] { or_bits(src.data(), nbits, out.mutable_data(), bit); });
    }, py::arg("src"), py::arg("nbits"), py::arg("out").noconvert(), py::arg("bit"));
    m.def("gather", &gather_strings, py::arg("data"), py::arg("starts"), py::arg("lengths"),
          py::arg("out_offsets"), py::arg("out").noconvert(), py::arg("threads"));
    m.def("running_sum", &sum_into<int32_t>, py::arg("lengths"), py::arg("out").noconvert(),
          py::arg("threads"));
    m.def("running_sum", &sum_into<int64_t>, py::arg("lengths"), py::arg("out").noconvert(),
          py::arg("threads"));
    m.def("narrow_lengths", &narrow_into, py::arg("lengths"), py::arg("out").noconvert(),
          py::arg("threads"));
    m.def("differences", &diff, py::arg("offsets"), py::arg("threads"));
    m.def("first_at_or_after", &at_or_after, py::arg("offsets"), py::arg("step"),
          py::arg("count"), py::arg("threads"));
    m.def("assemble_splits", &split_starts, py::arg("block_starts"), py::arg("row"),
          py::arg("code"), py::arg("out"), py::arg("by_row"), py::arg("cut_code"),
          py::arg("cut_out"), py::arg("cut_row"), py::arg("ncodes"), py::arg("total"),
          py::arg("threads"));
    m.def("first_decrease", &decrease<int32_t>, py::arg("a").noconvert(), py::arg("threads"));
    m.def("first_decrease", &decrease<int64_t>, py::arg("a"), py::arg("threads"));
}
