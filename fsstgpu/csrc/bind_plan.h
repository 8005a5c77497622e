// Python binding of the block planner (plan.h), called from module.cpp's PYBIND11_MODULE.
#pragma once

#include <pybind11/pybind11.h>

void bind_plan(pybind11::module_& m);
