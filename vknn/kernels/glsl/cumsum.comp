// vx.cum_sum (ONNX CumSum): one invocation per line along the axis, a
// sequential scan over its `len` elements (short axes: position ids). Line l
// = (outer o, inner i) starts at o * len * inner + i and steps by `inner`.
// EXCLUSIVE writes the sum before the element; REVERSE scans from the end.
// Floats accumulate in fp32 (afp) and are stored through STORE (fp16
// storage rounds each output once); int32 wraps at 32 bits; built with
// VKNN_INT64 (shaderInt64), int64 tensors scan in 64 bits.
// Specialization constants: 0 = workgroup size, 1 = EXCLUSIVE, 2 = REVERSE,
// 3 = IS_INT (int32 words rather than float storage).
// Push constants: lines, base, len, inner.
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#if VKNN_INT64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#include "precision.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool EXCLUSIVE = false;
layout(constant_id = 2) const bool REVERSE = false;
layout(constant_id = 3) const bool IS_INT = false;

#if VKNN_INT64
layout(std430, binding = 0) readonly buffer XL { int64_t x_data[]; };
layout(std430, binding = 1) writeonly buffer YL { int64_t y_data[]; };
#define ACC int64_t
#define ZERO 0l
#define GET(j) x_data[j]
#define PUT(j, v) y_data[j] = (v)
#else
layout(std430, binding = 0) readonly buffer XF { sfp xf_data[]; };
layout(std430, binding = 0) readonly buffer XI { int xi_data[]; };
layout(std430, binding = 1) writeonly buffer YF { sfp yf_data[]; };
layout(std430, binding = 1) writeonly buffer YI { int yi_data[]; };
#endif

layout(push_constant) uniform Params {
    uint lines;
    uint base;
    uint len;
    uint inner;
} p;

void main() {
    uint l = p.base + gl_GlobalInvocationID.x;
    if (l >= p.lines) return;
    uint o = l / p.inner;
    uint start = o * p.len * p.inner + (l - o * p.inner);
#if VKNN_INT64
    ACC acc = ZERO;
#else
    afp facc = afp(0);
    int iacc = 0;
#endif
    for (uint k = 0u; k < p.len; ++k) {
        uint j = start + (REVERSE ? p.len - 1u - k : k) * p.inner;
#if VKNN_INT64
        ACC v = GET(j);
        if (EXCLUSIVE) { PUT(j, acc); acc += v; } else { acc += v; PUT(j, acc); }
#else
        if (IS_INT) {
            int v = xi_data[j];
            if (EXCLUSIVE) { yi_data[j] = iacc; iacc += v; } else { iacc += v; yi_data[j] = iacc; }
        } else {
            afp v = LOAD(xf_data, j);
            if (EXCLUSIVE) { STORE(yf_data, j, facc); facc += v; } else { facc += v; STORE(yf_data, j, facc); }
        }
#endif
    }
}
