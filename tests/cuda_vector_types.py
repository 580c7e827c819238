"""CUDA's built-in vector types for the CPU simulators (tests/block_sim.py, host_sim.py): the
names, sizes and alignments of the toolkit's vector_types.h, so rewrites using float4 and its
kin compile as host C++."""

VECTOR_TYPES = r"""
// CUDA's built-in vector types (vector_types.h): the same sizes and alignments.
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) uint2 { unsigned int x, y; };
struct alignas(16) uint4 { unsigned int x, y, z, w; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(16) ulonglong2 { unsigned long long x, y; };
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
"""
