"""fsstgpu's benchmarks: measurement code kept out of the installed package.

They run from a source checkout (an editable install, or Python started in the repository), on
fsstgpu's public API only; ``fsstgpu bench`` imports them from the checkout it runs from. The
figures and their history are in BENCHMARKS.md.

====================  ===========================================================================
module                measures
====================  ===========================================================================
``cpu``               the CPU codec on line files (dbtext), beside pyarrow's LZ4
                      (``fsstgpu bench``)
``gpu``               GPU decode, device-resident and from host memory, beside the same run's
                      copy bandwidth and plain uploads (``fsstgpu bench --device gpu``)
``nvcomp_child``      nvCOMP's codecs on the same strings, in a child process of its own
``columns``           the GPU benchmark's inputs: compressed columns concatenated and replicated
``kernels``           the data-movement kernels: transpose, rotate, bit planes
                      (``fsstgpu bench kernels``)
``timing``            CUDA-event timing and the device copy bandwidth every GPU figure is set beside
``reference_bench``   fsstgpu beside the reference FSST, LZ4 and zstd, interleaved, on issue #21's
                      corpora (``fsstgpu bench --reference SRC_OR_LIB``)
``reference_fsst``    the reference FSST (cwida/fsst) built from a checkout outside the repository,
                      driven through ctypes (shim: ``reference_fsst_shim.cpp``)
``corpora``           the comparison's corpora: dbtext, doc lines, paths, stdlib source lines
``yardsticks``        pyarrow's LZ4 / zstd, measured one way (1 MiB pieces on a thread pool)
====================  ===========================================================================
"""
