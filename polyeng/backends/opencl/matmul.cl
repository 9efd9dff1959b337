// Matrix products for matmul, linear and lstm: a register-blocked GEMM, plus the small
// conversion kernels around it (a transpose into the compute type, element-wise copies
// between storage and compute types).
//
// Types are chosen at build time. Each operand has a storage code:
//   1 f32, 2 f16, 3 bf16, 4 f64, 5 s8, 6 u8, 7 s32, 8 s64, 9 bool
// and ACC_CODE is the accumulator: 1 float, 4 double, 7 uint, 8 ulong, 9 bool (uint 0/1).
// Floats accumulate with fma (16-bit storage in f32); integers in unsigned arithmetic, whose
// wrap-around gives numpy's two's-complement results once truncated to the result's width;
// bool is the OR of ANDs. Conversions follow C: ints to floats round to nearest even.
//
// The GEMM: C[z] = A[z] @ B[z] (+ bias), A (M, K) and B (K, N) row-major with row strides
// lda/ldb and C (M, N) with ldc. Each work item computes RM rows x RV vectors of VW
// consecutive columns: per k it loads RV vectors of B's row k and broadcasts RM values of
// A's column k into RM * RV fused multiply-adds. The last column block is shifted left to
// end at N (the host keeps VW * RV <= N) and writes only the columns its neighbour left;
// rows past M read row M - 1 and are not written. Every output sums k in order 0..K-1
// whatever the tiling. The batch index z (range dimension 2) splits into (z / batch2,
// z % batch2) with a stride per operand and part (0 where an operand is broadcast).
#if ACC_CODE == 4 || A_CODE == 4 || B_CODE == 4 || C_CODE == 4 || BIAS_CODE == 4 || S_CODE == 4
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define MM_CAT_(a, b) a##b
#define MM_CAT(a, b) MM_CAT_(a, b)

#ifndef VW
#define VW 1
#endif

#if ACC_CODE == 1
#define ACC_NAME float
#define MM_ZERO 0.0f
#elif ACC_CODE == 4
#define ACC_NAME double
#define MM_ZERO 0.0
#elif ACC_CODE == 8
#define ACC_NAME ulong
#define MM_ZERO 0ul
#else
#define ACC_NAME uint
#define MM_ZERO 0u
#endif
typedef ACC_NAME acc_t;

// vector and scalar forms of the accumulator type at width VW
#if VW == 1
#define VFLOAT float
#define VUINT uint
#define VINT int
#define VLONG long
#define VUSHORT ushort
#define VUCHAR uchar
#define MM_VLOAD(p) (*(p))
#define MM_VSTORE(v, p) (*(p) = (v))
#define MM_VLOAD_HALF(p) vload_half(0, (p))
#define MM_VSTORE_HALF(v, p) vstore_half_rte((v), 0, (p))
#define MM_CONVERT(type, v) ((type)(v))
#define MM_AS(type, v) MM_CAT(as_, type)(v)
#define MM_TRUTH(v) ((v) != 0)
#else
#define VFLOAT MM_CAT(float, VW)
#define VUINT MM_CAT(uint, VW)
#define VINT MM_CAT(int, VW)
#define VLONG MM_CAT(long, VW)
#define VUSHORT MM_CAT(ushort, VW)
#define VUCHAR MM_CAT(uchar, VW)
#define MM_VLOAD(p) MM_CAT(vload, VW)(0, (p))
#define MM_VSTORE(v, p) MM_CAT(vstore, VW)((v), 0, (p))
// common.cl's f16 vector access (a column block may start at any element)
#define MM_VLOAD_HALF(p) MM_CAT(half_load, VW)(p)
#define MM_VSTORE_HALF(v, p) MM_CAT(half_store_rte, VW)((v), (p))
#define MM_CONVERT(type, v) MM_CAT(convert_, type)(v)
#define MM_AS(type, v) MM_CAT(as_, type)(v)
#define MM_TRUTH(v) (-((v) != (VUCHAR)(0)))   // bool bytes as 0/1 (vector comparisons give -1)
#endif
// acc_t at width VW, by name (for convert_ and as_)
#if VW == 1
#define VT ACC_NAME
#else
#define VT MM_CAT(ACC_NAME, VW)
#endif

