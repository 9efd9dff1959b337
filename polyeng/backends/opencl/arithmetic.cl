// add, sub, mul, div and pow: y = OP(a, b), both operands already in the output's dtype.
// A work item takes `per` runs of 16 elements (VLOAD/VSTORE), the last elements one by one:
// many elements an item on a CPU device, where each work group costs a scheduling step, one run
// on a GPU. 64-bit offsets.
//
// Float storage (STORAGE) computes in `real` and rounds once. Integer storage (ITYPE, the
// unsigned type of the element's width) wraps around as numpy does: unsigned arithmetic is
// defined modulo 2^bits and has the bits of the signed result.
#define V16_(t) t##16
#define V16(t) V16_(t)
#ifdef ITYPE
typedef ITYPE stored;
typedef ITYPE num;
typedef V16(ITYPE) numv;
#define NLOAD(p, i) ((p)[i])
#define NSTORE(p, i, v) ((p)[i] = (num)(v))
#define NVLOAD(p, i) vload16(0, (p) + (i))
#define NVSTORE(p, i, v) vstore16((v), 0, (p) + (i))
#else
typedef elem stored;
typedef real num;
typedef realv numv;
#define NLOAD(p, i) LOAD(p, i)
#define NSTORE(p, i, v) STORE(p, i, v)
#define NVLOAD(p, i) VLOAD(p, i)
#define NVSTORE(p, i, v) VSTORE(p, i, v)
#endif

#if defined(OP_ADD)
#define OP(a, b) ((a) + (b))
#elif defined(OP_SUB)
#define OP(a, b) ((a) - (b))
#elif defined(OP_MUL)
#define OP(a, b) ((a) * (b))
#elif defined(OP_DIV)
#define OP(a, b) ((a) / (b))
#elif defined(OP_POW)
#define OP(a, b) pow((a), (b))
#if defined(STORAGE) && STORAGE == 4
// PoCL's double8 and double16 pow give a wrong value in one lane when another lane is a
// special case (0 ** -1, nan ** 0): four double4 pows, which are right.
inline realv pow16(realv a, realv b) {
    realv r;
    r.s0123 = pow(a.s0123, b.s0123);
    r.s4567 = pow(a.s4567, b.s4567);
    r.s89ab = pow(a.s89ab, b.s89ab);
    r.scdef = pow(a.scdef, b.scdef);
    return r;
}
#define OPV(a, b) pow16((a), (b))
#endif
#endif
#ifndef OPV
#define OPV(a, b) OP(a, b)
#endif

// Operands of the output's own shape: one flat run.
__kernel void binary_flat(__global const stored *a, __global const stored *b, __global stored *y, const ulong n,
                          const ulong per) {
    const size_t first = get_global_id(0) * per * 16;
    if (first >= n) return;
    const size_t last = min((size_t)n, first + (size_t)per * 16);
    size_t i = first;
    for (; i + 16 <= last; i += 16) NVSTORE(y, i, OPV(NVLOAD(a, i), NVLOAD(b, i)));
    for (; i < last; ++i) {
        const num u = NLOAD(a, i), v = NLOAD(b, i);
        NSTORE(y, i, OP(u, v));
    }
}

// Broadcasting: each operand is read through its own strides (0 along broadcast axes) in the
// layout of _strided.py: i < width (range dimension 0, `per` runs of 16 a work item), j < height
// (dimension 1), r < rows (dimension 2). Along the width every operand steps by 0 (one value for
// all 16 lanes) or 1 (VLOAD), and the output by 1.
inline numv lanes16(__global const stored *p, long at, long step) {
    return step ? NVLOAD(p, at) : (numv)(NLOAD(p, at));
}

__kernel void binary16(__global const stored *a, __global const stored *b, __global stored *y,
                       const ulong width, const ulong height, const ulong rows, const ulong per,
                       const long as0, const long as1, __global const long *ab,
                       const long bs0, const long bs1, __global const long *bb,
                       const long ys0, const long ys1, __global const long *yb) {
    const size_t first = get_global_id(0) * per * 16, j = get_global_id(1), r = get_global_id(2);
    if (first >= width || j >= height || r >= rows) return;
    const size_t last = min((size_t)width, first + (size_t)per * 16);
    const long ia = ab[r] + (long)j * as1, ib = bb[r] + (long)j * bs1, o = yb[r] + (long)j * ys1;
    size_t i = first;
    for (; i + 16 <= last; i += 16)
        NVSTORE(y, o + (long)i, OPV(lanes16(a, ia + (long)i * as0, as0), lanes16(b, ib + (long)i * bs0, bs0)));
    for (; i < last; ++i) {
        const num u = NLOAD(a, ia + (long)i * as0), v = NLOAD(b, ib + (long)i * bs0);
        NSTORE(y, o + (long)i, OP(u, v));
    }
}
