// vx.conv computed directly, one invocation per output element: for
// depthwise and other narrow groups (few output channels per group) where a
// GEMM tile would be mostly empty. Each invocation reduces Cg*KH*KW taps of
// its own window; neighbouring invocations read neighbouring pixels of the
// same channel (coalesced, and the overlap of their windows hits L1), and the
// weights of a channel are uniform across most of a workgroup.
//
// Specialization constants: 0 = workgroup size, 1 = HAS_BIAS.
// Push constants: see Params (as conv.comp, plus total/base for split
// dispatches). Bindings: 0 = x, 1 = w, 2 = bias, 3 = y, 4.. = epilogue inputs (PW_EPI).
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
    uint total, base;  // output elements, first element of this dispatch
    uint C, H, W;
    uint M, OH, OW;
    uint Cg, Mg;
    uint KH, KW;
    uint SH, SW, DH, DW;
    uint PH, PW;
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
    uint oy = q / p.OW;
    uint ox = q % p.OW;
    int iy0 = int(oy * p.SH) - int(p.PH);
    int ix0 = int(ox * p.SW) - int(p.PW);
    uint KHW = p.KH * p.KW;
    uint x_base = (n * p.C + g * p.Cg) * p.H * p.W;
    uint w_base = oc * p.Cg * KHW;
    afp acc = 0.0;
    for (uint ky = 0u; ky < p.KH; ++ky) {
        int iy = iy0 + int(ky * p.DH);
        if (iy < 0 || iy >= int(p.H)) continue;
        for (uint kx = 0u; kx < p.KW; ++kx) {
            int ix = ix0 + int(kx * p.DW);
            if (ix < 0 || ix >= int(p.W)) continue;
            uint xo = x_base + uint(iy) * p.W + uint(ix);
            uint wo = w_base + ky * p.KW + kx;
            for (uint ci = 0u; ci < p.Cg; ++ci)
                acc = fma(LOAD(x_data, xo + ci * p.H * p.W), LOAD(w_data, wo + ci * KHW), acc);
        }
    }
    if (HAS_BIAS) acc += LOAD(b_data, oc);
    STORE(y_data, idx, PW_APPLY(acc, idx));
}
