// vx.select: out = cond ? x : y with three-way numpy broadcasting, collapsed
// on the host to RANK <= 6 dims of per-operand strides (RANK 0: all three
// have the output's shape). x, y and out are copied as raw words.
// Specialization constants: 0 = workgroup size, 1 = RANK.
// Push constants: n, base, dims[6], sc[6], sx[6], sy[6].
// Bindings: 0 = cond (int32 words, 0/1), 1 = x, 2 = y, 3 = out.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "movement.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int RANK = 0;

layout(std430, binding = 0) readonly buffer C { int c_data[]; };
layout(std430, binding = 1) readonly buffer X { elem x_data[]; };
layout(std430, binding = 2) readonly buffer Yv { elem y_data[]; };
layout(std430, binding = 3) writeonly buffer O { elem o_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    uint dims[6];
    uint sc[6];
    uint sx[6];
    uint sy[6];
} p;

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint ic = i;
    uint ix = i;
    uint iy = i;
    if (RANK > 0) {
        ic = 0u;
        ix = 0u;
        iy = 0u;
        uint rem = i;
        for (int d = RANK - 1; d >= 0; --d) {
            uint q = rem / p.dims[d];
            uint c = rem - q * p.dims[d];
            ic += c * p.sc[d];
            ix += c * p.sx[d];
            iy += c * p.sy[d];
            rem = q;
        }
    }
    // if/else, not ?: : a select of 16-bit values needs the Int16 capability.
    if (c_data[ic] != 0) {
        o_data[i] = x_data[ix];
    } else {
        o_data[i] = y_data[iy];
    }
}
