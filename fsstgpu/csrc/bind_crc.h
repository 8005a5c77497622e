// Python binding of zlib's CRC-32 at memory speed (crc32.h), called from module.cpp.
#pragma once

#include <pybind11/pybind11.h>

void bind_crc(pybind11::module_& m);
