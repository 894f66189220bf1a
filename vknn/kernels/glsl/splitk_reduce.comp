// The second pass of a split-K GEMM (conv.comp / matmul.comp built with
// VKNN_SPLITK=1): each of `splits` workgroup slices of K wrote its fp32
// partial products to part[s * total + idx] (idx = the element's row-major
// index in Y); this pass sums them in a fixed order, adds the bias (conv) or
// alpha/beta*C (gemm), applies the fused epilogue and stores Y.
//
// Specialization constants: 0 = workgroup size, 1 = KIND (0 = plain sum,
// 1 = conv bias per channel, 2 = gemm alpha*acc + beta*C(m, n)), 2 = PACKED
// (conv: Y and the partials are NC4HW4, `vulkan/layouts.py`; n counts the
// padded elements, whose lanes exit at once).
// Push constants: see Params (n, base: flat_dispatches' element range).
// Bindings: 0 = partials (fp32), 1 = bias / C (any buffer when unused),
// 2 = y, 3.. = epilogue inputs (PW_EPI).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "precision.glsl"
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KIND = 0u;
layout(constant_id = 2) const bool PACKED = false;

layout(std430, binding = 0) readonly buffer Part { float part[]; };
layout(std430, binding = 1) readonly buffer Bias { sfp b_data[]; };
layout(std430, binding = 2) writeonly buffer Y { sfp y_data[]; };

#include "pw_epilogue.glsl"

layout(push_constant) uniform Params {
    uint n, base;       // elements of Y, first element of this dispatch
    uint splits;        // partial slices
    uint inner, chans;  // conv: channel = idx / inner % chans; gemm: N, M
    uint c_sm, c_sn;    // gemm: C(m, n) = b_data[m*c_sm + n*c_sn]
    float alpha, beta;
} p;

void main() {
    uint idx = p.base + gl_GlobalInvocationID.x;
    if (idx >= p.n) return;
    uint ch = (idx / p.inner) % p.chans;  // conv: idx = (n * chans + ch) * inner + q
    if (PACKED) {
        uint blk = (idx >> 2) / p.inner;
        ch = (blk % ((p.chans + 3u) >> 2)) * 4u + (idx & 3u);
        if (ch >= p.chans) return;
    }
    float acc = 0.0;
    for (uint s = 0u; s < p.splits; ++s) acc += part[s * p.n + idx];
    afp v = acc;
    if (KIND == 1u) {
        v += LOAD(b_data, ch);
    } else if (KIND == 2u) {
        uint col = idx % p.inner;
        uint row = (idx / p.inner) % p.chans;
        v = p.alpha * acc + p.beta * LOAD(b_data, row * p.c_sm + col * p.c_sn);
    } else {
        v = p.alpha * acc;
    }
    STORE(y_data, idx, PW_APPLY(v, idx));
}
