"""CUDA's half-precision types for the CPU simulator (tests/block_sim.py): ``__half``/``half``,
``__nv_bfloat16``, their pairs ``__half2``/``half2`` and ``__nv_bfloat162`` (2 and 4 bytes,
aligned as in cuda_fp16.h / cuda_bf16.h), and the conversions, operators and intrinsics the
variant corpus and its rewrites use.

Values are stored as the formats' bits; every operation converts to float, computes and rounds
the result to the format (round to nearest even: IEEE 754 binary16, and bfloat16 as the upper
half of a binary32), as the device's half and bfloat16 instructions round each result. The
fused ones (``__hfma``, ``__hfma2``) round once, after ``fmaf``. Subnormal halves are kept;
NaN results are the formats' canonical quiet NaNs.
"""

HALF_TYPES = r"""
// CUDA's half-precision types (cuda_fp16.h, cuda_bf16.h), emulated bit for bit in storage.
#include <cmath>
#include <cstring>
namespace simh {
inline unsigned short f2h(float f) {
    unsigned int x; std::memcpy(&x, &f, 4);
    const unsigned int sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u);
    if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds to infinity (65520 and above)
    if (ax < 0x38800000u) {                        // below 2^-14: a subnormal half (or 0)
        float af; std::memcpy(&af, &ax, 4);
        return sign | (unsigned short)std::nearbyint(af * 16777216.0f);  // units of 2^-24
    }
    unsigned int h = ((ax >> 23) - 112) << 10 | ((ax & 0x7fffffu) >> 13);
    const unsigned int rest = ax & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return sign | h;
}
inline float h2f(unsigned short h) {
    const unsigned int sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float f;
    if (e == 0) { f = m * 5.9604644775390625e-8f; return sign ? -f : f; }
    const unsigned int x = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
    std::memcpy(&f, &x, 4);
    return f;
}
inline unsigned short f2b(float f) {
    unsigned int x; std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
    return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float b2f(unsigned short b) {
    const unsigned int x = (unsigned int)b << 16; float f; std::memcpy(&f, &x, 4); return f;
}
}  // namespace simh
struct alignas(2) __half {
    unsigned short bits;
    __half() = default;
    __half(float f) : bits(simh::f2h(f)) {}
    __half(double d) : bits(simh::f2h((float)d)) {}
    __half(int i) : bits(simh::f2h((float)i)) {}
    operator float() const { return simh::h2f(bits); }
};
struct alignas(2) __nv_bfloat16 {
    unsigned short bits;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) : bits(simh::f2b(f)) {}
    __nv_bfloat16(double d) : bits(simh::f2b((float)d)) {}
    __nv_bfloat16(int i) : bits(simh::f2b((float)i)) {}
    operator float() const { return simh::b2f(bits); }
};
typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;
struct alignas(4) __half2 { __half x, y; };
struct alignas(4) __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __half2 half2;
typedef __nv_bfloat162 nv_bfloat162;
#define SIMH_SCALAR(T, P)                                                                     \
    inline T operator+(T a, T b) { return T((float)a + (float)b); }                           \
    inline T operator-(T a, T b) { return T((float)a - (float)b); }                           \
    inline T operator*(T a, T b) { return T((float)a * (float)b); }                           \
    inline T operator/(T a, T b) { return T((float)a / (float)b); }                           \
    inline T operator-(T a) { return T(-(float)a); }                                          \
    inline T& operator+=(T& a, T b) { return a = a + b; }                                     \
    inline T& operator-=(T& a, T b) { return a = a - b; }                                     \
    inline T& operator*=(T& a, T b) { return a = a * b; }                                     \
    inline T __hadd(T a, T b) { return a + b; }                                               \
    inline T __hsub(T a, T b) { return a - b; }                                               \
    inline T __hmul(T a, T b) { return a * b; }                                               \
    inline T __hneg(T a) { return -a; }                                                       \
    inline T __habs(T a) { return T(std::fabs((float)a)); }                                   \
    inline T __hmax(T a, T b) { return (float)a < (float)b ? b : a; }                         \
    inline T __hmin(T a, T b) { return (float)b < (float)a ? b : a; }                         \
    inline T __hfma(T a, T b, T c) { return T(std::fmaf((float)a, (float)b, (float)c)); }     \
    inline P __hadd2(P a, P b) { return P{__hadd(a.x, b.x), __hadd(a.y, b.y)}; }              \
    inline P __hsub2(P a, P b) { return P{__hsub(a.x, b.x), __hsub(a.y, b.y)}; }              \
    inline P __hmul2(P a, P b) { return P{__hmul(a.x, b.x), __hmul(a.y, b.y)}; }              \
    inline P __hneg2(P a) { return P{__hneg(a.x), __hneg(a.y)}; }                             \
    inline P __habs2(P a) { return P{__habs(a.x), __habs(a.y)}; }                             \
    inline P __hmax2(P a, P b) { return P{__hmax(a.x, b.x), __hmax(a.y, b.y)}; }              \
    inline P __hmin2(P a, P b) { return P{__hmin(a.x, b.x), __hmin(a.y, b.y)}; }              \
    inline P __hfma2(P a, P b, P c) { return P{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)}; }
SIMH_SCALAR(__half, __half2)
SIMH_SCALAR(__nv_bfloat16, __nv_bfloat162)
#undef SIMH_SCALAR
inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return (float)h; }
inline __half2 __half2half2(__half h) { return __half2{h, h}; }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return (float)b; }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 b) { return __nv_bfloat162{b, b}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)};
}
"""
