// Storage access shared by every polyeng OpenCL kernel, chosen at build time.
// STORAGE (float kernels): 1 f32, 2 f16 (vload_half / vstore_half_rte: no cl_khr_fp16
// needed), 3 bf16 (16-bit patterns widened to f32, stored with round-to-nearest-even),
// 4 f64 (only built when the device reports cl_khr_fp64). `real` is the compute type.
// WORD_BYTES (data movement kernels): elements moved as unsigned words of that size.
// VLOAD(p, i) / VSTORE(p, i, v) move the 16 elements from element offset i (no alignment
// needed) as a `realv` (16 lanes of `real`): kernels that walk contiguous runs use them so
// the SIMD width does not depend on the compiler vectorizing across work items.
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
#define VLOAD(p, i) vload_half16(0, (p) + (i))
#define VSTORE(p, i, v) vstore_half16_rte((v), 0, (p) + (i))
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
