"""Builds fsstgpu._native, the compiled CPU codec; everything else is in pyproject.toml.

C++17 at -O3 for the machine's generic target: the kernels are compiled once per instruction set
(scalar, AVX2, AVX-512) with function target attributes and chosen at run time, so a build never
needs ``-march=native`` and runs on any x86-64 (other architectures get the scalar copy).
"""

from glob import glob

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

# the sources compile in parallel (NPY_NUM_BUILD_JOBS overrides; default: every core)
ParallelCompile("NPY_NUM_BUILD_JOBS", default=0).install()

native = Pybind11Extension(
    "fsstgpu._native",
    sorted(glob("fsstgpu/csrc/*.cpp")),
    include_dirs=["fsstgpu/csrc"],
    depends=sorted(glob("fsstgpu/csrc/*.h")),
    cxx_std=17,
    extra_compile_args=["-O3"],
)

setup(ext_modules=[native], cmdclass={"build_ext": build_ext})
