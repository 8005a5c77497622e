// fsstgpu._native's Parquet page decoders (documented in fsstgpu/native/pages.py; the decoding
// itself in parquet_pages.cpp and parquet_leaf.cpp): the counts checked against the bytes before
// anything is allocated, the decoding without the GIL.
#include "bind_pages.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "bind_arrays.h"
#include "chunk_plan.h"
#include "errors.h"
#include "page_headers.h"
#include "parquet_leaf.h"
#include "parquet_pages.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

// A 2-D array of rows of `width` values, a vector's copy (rows x width).
template <class T>
bind::Array<T> rows_array(const std::vector<T>& v, int width) {
    bind::Array<T> out({static_cast<py::ssize_t>(v.size() / width),
                        static_cast<py::ssize_t>(width)});
    std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
}

py::tuple rle_hybrid_py(const bind::Array<uint8_t>& data, int bit_width, int64_t count) {
    const int64_t size = bind::length(data, "data");
    // a run header's byte can stand for at most 2**63 values only through a varint: bound the
    // allocation by what a real run can hold, a repeated value's 2**31 a header byte (a writer
    // never makes more), so a forged count is refused before it is allocated
    check_value_count(count, size * (int64_t{1} << 24), "RLE / bit-packed data");
    bind::Array<uint32_t> out(count);
    int64_t end = 0;
    bind::without_gil([&] {
        end = decode_rle_hybrid(data.data(), size, bit_width, count, out.mutable_data());
    });
    return py::make_tuple(out, end);
}

py::tuple delta_binary_packed_py(const bind::Array<uint8_t>& data, int64_t count) {
    const int64_t size = bind::length(data, "data");
    // a block of up to 2**20 values takes at least one byte (its min delta)
    check_value_count(count, size * (int64_t{1} << 20) + 1, "DELTA_BINARY_PACKED data");
    bind::Array<int64_t> out(count);
    int64_t end = 0;
    bind::without_gil([&] {
        end = decode_delta_binary_packed(data.data(), size, count, out.mutable_data());
    });
    return py::make_tuple(out, end);
}

py::tuple delta_length_byte_arrays_py(const bind::Array<uint8_t>& data, int64_t count) {
    const int64_t size = bind::length(data, "data");
    check_value_count(count, size * (int64_t{1} << 20) + 1, "DELTA_LENGTH_BYTE_ARRAY data");
    bind::Array<int64_t> offsets(count + 1);
    int64_t start = 0;
    bind::without_gil([&] {
        start = decode_delta_length_offsets(data.data(), size, count, offsets.mutable_data(),
                                            "DELTA_LENGTH_BYTE_ARRAY data");
    });
    return py::make_tuple(offsets, start);
}

py::tuple plain_byte_arrays_py(const bind::Array<uint8_t>& data, int64_t count,
                               bool with_values) {
    const int64_t size = bind::length(data, "data");
    check_value_count(count, size / 4, "PLAIN byte arrays");  // (4 bytes each at least)
    bind::Array<int64_t> offsets(count + 1);
    bind::Array<uint8_t> values(with_values ? size : 0);  // (offsets only: none copied)
    int64_t end = 0;
    bind::without_gil([&] {
        end = decode_plain_byte_arrays(data.data(), size, count, offsets.mutable_data(),
                                       with_values ? values.mutable_data() : nullptr);
    });
    const int64_t used = with_values ? offsets.data()[count] : 0;
    return py::make_tuple(values[py::slice(0, used, 1)], offsets, end);
}

py::tuple delta_byte_arrays_py(const bind::Array<uint8_t>& data, int64_t count) {
    const int64_t size = bind::length(data, "data");
    check_value_count(count, size * (int64_t{1} << 20) + 1, "DELTA_BYTE_ARRAY data");
    std::vector<int64_t> prefix(static_cast<size_t>(count));
    bind::Array<int64_t> suffix_offsets(count + 1), offsets(count + 1);
    int64_t start = 0, total = 0;
    bind::without_gil([&] {
        start = decode_delta_byte_array_runs(data.data(), size, count, prefix.data(),
                                             suffix_offsets.mutable_data(), &total);
    });
    // (the strings' bytes are at most the prefixes' and suffixes' together: checked on the way)
    bind::Array<uint8_t> values(total);
    bind::without_gil([&] {
        total = decode_delta_strings(prefix.data(), suffix_offsets.data(), data.data() + start,
                                     count, offsets.mutable_data(), values.mutable_data(), total);
    });
    const int64_t end = start + suffix_offsets.data()[count];
    return py::make_tuple(values[py::slice(0, total, 1)], offsets, end);
}

