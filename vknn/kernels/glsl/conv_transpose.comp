// vx.conv_transpose (1-D/2-D, grouped, strided, dilated, padded, output
// padding) as a gather, one invocation per output element: output pixel o
// receives input pixel i through tap k exactly when o + pad = i*stride +
// k*dilation. Most transposed convs never get here (subpixel-conv-transpose
// rewrites them into a conv + depth-to-space); this covers the rest.
//
// Specialization constants: 0 = workgroup size, 1 = HAS_BIAS.
// Bindings: 0 = x [N, C, H, W], 1 = w [C, Mg, KH, KW], 2 = bias, 3 = y,
// 4.. = epilogue inputs (PW_EPI).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool HAS_BIAS = false;

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) readonly buffer Wt { sfp w_data[]; };
layout(std430, binding = 2) readonly buffer Bias { sfp b_data[]; };
layout(std430, binding = 3) writeonly buffer Y { sfp y_data[]; };

#include "pw_epilogue.glsl"

layout(push_constant) uniform Params {
    uint total, base;
    uint C, H, W;
    uint M, OH, OW;
    uint Cg, Mg;
    uint KH, KW;
    uint SH, SW, DH, DW;
    uint PH, PW;
    uint c_begin, w_cg, m_begin;  // conv_direct.comp's slicing (unused here)
} p;

void main() {
    uint idx = p.base + gl_GlobalInvocationID.x;
    if (idx >= p.total) return;
    uint P = p.OH * p.OW;
    uint q = idx % P;
    uint nc = idx / P;
    uint oc = nc % p.M;
    uint n = nc / p.M;
    uint g = oc / p.Mg;
    uint m = oc % p.Mg;
    int oy = int(q / p.OW) + int(p.PH);
    int ox = int(q % p.OW) + int(p.PW);
    uint KHW = p.KH * p.KW;
    uint HW = p.H * p.W;
    afp acc = 0.0;
    for (uint ky = 0u; ky < p.KH; ++ky) {
        int ty = oy - int(ky * p.DH);
        if (ty < 0 || ty % int(p.SH) != 0) continue;
        int iy = ty / int(p.SH);
        if (iy >= int(p.H)) continue;
        for (uint kx = 0u; kx < p.KW; ++kx) {
            int tx = ox - int(kx * p.DW);
            if (tx < 0 || tx % int(p.SW) != 0) continue;
            int ix = tx / int(p.SW);
            if (ix >= int(p.W)) continue;
            for (uint ci = 0u; ci < p.Cg; ++ci) {
                uint c = g * p.Cg + ci;
                afp xv = LOAD(x_data, (n * p.C + c) * HW + uint(iy) * p.W + uint(ix));
                afp wv = LOAD(w_data, (c * p.Mg + m) * KHW + ky * p.KW + kx);
                acc = fma(xv, wv, acc);
            }
        }
    }
    if (HAS_BIAS) acc += LOAD(b_data, oc);
    STORE(y_data, idx, PW_APPLY(acc, idx));
}
