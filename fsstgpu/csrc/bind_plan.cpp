// fsstgpu._native.plan_blocks (documented in fsstgpu/native/plan.py): the arrays checked here
// and by check_train_range, the whole plan made with the GIL released.
#include "bind_plan.h"

#include <pybind11/numpy.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "bind_arrays.h"
#include "lookups.h"
#include "plan.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

py::tuple plan_blocks_py(const bind::Array<uint8_t>& data, const bind::Array<int64_t>& offsets,
                         int64_t sample_bytes, int64_t segment_bytes, int64_t max_block_bytes,
                         double tolerance, bool speculate, int threads, bool walk,
                         int extra_rounds) {
    const int64_t size = bind::length(data, "data");
    const int64_t n = bind::length(offsets, "offsets") - 1;
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    check_train_range(size, offsets.data(), n, 0, n, sample_bytes, threads);
    if (!std::isfinite(tolerance) || tolerance < 0) {
        throw std::invalid_argument("tolerance must be a finite number >= 0");
    }
    check_extra_rounds(extra_rounds);
    PlanOptions opt;
    opt.sample_bytes = sample_bytes;
    opt.segment_bytes = segment_bytes;
    opt.max_block_bytes = max_block_bytes;
    opt.tolerance = tolerance;
    opt.speculate = speculate;
    opt.walk = walk;
    opt.extra_rounds = extra_rounds;
    // every table's symbols in SymbolTable's canonical order, table after table (pack_tables),
    // so that Python wraps slices of three arrays (a SymbolTable a block: 4047 of them took
    // 0.29 s of a 2.3 s compress on 16 cores when each was made from a list of bytes and
    // sorted again)
    Plan plan;
    PackedTables packed;
    bind::without_gil([&] {
        plan = plan_blocks(data.data(), size, offsets.data(), n, opt, threads);
        packed = pack_tables(plan.tables, threads);
    });
    return py::make_tuple(bind::to_array(plan.block_starts), bind::to_array(packed.values),
                          bind::to_array(packed.lengths), bind::to_array(packed.first));
}

// The samples checked (check_samples), then trained and packed without the GIL.
py::tuple train_samples_py(const bind::Array<uint8_t>& bytes, const bind::Array<int64_t>& offsets,
                           const bind::Array<int64_t>& piece_first,
                           const bind::Array<int64_t>& byte_first, int extra_rounds,
                           int threads) {
    const int64_t m = bind::length(piece_first, "piece_first") - 1;
    if (m < 0 || bind::length(byte_first, "byte_first") != m + 1) {
        throw std::invalid_argument("piece_first and byte_first must hold a start a sample, "
                                    "then their ends");
    }
    check_samples(bind::length(bytes, "sample bytes"), offsets.data(),
                  bind::length(offsets, "sample offsets"), piece_first.data(),
                  byte_first.data(), m);
    check_extra_rounds(extra_rounds);
    TrainOptions opt;
    opt.extra_rounds = extra_rounds;
    PackedTables packed;
    bind::without_gil([&] {
        packed = train_samples(bytes.data(), offsets.data(), piece_first.data(),
                               byte_first.data(), m, opt, threads);
    });
    return py::make_tuple(bind::to_array(packed.values), bind::to_array(packed.lengths),
                          bind::to_array(packed.first));
}

// The tables checked (check_lookup_tables), then their lookups made without the GIL into
// arrays allocated here.
py::tuple table_lookups_py(const bind::Array<uint64_t>& values,
                           const bind::Array<uint8_t>& lengths, const bind::Array<int64_t>& first,
                           int threads) {
    const int64_t total = bind::length(values, "values");
    const int64_t count = bind::length(first, "first") - 1;
    if (bind::length(lengths, "lengths") != total || count < 0) {
        throw std::invalid_argument("lengths must hold a length a value, first the tables' "
                                    "starts and then their end");
    }
    std::vector<int64_t> two_first(static_cast<size_t>(count + 1));
    check_lookup_tables(values.data(), lengths.data(), total, first.data(), count,
                        two_first.data());
    const py::ssize_t rows = count;
    bind::Array<uint16_t> one_best({rows, py::ssize_t{256}});
    bind::Array<int64_t> two_at(two_first[static_cast<size_t>(count)]);
    bind::Array<uint16_t> two_value(two_first[static_cast<size_t>(count)]);
    bind::Array<uint32_t> bucket_range({rows, py::ssize_t{kLookupBuckets}});
    bind::Array<uint64_t> cand_vm({rows, py::ssize_t{2 * kLookupCandidates}});
    bind::Array<uint16_t> cand_lc({rows, py::ssize_t{kLookupCandidates}});
    const LookupOutputs out{one_best.mutable_data(), two_at.mutable_data(),
                            two_value.mutable_data(), bucket_range.mutable_data(),
                            cand_vm.mutable_data(), cand_lc.mutable_data()};
    bind::without_gil([&] {
        table_lookups(values.data(), lengths.data(), first.data(), count, two_first.data(), out,
                      threads);
    });
    return py::make_tuple(one_best, two_at, two_value, bucket_range, cand_vm, cand_lc);
}

}  // namespace

void bind_plan(py::module_& m) {
    m.def("plan_blocks", &plan_blocks_py, py::arg("data"), py::arg("offsets"),
          py::arg("sample_bytes"), py::arg("segment_bytes"), py::arg("max_block_bytes"),
          py::arg("tolerance"), py::arg("speculate"), py::arg("threads"), py::arg("walk") = true,
          py::arg("extra_rounds") = 3);
    m.def("train_samples", &train_samples_py, py::arg("bytes"), py::arg("offsets"),
          py::arg("piece_first"), py::arg("byte_first"), py::arg("extra_rounds"),
          py::arg("threads"));
    m.def("table_lookups", &table_lookups_py, py::arg("values"), py::arg("lengths"),
          py::arg("first"), py::arg("threads"));
}
