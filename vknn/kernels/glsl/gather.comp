// vx.gather: out[o, j, k] = data[o, idx[j] (+dim if negative), k], with the
// data viewed as [outer, dim, inner] around the gather axis and the indices
// flattened to [nidx]. An out-of-range index is clamped (as the CPU backend
// does, vknn/oracle/shape_ops.py) rather than read outside the tensor.
// Specialization constants: 0 = workgroup size.
// Push constants: n, base, inner, nidx, dim.
// Bindings: 0 = data, 1 = indices (int32 words; with VKNN_IDX64 int64 as
// word pairs, an index past 32 bits being out of range), 2 = out.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "movement.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { elem x_data[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer Y { elem y_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    uint inner;
    uint nidx;
    int dim;
} p;

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint k = i % p.inner;
    uint t = i / p.inner;
    uint j = t % p.nidx;
    uint o = t / p.nidx;
#if VKNN_IDX64
    int ix = idx[2u * j];
    int hi = idx[2u * j + 1u];
    if (hi != (ix >> 31)) ix = hi < 0 ? -p.dim - 1 : p.dim;  // past 32 bits: out of range
#else
    int ix = idx[j];
#endif
    if (ix < 0) ix += p.dim;
    ix = clamp(ix, 0, p.dim - 1);
    y_data[i] = x_data[(o * uint(p.dim) + uint(ix)) * p.inner + k];
}
