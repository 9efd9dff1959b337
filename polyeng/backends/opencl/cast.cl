// cast: elements converted with integer arithmetic on IEEE bit patterns, so the result is the
// same on every device whatever its float conversions, denormal mode or fp64 support. SRC (the stored input) and DST (the output) are chosen at build time:
//   SRC 1 f32, 2 f16, 3 bf16, 4 f64, 5 int8, 6 uint8, 7 int32, 8 int64, 9 bool
//   DST 1 f32, 2 f16, 3 bf16, 4 f64  (never DST == SRC: that is a copy on the host side)
// Every result is rounded once to nearest even. Sources wider than f32's 24-bit significand
// (f64, int32, int64) go to a 16-bit type through f32 rounded to odd (the last bit sticky),
// which equals rounding them directly since f32 keeps more than two bits beyond either
// 16-bit format. NaN stays NaN (sign and leading payload kept, quiet); Inf stays Inf;
// overflow becomes Inf; the sign of zero is kept.

// The magnitude m * 2**e (m != 0) as the bit pattern of a binary format with P significand
// bits and exponent bias B: rounded to nearest even, or to odd when `odd`; Inf on overflow.
// For shifts of 64 and more m must be below 2**63 (it is: f64 significands have 53 bits).
inline ulong round_magnitude(ulong m, int e, int P, int B, int odd) {
    const int F = P - 1;
    const int lead = 63 - (int)clz(m) + e;        // exponent of m's leading bit
    const int q = max(lead, 1 - B) - F;           // exponent of the result's last bit
    const int shift = q - e;
    ulong mant;
    if (shift <= 0) {
        mant = m << (-shift);                     // exact
    } else if (shift >= 64) {
        mant = odd ? 1 : 0;                       // below half of the smallest subnormal
    } else {
        mant = m >> shift;
        const ulong rem = m & ((1UL << shift) - 1UL), halfway = 1UL << (shift - 1);
        if (odd)
            mant |= (ulong)(rem != 0);
        else
            mant += (ulong)(rem > halfway || (rem == halfway && (mant & 1UL)));
    }
    // the implicit bit in `mant` adds one to the exponent field; a carry to 2**P adds another
    const ulong bits = ((ulong)(q + F + B - 1) << F) + mant;
    return min(bits, (ulong)(2 * B + 1) << F);
}

// An integer's sign and magnitude.
inline ulong magnitude(long v) { return v < 0 ? (ulong)0 - (ulong)v : (ulong)v; }

inline uint integer_to_f32(long v, int odd) {
    if (v == 0) return 0;
    return (v < 0 ? 0x80000000u : 0u) | (uint)round_magnitude(magnitude(v), 0, 24, 127, odd);
}

inline ulong integer_to_f64(long v) {
    if (v == 0) return 0;
    return (v < 0 ? 0x8000000000000000UL : 0UL) | round_magnitude(magnitude(v), 0, 53, 1023, 0);
}

inline uint f16_to_f32(ushort h) {
    const uint s = (uint)(h & 0x8000u) << 16, a = h & 0x7FFFu;
    if (a >= 0x7C00u)   // Inf, or NaN made quiet
        return s | 0x7F800000u | ((a & 0x3FFu) << 13) | (a > 0x7C00u ? 0x400000u : 0u);
    if (a == 0) return s;
    const uint E = a >> 10;
    const ulong m = E ? (ulong)((a & 0x3FFu) | 0x400u) : (ulong)a;
    return s | (uint)round_magnitude(m, E ? (int)E - 25 : -24, 24, 127, 0);
}

inline uint f64_to_f32(ulong b, int odd) {
    const uint s = (uint)(b >> 32) & 0x80000000u;
    const ulong a = b & 0x7FFFFFFFFFFFFFFFUL;
    if (a > 0x7FF0000000000000UL) return s | 0x7FC00000u | (uint)((a >> 29) & 0x7FFFFFu);
    if (a == 0x7FF0000000000000UL) return s | 0x7F800000u;
    if (a == 0) return s;
    const uint E = (uint)(a >> 52);
    const ulong m = E ? (a & 0xFFFFFFFFFFFFFUL) | (1UL << 52) : a;
    return s | (uint)round_magnitude(m, E ? (int)E - 1075 : -1074, 24, 127, odd);
}

