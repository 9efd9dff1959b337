// conv2d (conv1d as a height of 1), direct: a work item computes one output element, summing its
// group's input channels and the kernel's taps in order in `real` (f32 for 16-bit storage, f64
// for f64), the bias first, and rounds once to the storage type. x and y are stored as `elem`;
// the weights and the bias as `elem` too, or each as float (WEIGHT_F32, BIAS_F32) when x is 16-bit
// or f64 and it is f32, which the op allows.
#ifdef WEIGHT_F32
#define LOADW(p, i) ((real)(p)[i])
typedef float welem;
#else
#define LOADW(p, i) LOAD(p, i)
typedef elem welem;
#endif
#ifdef BIAS_F32
#define LOADB(p, i) ((real)(p)[i])
typedef float belem;
#else
#define LOADB(p, i) LOAD(p, i)
typedef elem belem;
#endif

__kernel void conv2d_direct(__global const elem *x, __global const welem *w, __global const belem *b,
                            __global elem *y, const int has_bias,
                            const int channels, const int height, const int width,
                            const int outs, const int kh, const int kw, const int sh, const int sw,
                            const int dh, const int dw, const int top, const int left,
                            const int oh, const int ow, const int group_in, const int group_out,
                            const int planes) {
    const int ox = get_global_id(0), oy = get_global_id(1), plane = get_global_id(2);
    if (ox >= ow || oy >= oh || plane >= planes) return;
    const int n = plane / outs, o = plane % outs;
    const int first = (o / group_out) * group_in;
    real acc = has_bias ? LOADB(b, o) : (real)0;
    for (int c = 0; c < group_in; ++c) {
        const size_t image = ((size_t)n * channels + first + c) * height;
        const size_t taps = ((size_t)o * group_in + c) * kh;
        for (int i = 0; i < kh; ++i) {
            const int iy = oy * sh - top + i * dh;
            if (iy < 0 || iy >= height) continue;
            const size_t row = (image + iy) * width;
            for (int j = 0; j < kw; ++j) {
                const int ix = ox * sw - left + j * dw;
                if (ix < 0 || ix >= width) continue;
                acc += LOAD(x, row + ix) * LOADW(w, (taps + i) * kw + j);
            }
        }
    }
    STORE(y, ((size_t)plane * oh + oy) * ow + ox, acc);
}