// One leaf chunk's decompressed pages (bodies, and a row of `pages` a page: kind, encoding,
// levels encoding, values, repetition levels' bytes, levels' bytes) decoded into Arrow's
// layout; unsupported layouts raise ValueError (malformed pages CorruptDataError).
py::tuple decode_leaf_py(const py::list& bodies, const bind::Array<int64_t>& pages,
                         int physical, int max_def, bool keep_indices, int64_t max_rows,
                         bool in_place, const py::object& body_starts) {
    const int64_t n = bind::length(pages, "pages", 2);
    if (pages.shape(1) != 6 || static_cast<int64_t>(bodies.size()) != n) {
        throw std::invalid_argument("pages must hold 6 fields a page, a body each");
    }
    if (max_rows < 0) throw std::invalid_argument("max_rows must be >= 0");
    if (physical < kLeafBytes || physical > kLeafInt64 || max_def < 0 || max_def > 2) {
        throw std::invalid_argument("physical must be 0-2 and max_def 0-2");
    }
    std::vector<bind::Array<uint8_t>> held;  // (the bodies kept alive without the GIL)
    held.reserve(static_cast<size_t>(n));
    std::vector<LeafPage> in(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
        held.push_back(bind::as_array<uint8_t>(bodies[static_cast<size_t>(k)], "a page body"));
        const int64_t* f = pages.data() + 6 * k;
        LeafPage& page = in[static_cast<size_t>(k)];
        page.body = held.back().data();
        page.size = bind::length(held.back(), "a page body");
        page.kind = static_cast<int>(f[0]);
        page.encoding = static_cast<int>(f[1]);
        page.levels_encoding = static_cast<int>(f[2]);
        page.num_values = f[3];
        page.rep_size = f[4];
        page.levels_size = f[5];
        if (f[0] < 0 || f[0] > 2) throw std::invalid_argument("a page kind must be 0-2");
    }
    std::vector<int64_t> starts_in;
    if (!body_starts.is_none()) {
        const auto given = bind::as_array<int64_t>(body_starts, "body_starts");
        if (bind::length(given, "body_starts") != n || !in_place) {
            throw std::invalid_argument("body_starts: one a page, with in_place");
        }
        starts_in.assign(given.data(), given.data() + n);
    }
    LeafColumn col;  // (an unsupported layout's std::domain_error arrives as ValueError)
    bind::without_gil([&] {
        col = decode_leaf(in, physical, max_def, keep_indices, max_rows, in_place,
                          body_starts.is_none() ? nullptr : starts_in.data());
    });
    py::object none = py::none();
    const bool bytes = physical == kLeafBytes && !col.indexed;
    // (the vectors moved into the arrays: no copy of a chunk's bytes on the way out)
    return py::make_tuple(
        bind::to_array_moved(std::move(col.levels)), col.present,
        bytes ? py::object(bind::to_array_moved(std::move(col.offsets))) : none,
        bytes ? py::object(bind::to_array_moved(std::move(col.data))) : none,
        physical != kLeafBytes && !col.indexed
            ? py::object(bind::to_array_moved(std::move(col.ints))) : none,
        col.indexed ? py::object(bind::to_array_moved(std::move(col.indices))) : none,
        col.indexed ? py::object(bind::to_array_moved(std::move(col.dict_offsets))) : none,
        col.indexed ? py::object(bind::to_array_moved(std::move(col.dict_data))) : none,
        bytes && in_place
            ? py::object(py::array(bind::to_array_moved(std::move(col.regions)))
                             .attr("reshape")(-1, 3))
            : none,
        bytes && !body_starts.is_none()
            ? py::object(bind::to_array_moved(std::move(col.starts))) : none);
}

