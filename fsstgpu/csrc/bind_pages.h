// Python binding of page_headers (parquet_pages.h) and delta_binary_packed (parquet_delta.h),
// called from module.cpp's PYBIND11_MODULE.
#pragma once

#include <pybind11/pybind11.h>

void bind_pages(pybind11::module_& m);
