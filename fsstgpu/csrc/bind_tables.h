// Python binding of the many-table reader (table_slots.h), called from module.cpp.
#pragma once

#include <pybind11/pybind11.h>

void bind_tables(pybind11::module_& m);
