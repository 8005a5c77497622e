// Python bindings of Parquet's value decoders (parquet_pages.h), called from module.cpp.
#pragma once

#include <pybind11/pybind11.h>

void bind_pages(pybind11::module_& m);
