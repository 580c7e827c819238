"""cudalens GPU runner: compile, verify and time CUDA kernels.

Everything here that touches the GPU imports pycuda lazily, so the data classes and the
pure-Python parts (input generation, statistics, cubin symbol lookup) work without CUDA.
The runner never parses C++ source: it receives resolved problems (see ``problem``).
"""
