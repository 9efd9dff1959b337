// Storage access shared by every polyeng OpenCL kernel, chosen at build time.
// STORAGE (float kernels): 1 f32, 2 f16 (vload_half / vstore_half_rte: no cl_khr_fp16
// needed), 3 bf16 (16-bit patterns widened to f32, stored with round-to-nearest-even),
// 4 f64 (only built when the device reports cl_khr_fp64). `real` is the compute type.
// WORD_BYTES (data movement kernels): elements moved as unsigned words of that size.
#if defined(STORAGE) && STORAGE == 4
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
typedef double elem;
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#elif defined(STORAGE) && STORAGE == 2
typedef float real;
typedef half elem;
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((v), (i), (p))
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
#else
typedef float real;
typedef float elem;
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#endif

#if defined(WORD_BYTES) && WORD_BYTES == 8
typedef ulong word;
#elif defined(WORD_BYTES) && WORD_BYTES == 4
typedef uint word;
#elif defined(WORD_BYTES) && WORD_BYTES == 2
typedef ushort word;
#else
typedef uchar word;
#endif
