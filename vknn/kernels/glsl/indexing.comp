// The element-indexing ops, one invocation per element of `idx`'s iteration
// space; elements move as raw storage words (movement.glsl). An index is
// taken from the end of its axis when negative and clamped into the axis
// (the CPU oracle raises on out-of-range indices, as onnxruntime does; the
// device must never read or write outside a tensor).
//
// MODE 0, vx.gather_elements: i over indices' shape (dims[RANK]);
//         out[i] = src[i with coordinate `axis` := idx[i]] (strides[] are src's).
// MODE 1, vx.scatter_elements (reduction none; out already holds data):
//         out[i with coordinate `axis` := idx[i]] = src[i] (strides[] are out's).
// MODE 2, vx.gather_nd: i = (batch, row, s) over [nbatch, m, slice];
//         out[i] = src[batch * bstride + sum_j idx[(batch*m + row)*k + j] * strides[j] + s],
//         dims[j] the extent of the j-th indexed axis.
// Specialization constants: 0 = workgroup size, 1 = MODE, 2 = RANK (modes 0/1).
// Push constants: n, base, a, b, c, d, dims[6], strides[6] where
//   modes 0/1: a = extent of `axis` in src/out, b = axis;
//   mode 2:    a = m, b = slice, c = k, d = bstride.
// Bindings: 0 = src, 1 = idx (int32 words; with VKNN_IDX64 int64 as word
// pairs, an index past 32 bits being out of range), 2 = out.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "movement.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int MODE = 0;
layout(constant_id = 2) const int RANK = 1;

layout(std430, binding = 0) readonly buffer S { elem s_data[]; };
layout(std430, binding = 1) readonly buffer I { int idx[]; };
layout(std430, binding = 2) writeonly buffer O { elem o_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    uint a;
    uint b;
    uint c;
    uint d;
    uint dims[6];
    uint strides[6];
} p;

// Index j of `idx`; an int64 index past 32 bits is out of range either way.
int index_at(uint j, uint extent) {
#if VKNN_IDX64
    int lo = idx[2u * j];
    int hi = idx[2u * j + 1u];
    if (hi != (lo >> 31)) return hi < 0 ? -int(extent) - 1 : int(extent);
    return lo;
#else
    return idx[j];
#endif
}

uint fix_index(int ix, uint extent) {
    int dim = int(extent);
    if (ix < 0) ix += dim;
    return uint(clamp(ix, 0, dim - 1));
}

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    if (MODE == 2) {
        uint s = i % p.b;
        uint t = i / p.b;  // batch * m + row
        uint batch = t / p.a;
        uint off = batch * p.d + s;
        for (uint j = 0u; j < p.c; ++j) off += fix_index(index_at(t * p.c + j, p.dims[j]), p.dims[j]) * p.strides[j];
        o_data[i] = s_data[off];
        return;
    }
    uint off = 0u;
    uint rem = i;
    for (int d = RANK - 1; d >= 0; --d) {
        uint q = rem / p.dims[d];
        uint coord = rem - q * p.dims[d];
        if (uint(d) == p.b) coord = fix_index(index_at(i, p.a), p.a);
        off += coord * p.strides[d];
        rem = q;
    }
    if (MODE == 0) {
        o_data[i] = s_data[off];
    } else {
        o_data[off] = s_data[i];
    }
}
