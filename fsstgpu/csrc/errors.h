// Exceptions the entry points throw; module.cpp turns them into Python exceptions.
#pragma once

#include <stdexcept>

namespace fsstgpu_native {

// Compressed data that cannot be right: raised as fsstgpu.CorruptDataError. (Bad arguments,
// e.g. offsets outside the data to encode, are std::invalid_argument: ValueError.)
struct CorruptData : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace fsstgpu_native
