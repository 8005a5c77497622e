// Bindings of the codes walk, the column checks and the plain layout's loops (bind_scan.cpp).
#pragma once

#include <pybind11/pybind11.h>

void bind_scan(pybind11::module_& m);
