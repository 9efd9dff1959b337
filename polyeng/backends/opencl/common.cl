// Storage access shared by every polyeng OpenCL kernel, chosen at build time.
// STORAGE (float kernels): 1 f32, 2 f16 (vload_half / vstore_half_rte and half_load16 /
// half_store_rte16 below: no cl_khr_fp16 needed), 3 bf16 (16-bit patterns widened to f32, stored
// with round-to-nearest-even), 4 f64 (only built when the device reports cl_khr_fp64). `real`
// is the compute type.
// WORD_BYTES (data movement kernels): elements moved as unsigned words of that size.
// VLOAD(p, i) / VSTORE(p, i, v) move the 16 elements from element offset i (no alignment
// needed) of a __global buffer as a `realv` (16 lanes of `real`): kernels that walk contiguous
// runs use them so the SIMD width does not depend on the compiler vectorizing across work items.

// 16-lane vectors are passed by value between the kernels' functions and the device's built-in
// library; on an x86 CPU without AVX-512 (PoCL building for AVX2) clang warns for each such
// call that their calling convention differs from an AVX-512 build's. Both sides are built
// for the same target, so it does not apply, and the build log stays empty (pyopencl turns a
// non-empty one into a CompilerWarning on the call that built the program).
#ifdef __has_warning
#if __has_warning("-Wpsabi")
#pragma clang diagnostic ignored "-Wpsabi"
#endif
#endif

// float vectors to and from f16 storage at any element offset, without cl_khr_fp16. PoCL (3.1,
// x86) runs vload_halfN / vstore_halfN_rte as one access aligned to the whole vector (2N bytes)
// where OpenCL asks only for the alignment of a half, and on AVX2 that became an aligned move
// that crashed the process on a row starting at an odd multiple of 2 bytes (a float16 softmax
// over 33 elements). half_loadN / half_store_rteN (N = 2, 4, 8; 16 as two of 8) call them on so
// aligned an address only (the device's own conversions, F16C on x86); elsewhere the 16-bit
// patterns move as ushort (element-aligned) and are converted in integer arithmetic: widened
// exactly (subnormals through an exact float subtraction, so no flush to zero; NaN payloads
// kept), narrowed with round to nearest even as vstore_half_rte and numpy (65520 and up to inf;
// NaN to a quiet NaN keeping the sign and the top payload bits, where numpy keeps the payload
// as it is: NaN bits are not compared, see docs/engines.md).
#define HALF_VECTORS(N)                                                                            \
inline float##N half_bits_to_float##N(ushort##N bits) {                                            \
    const uint##N h = convert_uint##N(bits);                                                       \
    const uint##N o = (h & 0x7FFFu) << 13;                        /* exponent, mantissa in place */ \
    const uint##N e = o & 0x0F800000u;                                                             \
    uint##N f = o + 0x38000000u;                                  /* exponent rebiased 15 -> 127 */ \
    f = select(f, o | 0x7F800000u, e == 0x0F800000u);             /* inf, NaN */                    \
    f = select(f, as_uint##N(as_float##N(o + 0x38800000u) - 0x1p-14f), e == 0u);   /* subnormal */ \
    return as_float##N(f | ((h & 0x8000u) << 16));                                                 \
}                                                                                                  \
inline ushort##N float_to_half_bits_rte##N(float##N v) {                                           \
    const uint##N b = as_uint##N(v);                                                               \
    const uint##N a = b & 0x7FFFFFFFu;                                                             \
    const uint##N normal = (a - 0x38000000u + 0xFFFu + ((a >> 13) & 1u)) >> 13;                    \
    const uint##N tiny = convert_uint##N##_rte(as_float##N(a) * 0x1p24f);   /* below 2^-14 */       \
    uint##N h = select(normal, tiny, a < 0x38800000u);                                             \
    h = select(h, (uint##N)(0x7C00u), a >= 0x477FF000u);                                           \
    h = select(h, 0x7E00u | ((a >> 13) & 0x3FFu), a > 0x7F800000u);                               \
    return convert_ushort##N(h | ((b >> 16) & 0x8000u));                                           \
}                                                                                                  \
inline float##N half_load##N(const __global half *p) {                                             \
    if ((size_t)p % (2 * N)) return half_bits_to_float##N(vload##N(0, (const __global ushort *)p)); \
    return vload_half##N(0, p);                                                                    \
}                                                                                                  \
inline void half_store_rte##N(float##N v, __global half *p) {                                      \
    if ((size_t)p % (2 * N)) vstore##N(float_to_half_bits_rte##N(v), 0, (__global ushort *)p);     \
    else vstore_half##N##_rte(v, 0, p);                                                            \
}
HALF_VECTORS(2)
HALF_VECTORS(4)
HALF_VECTORS(8)
#undef HALF_VECTORS
inline float16 half_load16(const __global half *p) { return (float16)(half_load8(p), half_load8(p + 8)); }
inline void half_store_rte16(float16 v, __global half *p) {
    half_store_rte8(v.lo, p);
    half_store_rte8(v.hi, p + 8);
}

