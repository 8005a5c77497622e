// Python bindings of the trainer (train.h), called from module.cpp's PYBIND11_MODULE.
#pragma once

#include <pybind11/pybind11.h>

void bind_train(pybind11::module_& m);
