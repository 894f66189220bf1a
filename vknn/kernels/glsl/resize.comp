// vx.resize (nearest, N-linear) over 6 dims, driven by per-axis tables the
// host computes with the CPU oracle's f32 coordinate arithmetic, so nearest
// ties (x.5) round exactly as the oracle's do. Entry o of axis k's table
// (at toff[k] + 3 o) is (i0, i1, bits of the weight of i1). Nearest copies
// x[i0...] bit-exactly; linear sums the 2^m corners of the m axes in
// lin_mask with product weights (fp32 accumulation).
// Specialization constants: 0 = workgroup size, 1 = LINEAR (bool).
// Push constants: n, base, lin_mask, odims[6], istr[6], toff[6].
// Bindings: 0 = x, 1 = table (int32 words), 2 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "movement.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool LINEAR = false;

// Two views of each tensor: raw words for nearest, numbers for linear.
layout(std430, binding = 0) readonly buffer X { elem x_data[]; };
layout(std430, binding = 0) readonly buffer XF { sfp xf_data[]; };
layout(std430, binding = 1) readonly buffer T { int tab[]; };
layout(std430, binding = 2) writeonly buffer Y { elem y_data[]; };
layout(std430, binding = 2) writeonly buffer YF { sfp yf_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    uint lin_mask;
    uint odims[6];
    int istr[6];
    int toff[6];
} p;

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    int i0[6];
    int step1[6];
    float w1[6];
    uint rem = i;
    int so = 0;
    for (int k = 5; k >= 0; --k) {
        uint q = rem / p.odims[k];
        int t = p.toff[k] + 3 * int(rem - q * p.odims[k]);
        rem = q;
        i0[k] = tab[t];
        step1[k] = (tab[t + 1] - tab[t]) * p.istr[k];
        w1[k] = intBitsToFloat(tab[t + 2]);
        so += i0[k] * p.istr[k];
    }
    if (!LINEAR) {
        y_data[i] = x_data[so];
        return;
    }
    // Enumerate the subsets s of lin_mask: bit k set = take tap i1 on axis k.
    float acc = 0.0;
    uint s = p.lin_mask;
    while (true) {
        float w = 1.0;
        int off = so;
        for (int k = 0; k < 6; ++k) {
            if ((p.lin_mask & (1u << k)) == 0u) continue;
            if ((s & (1u << k)) != 0u) {
                w *= w1[k];
                off += step1[k];
            } else {
                w *= 1.0 - w1[k];
            }
        }
        acc += w * LOAD(xf_data, off);
        if (s == 0u) break;
        s = (s - 1u) & p.lin_mask;
    }
    STORE(yf_data, i, acc);
}