#if defined(STORAGE) && STORAGE == 4
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
typedef double elem;
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
typedef double16 realv;
#define VMASK(m) (convert_long16(m) != 0)   // an int16 lane mask as select() takes it for realv
typedef double8 real8;
typedef double4 real4;
typedef double2 real2;
#define VLOAD(p, i) vload16(0, (p) + (i))
#define VSTORE(p, i, v) vstore16((v), 0, (p) + (i))
#elif defined(STORAGE) && STORAGE == 2
typedef float real;
typedef half elem;
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
typedef float16 realv;
typedef float8 real8;
typedef float4 real4;
typedef float2 real2;
#define VLOAD(p, i) half_load16((p) + (i))
#define VSTORE(p, i, v) half_store_rte16((v), (p) + (i))
#elif defined(STORAGE) && STORAGE == 3
typedef float real;
typedef ushort elem;
inline float bf16_load(ushort b) { return as_float((uint)b << 16); }
inline ushort bf16_round(float v) {
    uint b = as_uint(v);
    if (isnan(v)) return (ushort)((b >> 16) | 0x40u);   // quiet NaN, sign kept
    return (ushort)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}
#define LOAD(p, i) bf16_load((p)[i])
#define STORE(p, i, v) ((p)[i] = bf16_round(v))
typedef float16 realv;
typedef float8 real8;
typedef float4 real4;
typedef float2 real2;
inline float16 bf16_load16(ushort16 b) { return as_float16(convert_uint16(b) << 16); }
inline ushort16 bf16_round16(float16 v) {
    const uint16 b = as_uint16(v);
    const uint16 rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
    return convert_ushort16(select(rounded, (b >> 16) | 0x40u, isnan(v) != 0));
}
#define VLOAD(p, i) bf16_load16(vload16(0, (p) + (i)))
#define VSTORE(p, i, v) vstore16(bf16_round16(v), 0, (p) + (i))
#else
typedef float real;
typedef float elem;
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
typedef float16 realv;
typedef float8 real8;
typedef float4 real4;
typedef float2 real2;
#define VLOAD(p, i) vload16(0, (p) + (i))
#define VSTORE(p, i, v) vstore16((v), 0, (p) + (i))
#endif
#define VLANES 16
#ifndef VMASK
#define VMASK(m) ((m) != 0)
#endif

// horizontal max and sum of a realv
inline real hmax(realv v) {
    const real8 a = fmax(v.lo, v.hi);
    const real4 b = fmax(a.lo, a.hi);
    const real2 c = fmax(b.lo, b.hi);
    return fmax(c.lo, c.hi);
}
inline real hsum(realv v) {
    const real8 a = v.lo + v.hi;
    const real4 b = a.lo + a.hi;
    const real2 c = b.lo + b.hi;
    return c.lo + c.hi;
}

// wordv: 16 words; wordmask: what select() takes to choose between two wordv, and
// to_wordmask turning a char16 comparison result (-1 or 0 per lane) into one.
#if defined(WORD_BYTES) && WORD_BYTES == 8
typedef ulong word;
typedef ulong16 wordv;
typedef long16 wordmask;
#define to_wordmask(m) convert_long16(m)
#elif defined(WORD_BYTES) && WORD_BYTES == 4
typedef uint word;
typedef uint16 wordv;
typedef int16 wordmask;
#define to_wordmask(m) convert_int16(m)
#elif defined(WORD_BYTES) && WORD_BYTES == 2
typedef ushort word;
typedef ushort16 wordv;
typedef short16 wordmask;
#define to_wordmask(m) convert_short16(m)
#else
typedef uchar word;
typedef uchar16 wordv;
typedef char16 wordmask;
#define to_wordmask(m) (m)
#endif
