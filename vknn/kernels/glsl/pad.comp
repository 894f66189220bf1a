// vx.pad over 6 dims (the host pads the rank with leading 1s). Per dim the
// input window is [lo, lo + wlen) (negative pads crop: the host folds the
// crop into sbase), and output coordinate c reads window coordinate
// x = c - pbeg, mapped inside [0, wlen) by MODE; numpy's reflect repeats
// its reflection when a pad is wider than the window, as here.
// Specialization constants: 0 = workgroup size, 1 = MODE (codes below).
// Push constants: n, base, sbase, fill (the constant's storage bits),
// odims[6], wlen[6], pbeg[6], istr[6].
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "movement.glsl"

#define PAD_CONSTANT 0
#define PAD_REFLECT 1
#define PAD_EDGE 2
#define PAD_WRAP 3

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int MODE = 0;

layout(std430, binding = 0) readonly buffer X { elem x_data[]; };
layout(std430, binding = 1) writeonly buffer Y { elem y_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    int sbase;
    uint fill;
    uint odims[6];
    int wlen[6];
    int pbeg[6];
    int istr[6];
} p;

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint rem = i;
    int so = p.sbase;
    bool outside = false;
    for (int k = 5; k >= 0; --k) {
        uint q = rem / p.odims[k];
        int x = int(rem - q * p.odims[k]) - p.pbeg[k];
        rem = q;
        int len = p.wlen[k];
        if (x < 0 || x >= len) {
            if (MODE == PAD_CONSTANT) {
                outside = true;
            } else if (MODE == PAD_EDGE) {
                x = clamp(x, 0, len - 1);
            } else if (MODE == PAD_REFLECT) {
                if (len == 1) {
                    x = 0;
                } else {
                    int period = 2 * (len - 1);
                    x = vknn_pmod(x, period);
                    if (x >= len) x = period - x;
                }
            } else {
                x = vknn_pmod(x, len);
            }
        }
        so += x * p.istr[k];
    }
    // if/else, not ?: : a select of 16-bit values needs the Int16 capability.
    if (outside) {
#if VKNN_I64_WORDS
        y_data[i] = uvec2(p.fill, uint(int(p.fill) >> 31));  // sign-extended low word
#else
        y_data[i] = elem(p.fill);
#endif
    } else {
        y_data[i] = x_data[so];
    }
}
