// Python binding of string_bounds (bounds.h), called from module.cpp's PYBIND11_MODULE.
#pragma once

#include <pybind11/pybind11.h>

void bind_bounds(pybind11::module_& m);