// signed integers widened to the accumulator: exact for float accumulators, two's
// complement bits (sign-extended) for unsigned ones
#if ACC_CODE == 8
#define SIGNED_TO_ACC(v) MM_AS(VT, MM_CONVERT(VLONG, v))
#elif ACC_CODE == 7 || ACC_CODE == 9
#define SIGNED_TO_ACC(v) MM_AS(VT, MM_CONVERT(VINT, v))
#else
#define SIGNED_TO_ACC(v) MM_CONVERT(VT, v)
#endif

// element type of each storage code as a buffer is declared (results of integer codes are
// written through unsigned types of the same width: the truncation is then defined)
#define ETYPE_1 float
#define ETYPE_2 half
#define ETYPE_3 ushort
#define ETYPE_4 double
#define ETYPE_5 char
#define ETYPE_6 uchar
#define ETYPE_7 int
#define ETYPE_8 long
#define ETYPE_9 uchar
#define OTYPE_1 float
#define OTYPE_2 half
#define OTYPE_3 ushort
#define OTYPE_4 double
#define OTYPE_5 uchar
#define OTYPE_6 uchar
#define OTYPE_7 uint
#define OTYPE_8 ulong
#define OTYPE_9 uchar

inline float bf16_to_f32(ushort b) { return as_float((uint)b << 16); }
inline ushort f32_to_bf16(float v) {
    uint b = as_uint(v);
    if (isnan(v)) return (ushort)((b >> 16) | 0x40u);   // quiet NaN, sign kept
    return (ushort)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

// scalar loads into acc_t: LD_<code>(pointer, index)
#define LD_1(p, i) ((acc_t)(p)[i])
#define LD_2(p, i) ((acc_t)vload_half((i), (p)))
#define LD_3(p, i) ((acc_t)bf16_to_f32((p)[i]))
#define LD_4(p, i) ((acc_t)(p)[i])
#define LD_5(p, i) ((acc_t)(p)[i])
#define LD_6(p, i) ((acc_t)(p)[i])
#define LD_7(p, i) ((acc_t)(p)[i])
#define LD_8(p, i) ((acc_t)(p)[i])
#define LD_9(p, i) ((acc_t)((p)[i] != 0))
// vector loads of VW consecutive elements into VT: VLD_<code>(address)
#define VLD_1(p) MM_CONVERT(VT, MM_VLOAD(p))
#define VLD_2(p) MM_CONVERT(VT, MM_VLOAD_HALF(p))
#define VLD_3(p) MM_CONVERT(VT, MM_AS(VFLOAT, MM_CONVERT(VUINT, MM_VLOAD(p)) << 16))
#define VLD_4(p) MM_CONVERT(VT, MM_VLOAD(p))
#define VLD_5(p) SIGNED_TO_ACC(MM_VLOAD(p))
#define VLD_6(p) MM_CONVERT(VT, MM_VLOAD(p))
#define VLD_7(p) SIGNED_TO_ACC(MM_VLOAD(p))
#define VLD_8(p) SIGNED_TO_ACC(MM_VLOAD(p))
#define VLD_9(p) MM_CONVERT(VT, MM_TRUTH(MM_VLOAD(p)))
// scalar stores of an acc_t: ST_<code>(pointer, index, value)
#define ST_1(p, i, v) ((p)[i] = (float)(v))
#define ST_2(p, i, v) vstore_half_rte((float)(v), (i), (p))
#define ST_3(p, i, v) ((p)[i] = f32_to_bf16((float)(v)))
#define ST_4(p, i, v) ((p)[i] = (double)(v))
#define ST_5(p, i, v) ((p)[i] = (uchar)(v))
#define ST_6(p, i, v) ((p)[i] = (uchar)(v))
#define ST_7(p, i, v) ((p)[i] = (uint)(v))
#define ST_8(p, i, v) ((p)[i] = (ulong)(v))
#define ST_9(p, i, v) ((p)[i] = (uchar)((v) != MM_ZERO))

#define A_T MM_CAT(ETYPE_, A_CODE)
#define B_T MM_CAT(ETYPE_, B_CODE)
#define LOAD_A(p, i) MM_CAT(LD_, A_CODE)(p, i)
#define VLOAD_B(p) MM_CAT(VLD_, B_CODE)(p)
#ifdef C_CODE
#define C_T MM_CAT(OTYPE_, C_CODE)
#define STORE_C(p, i, v) MM_CAT(ST_, C_CODE)(p, i, v)
#endif
#ifdef BIAS_CODE
#define BIAS_T MM_CAT(ETYPE_, BIAS_CODE)
#define VLOAD_BIAS(p) MM_CAT(VLD_, BIAS_CODE)(p)
#else
#define BIAS_T acc_t
#endif
#ifdef S_CODE
#define S_T MM_CAT(ETYPE_, S_CODE)
#define LOAD_S(p, i) MM_CAT(LD_, S_CODE)(p, i)
#endif

#if ACC_CODE == 9
#define MAC(a, b, acc) ((acc) | ((a) & (b)))
#elif ACC_CODE == 1 || ACC_CODE == 4
#define MAC(a, b, acc) fma((a), (b), (acc))
#else
#define MAC(a, b, acc) ((acc) + (a) * (b))
#endif

#ifdef C_CODE
// VW results stored to p[0 .. VW-1] in C's storage
inline void store_vector(__global C_T *p, VT v) {
#if C_CODE == 1 || C_CODE == 4 || (C_CODE == 7 && VW > 1) || (C_CODE == 8 && VW > 1)
    MM_VSTORE(v, p);
#elif C_CODE == 2
    MM_VSTORE_HALF(MM_CONVERT(VFLOAT, v), p);
#elif C_CODE == 3 && VW > 1
    VUINT b = MM_AS(VUINT, MM_CONVERT(VFLOAT, v));
    VUINT rounded = (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
    VUINT quiet = (b >> 16) | 0x40u;
    MM_VSTORE(MM_CONVERT(VUSHORT, select(rounded, quiet, MM_AS(VUINT, isnan(MM_CONVERT(VFLOAT, v))))), p);
#elif (C_CODE == 5 || C_CODE == 6) && VW > 1
    MM_VSTORE(MM_CONVERT(VUCHAR, v), p);
#elif C_CODE == 9 && VW > 1
    MM_VSTORE(MM_CONVERT(VUCHAR, -(v != (VT)(MM_ZERO))), p);
#else
    STORE_C(p, 0, v);
#endif
}
#endif

#ifndef RM
#define RM 1
#endif
#ifndef RV
#define RV 1
#endif
#ifndef COLS_FAST
#define COLS_FAST 0
#endif

#if defined(C_CODE) && !defined(S_CODE)
__kernel void gemm(__global const A_T *a, __global const B_T *b, __global C_T *c,
                   __global const BIAS_T *bias,
                   const ulong M, const ulong N, const ulong K,
                   const ulong lda, const ulong ldb, const ulong ldc,
                   const ulong a_off, const ulong b_off, const ulong c_off, const ulong batch2,
                   const ulong sa1, const ulong sa2, const ulong sb1, const ulong sb2,
                   const ulong sc1, const ulong sc2) {
#if COLS_FAST
    const ulong col_block = get_global_id(0), row_block = get_global_id(1);
#else
    const ulong row_block = get_global_id(0), col_block = get_global_id(1);
#endif
    const ulong z = get_global_id(2);
    const ulong start = col_block * (VW * RV);   // first column this item writes
    const ulong mb = row_block * RM;
    if (start >= N || mb >= M) return;
    const ulong nb = start + VW * RV <= N ? start : N - VW * RV;   // first column it computes
    const ulong z1 = z / batch2, z2 = z - z1 * batch2;
    __global const A_T *arow[RM];
    #pragma unroll
    for (int r = 0; r < RM; ++r)
        arow[r] = a + a_off + z1 * sa1 + z2 * sa2 + min(mb + r, M - 1) * lda;
    __global const B_T *bp = b + b_off + z1 * sb1 + z2 * sb2 + nb;
    VT acc[RM][RV];
    #pragma unroll
    for (int r = 0; r < RM; ++r) {
        #pragma unroll
        for (int v = 0; v < RV; ++v) acc[r][v] = (VT)(MM_ZERO);
    }
    for (ulong k = 0; k < K; ++k) {
        VT bv[RV];
        #pragma unroll
        for (int v = 0; v < RV; ++v) bv[v] = VLOAD_B(bp + v * VW);
        bp += ldb;
        #pragma unroll
        for (int r = 0; r < RM; ++r) {
            const VT av = (VT)(LOAD_A(arow[r], k));
            #pragma unroll
            for (int v = 0; v < RV; ++v) acc[r][v] = MAC(av, bv[v], acc[r][v]);
        }
    }
#ifdef BIAS_CODE
    #pragma unroll
    for (int v = 0; v < RV; ++v) {
        const VT bias_v = VLOAD_BIAS(bias + nb + v * VW);
        #pragma unroll
        for (int r = 0; r < RM; ++r) acc[r][v] += bias_v;
    }
#endif
    __global C_T *cp = c + c_off + z1 * sc1 + z2 * sc2 + nb;
    #pragma unroll
    for (int r = 0; r < RM; ++r) {
        if (mb + r >= M) break;
        __global C_T *row = cp + (mb + r) * ldc;
        if (nb == start) {
            #pragma unroll
            for (int v = 0; v < RV; ++v) store_vector(row + v * VW, acc[r][v]);
        } else {   // the shifted last block: only the columns from `start` on are its own
            #pragma unroll
            for (int v = 0; v < RV; ++v) {
                acc_t lanes[VW];
                MM_VSTORE(acc[r][v], lanes);
                for (int j = 0; j < VW; ++j) {
                    const ulong col = nb + v * VW + j;
                    if (col >= start) STORE_C(row, v * VW + j, lanes[j]);
                }
            }
        }
    }
}
#endif

// dst[dst_off + i] (+)= src[i] converted to the accumulator type, then stored in C's code
// (the copies between storage and compute types around the lstm recurrence)
#if defined(C_CODE) && defined(S_CODE)
__kernel void convert_copy(__global const S_T *src, __global C_T *dst, const ulong n, const ulong dst_off,
                           const int accumulate) {
    const ulong i = get_global_id(0);
    if (i >= n) return;
    acc_t v = LOAD_S(src, i);
    if (accumulate) v += MM_CAT(LD_, C_CODE)(dst, dst_off + i);
    STORE_C(dst, dst_off + i, v);
}
#endif

// dst[dst_off + j * ld_dst + i] = src[i * cols + j]: a (rows, cols) matrix transposed into
// the accumulator type, into a column range of a wider matrix (the GEMM's B from a weight
// stored (out_features, in_features))
#if defined(S_CODE) && !defined(C_CODE)
__kernel void transpose(__global const S_T *src, __global acc_t *dst, const ulong rows, const ulong cols,
                        const ulong ld_dst, const ulong dst_off) {
    const ulong i = get_global_id(0), j = get_global_id(1);
    if (i >= rows || j >= cols) return;
    dst[dst_off + j * ld_dst + i] = LOAD_S(src, i * cols + j);
}
#endif
