// vx.lrn (ONNX LRN across channels), one invocation per element:
// y = x / (bias + alpha/size * sum_{c' in window} x[c']^2)^beta, the window
// [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the tensor.
//
// Specialization constants: 0 = workgroup size.
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y_data[]; };

layout(push_constant) uniform Params {
    uint total, base;
    uint C, inner;  // channels, elements per channel plane
    uint size;
    float alpha, beta, bias;
} p;

void main() {
    uint idx = p.base + gl_GlobalInvocationID.x;
    if (idx >= p.total) return;
    uint s = idx % p.inner;
    uint c = (idx / p.inner) % p.C;
    uint n = idx / (p.inner * p.C);
    int lo = max(int(c) - int((p.size - 1u) / 2u), 0);
    int hi = min(int(c) + int(p.size / 2u), int(p.C) - 1);
    afp sum = 0.0;
    for (int k = lo; k <= hi; ++k) {
        afp v = LOAD(x_data, (n * p.C + uint(k)) * p.inner + s);
        sum = fma(v, v, sum);
    }
    afp x = LOAD(x_data, idx);
    STORE(y_data, idx, x / pow(p.bias + (p.alpha / float(p.size)) * sum, p.beta));
}