inline ushort f32_to_f16(uint b) {
    const uint s = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (ushort)(s | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a == 0x7F800000u) return (ushort)(s | 0x7C00u);
    if (a == 0) return (ushort)s;
    const uint E = a >> 23;
    const ulong m = E ? (ulong)((a & 0x7FFFFFu) | 0x800000u) : (ulong)a;
    return (ushort)(s | (uint)round_magnitude(m, E ? (int)E - 150 : -149, 11, 15, 0));
}

inline ushort f32_to_bf16(uint b) {
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return (ushort)((b >> 16) | 0x40u);   // quiet NaN
    return (ushort)((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

inline ulong f32_to_f64(uint b) {
    const ulong s = (ulong)(b >> 31) << 63;
    const uint a = b & 0x7FFFFFFFu;
    if (a >= 0x7F800000u)
        return s | 0x7FF0000000000000UL | ((ulong)(a & 0x7FFFFFu) << 29) |
               (a > 0x7F800000u ? 0x8000000000000UL : 0UL);
    if (a == 0) return s;
    const uint E = a >> 23;
    const ulong m = E ? (ulong)((a & 0x7FFFFFu) | 0x800000u) : (ulong)a;
    return s | round_magnitude(m, E ? (int)E - 150 : -149, 53, 1023, 0);
}

// the input element type, and for sources f32 holds exactly, their f32 bit pattern
#if SRC == 1
typedef uint src_t;
#define EXACT_F32(v) (v)
#elif SRC == 2
typedef ushort src_t;
#define EXACT_F32(v) f16_to_f32(v)
#elif SRC == 3
typedef ushort src_t;
#define EXACT_F32(v) ((uint)(v) << 16)
#elif SRC == 4
typedef ulong src_t;
#define WIDE_F32(v, odd) f64_to_f32((v), (odd))
#elif SRC == 5
typedef char src_t;
#define EXACT_F32(v) integer_to_f32((long)(v), 0)
#elif SRC == 6
typedef uchar src_t;
#define EXACT_F32(v) integer_to_f32((long)(v), 0)
#elif SRC == 7
typedef int src_t;
#define WIDE_F32(v, odd) integer_to_f32((long)(v), (odd))
#define INTEGER 1
#elif SRC == 8
typedef long src_t;
#define WIDE_F32(v, odd) integer_to_f32((v), (odd))
#define INTEGER 1
#elif SRC == 9
typedef uchar src_t;
#define EXACT_F32(v) ((v) ? 0x3F800000u : 0u)
#else
#error "unknown SRC"
#endif

#ifdef WIDE_F32
#define F32_NEAREST(v) WIDE_F32(v, 0)
#define F32_FOR_16_BITS(v) WIDE_F32(v, 1)
#else
#define F32_NEAREST(v) EXACT_F32(v)
#define F32_FOR_16_BITS(v) EXACT_F32(v)
#endif

#if DST == 1
typedef uint dst_t;
#define CONVERT(v) F32_NEAREST(v)
#elif DST == 2
typedef ushort dst_t;
#define CONVERT(v) f32_to_f16(F32_FOR_16_BITS(v))
#elif DST == 3
typedef ushort dst_t;
#define CONVERT(v) f32_to_bf16(F32_FOR_16_BITS(v))
#elif DST == 4 && defined(INTEGER)
typedef ulong dst_t;
#define CONVERT(v) integer_to_f64((long)(v))
#elif DST == 4 && defined(EXACT_F32)
typedef ulong dst_t;
#define CONVERT(v) f32_to_f64(EXACT_F32(v))
#else
#error "unsupported SRC/DST pair"
#endif

// One work item converts a run of RUN adjacent elements: the loop over the run vectorizes, and
// per-item overhead (which a CPU device pays for every work item) is paid once per run.
#define RUN 16

__kernel void cast(__global const src_t *restrict x, __global dst_t *restrict y, const ulong n) {
    const size_t start = get_global_id(0) * RUN;
    if (start >= n) return;
    const size_t end = min(start + RUN, (size_t)n);
    for (size_t i = start; i < end; ++i)
        y[i] = CONVERT(x[i]);
}
