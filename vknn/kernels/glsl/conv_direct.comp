// vx.conv computed directly, one invocation per output element: for
// depthwise and other narrow groups (few output channels per group) where a
// GEMM tile would be mostly empty. Each invocation reduces Cg*KH*KW taps of
// its own window; neighbouring invocations read neighbouring pixels of the
// same channel (coalesced, and the overlap of their windows hits L1), and the
// weights of a channel are uniform across most of a workgroup.
//
// NC4HW4 (PACKED, `vulkan/layouts.py`): x and y are [N, C/4, H, W, 4] and
// the invocations run in y's packed order (the 4 channels of a pixel are
// neighbours, so each tap's loads of a warp are one contiguous run); the
// padded lanes of the last channel block exit at once. The weight is then
// OHWI ([M, KH, KW, Cg]), as the executor uploads it for packed convs.
//
// Specialization constants: 0 = workgroup size, 1 = HAS_BIAS, 2 = PACKED.
// Push constants: see Params (as conv.comp, plus total/base for split
// dispatches). Bindings: 0 = x, 1 = w, 2 = bias, 3 = y, 4.. = epilogue inputs (PW_EPI).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool HAS_BIAS = false;
layout(constant_id = 2) const bool PACKED = false;

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) readonly buffer Wt { sfp w_data[]; };
layout(std430, binding = 2) readonly buffer Bias { sfp b_data[]; };
#if VKNN_CONV_ACCUM
layout(std430, binding = 3) buffer Y { sfp y_data[]; };
#else
layout(std430, binding = 3) writeonly buffer Y { sfp y_data[]; };
#endif

#include "pw_epilogue.glsl"

layout(push_constant) uniform Params {
    uint total, base;  // output elements, first element of this dispatch
    uint C, H, W;
    uint M, OH, OW;
    uint Cg, Mg;
    uint KH, KW;
    uint SH, SW, DH, DW;
    uint PH, PW;
    // A conv split past maxStorageBufferRange (kernels/conv.py, _record_sliced):
    // x holds input channels [c_begin, c_begin + C) and y output channels
    // [m_begin, m_begin + M) of a conv whose weight has w_cg channels per
    // output; VKNN_CONV_ACCUM adds to y (every slice after the first).
    uint c_begin, w_cg, m_begin;
} p;

void main() {
    uint idx = p.base + gl_GlobalInvocationID.x;
    if (idx >= p.total) return;
    uint P = p.OH * p.OW;
    uint q, oc, n;
    if (PACKED) {  // total = N * ceil(M/4) * P * 4
        uint rest = idx >> 2;
        q = rest % P;
        uint blk = rest / P;
        uint m4 = (p.M + 3u) >> 2;
        oc = (blk % m4) * 4u + (idx & 3u);
        n = blk / m4;
        if (oc >= p.M) return;
    } else {
        q = idx % P;
        uint nc = idx / P;
        oc = nc % p.M;
        n = nc / p.M;
    }
    uint g = oc / p.Mg;
    uint oy = q / p.OW;
    uint ox = q % p.OW;
    int iy0 = int(oy * p.SH) - int(p.PH);
    int ix0 = int(ox * p.SW) - int(p.PW);
    uint KHW = p.KH * p.KW;
    uint HW = p.H * p.W;
    uint c0 = g * p.Cg;
    uint x_base = (n * p.C + c0) * HW;
    uint ocw = p.m_begin + oc;  // the output channel in the weight and bias
    uint w_base = (ocw * p.w_cg + p.c_begin) * KHW;
#if VKNN_CONV_ACCUM
    afp acc = LOAD(y_data, idx);
#else
    afp acc = 0.0;
#endif
    for (uint ky = 0u; ky < p.KH; ++ky) {
        int iy = iy0 + int(ky * p.DH);
        if (iy < 0 || iy >= int(p.H)) continue;
        for (uint kx = 0u; kx < p.KW; ++kx) {
            int ix = ix0 + int(kx * p.DW);
            if (ix < 0 || ix >= int(p.W)) continue;
            uint sp = uint(iy) * p.W + uint(ix);
            uint wo = w_base + ky * p.KW + kx;
            if (PACKED) {
                uint c4 = (p.C + 3u) >> 2;
                for (uint ci = 0u; ci < p.Cg; ++ci) {
                    uint c = c0 + ci;
                    uint xo = (((n * c4 + (c >> 2)) * HW + sp) << 2) + (c & 3u);
                    uint wi = ocw * p.w_cg * KHW + (ky * p.KW + kx) * p.w_cg + ci;
                    acc = fma(LOAD(x_data, xo), LOAD(w_data, wi), acc);
                }
            } else {
                uint xo = x_base + sp;
                for (uint ci = 0u; ci < p.Cg; ++ci)
                    acc = fma(LOAD(x_data, xo + ci * HW), LOAD(w_data, wo + ci * KHW), acc);
            }
        }
    }
    if (HAS_BIAS) acc += LOAD(b_data, ocw);
    STORE(y_data, idx, PW_APPLY(acc, idx));  // idx: y's own (packed or flat) order
}
