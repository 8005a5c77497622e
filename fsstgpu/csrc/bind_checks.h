// Python binding of the split points' checks (decode.h's check_splits), called from
// module.cpp's PYBIND11_MODULE.
#pragma once

#include <pybind11/pybind11.h>

void bind_checks(pybind11::module_& m);
