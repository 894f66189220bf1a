// Strided N-d copy: dst[dbase + sum_k c_k ds_k] = src[sbase + sum_k c_k ss_k]
// over the index space dims[0..RANK). One kernel for vx.transpose (permuted
// source strides), vx.slice (offset and stepped, possibly negative, strides),
// vx.expand (0 strides on broadcast dims) and each input of vx.concat
// (destination strides and offset of its slice of the output). The host
// drops size-1 dims and merges dims contiguous on both sides; RANK 0 means
// both sides are contiguous (a flat copy).
// Specialization constants: 0 = workgroup size, 1 = RANK (0..8).
// Push constants: n, base (first element of this dispatch), sbase, dbase,
// dims[8] (outermost first), ss[8], ds[8] (element strides, signed).
// Bindings: 0 = src, 1 = dst.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "movement.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int RANK = 0;

layout(std430, binding = 0) readonly buffer S { elem s_data[]; };
layout(std430, binding = 1) writeonly buffer D { elem d_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    int sbase;
    int dbase;
    uint dims[8];
    int ss[8];
    int ds[8];
} p;

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    int so = p.sbase;
    int dst = p.dbase;
    if (RANK == 0) {
        so += int(i);
        dst += int(i);
    } else {
        uint rem = i;
        for (int k = RANK - 1; k >= 0; --k) {
            uint q = rem / p.dims[k];
            int c = int(rem - q * p.dims[k]);
            so += c * p.ss[k];
            dst += c * p.ds[k];
            rem = q;
        }
    }
    d_data[dst] = s_data[so];
}
