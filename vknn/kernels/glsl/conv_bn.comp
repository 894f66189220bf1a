// vx.batchnorm (inference): the per-channel affine a batchnorm folded into its
// conv would have been, for the ones fold/lower-batchnorm leave standing.
// One invocation per element; the gain scale/sqrt(var + eps) is recomputed
// per element (one rsqrt: cheaper than a second dispatch to precompute it).
//
// Specialization constants: 0 = workgroup size.
// Bindings: 0 = x, 1 = scale, 2 = bias, 3 = mean, 4 = var, 5 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) readonly buffer S { sfp scale[]; };
layout(std430, binding = 2) readonly buffer B { sfp bias[]; };
layout(std430, binding = 3) readonly buffer Mn { sfp mean[]; };
layout(std430, binding = 4) readonly buffer V { sfp var_[]; };
layout(std430, binding = 5) writeonly buffer Y { sfp y_data[]; };

layout(push_constant) uniform Params {
    uint total, base;
    uint C, inner;
    float eps;
} p;

void main() {
    uint idx = p.base + gl_GlobalInvocationID.x;
    if (idx >= p.total) return;
    uint c = (idx / p.inner) % p.C;
    afp gain = LOAD(scale, c) / sqrt(LOAD(var_, c) + p.eps);
    STORE(y_data, idx, (LOAD(x_data, idx) - LOAD(mean, c)) * gain + LOAD(bias, c));
}