constexpr int kSpecFields = 9;  // ChunkSpec's fields, in order

py::tuple plan_chunks_py(bind::Output<uint8_t>& buffer, int fd, const bind::Array<int64_t>& specs,
                         bool check_crc, int threads) {
    uint8_t* out = bind::aligned_output(buffer, "buffer");
    const int64_t n = bind::length(specs, "specs", 2);
    if (buffer.ndim() != 1) throw std::invalid_argument("buffer must be 1-D");
    if (specs.shape(1) != kSpecFields) {
        throw std::invalid_argument("specs must have " + std::to_string(kSpecFields) +
                                    " columns");
    }
    const int64_t room = static_cast<int64_t>(buffer.shape(0));
    std::vector<ChunkSpec> chunks(static_cast<size_t>(n));
    int64_t free_from = 0;  // (each chunk's range after the one before's: no two overlap)
    for (int64_t c = 0; c < n; ++c) {
        const int64_t* f = specs.data() + c * kSpecFields;
        ChunkSpec s{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]};
        const int64_t big = INT64_MAX;
        if (s.file_at < 0 || s.size < 0 || s.file_at > big - s.size || s.buf_at < free_from ||
            s.buf_at > room || s.size > room - s.buf_at || s.col_at < 0 ||
            s.col_at > big - s.size || s.num_values < 0 || s.first_row < 0 ||
            s.first_row > big - s.num_values || s.group < 0 || s.leaf < 0 || s.leaf > 3 ||
            (s.wide != 0 && s.wide != 1)) {
            throw std::invalid_argument("chunk " + std::to_string(c) +
                                        ": a spec outside the buffer, overlapping the one "
                                        "before, or out of range");
        }
        free_from = s.buf_at + s.size;
        chunks[static_cast<size_t>(c)] = s;
    }
    ChunkPlans plans = bind::without_gil(
        [&] { return plan_chunks(fd, out, chunks, check_crc, std::max(threads, 1)); });
    py::object error = py::none();
    if (plans.error != PlanError::none) {
        error = py::make_tuple(plans.error_chunk, static_cast<int64_t>(plans.error),
                               plans.error_page, plans.message);
    }
    return py::make_tuple(rows_array(plans.rows, kPlanFields),
                          rows_array(plans.dictionaries, 3), bind::to_array(plans.entries),
                          bind::to_array(plans.entry_at), rows_array(plans.crcs, kCrcFields),
                          error);
}

}  // namespace

void bind_pages(py::module_& m) {
    m.def(
        "page_headers",
        [](const py::object& chunk, int64_t max_pages) {
            const bind::Bytes bytes(chunk);
            const std::vector<int64_t> rows = bind::without_gil(
                [&] { return page_headers(bytes.data(), bytes.size(), max_pages); });
            return rows_array(rows, kPageFields);
        },
        py::arg("chunk"), py::arg("max_pages"));
    m.def("plan_chunks", &plan_chunks_py, py::arg("buffer").noconvert(), py::arg("fd"),
          py::arg("specs"), py::arg("check_crc"), py::arg("threads"));
    m.def("rle_hybrid", &rle_hybrid_py, py::arg("data"), py::arg("bit_width"),
          py::arg("count"));
    m.def("delta_binary_packed", &delta_binary_packed_py, py::arg("data"), py::arg("count"));
    m.def("delta_length_byte_arrays", &delta_length_byte_arrays_py, py::arg("data"),
          py::arg("count"));
    m.def("plain_byte_arrays", &plain_byte_arrays_py, py::arg("data"), py::arg("count"),
          py::arg("with_values") = true);
    m.def("delta_byte_arrays", &delta_byte_arrays_py, py::arg("data"), py::arg("count"));
    m.def("decode_leaf", &decode_leaf_py, py::arg("bodies"), py::arg("pages"),
          py::arg("physical"), py::arg("max_def"), py::arg("keep_indices"),
          py::arg("max_rows"), py::arg("in_place") = false,
          py::arg("body_starts") = py::none());
}
