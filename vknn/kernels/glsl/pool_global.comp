// Global pooling (a vx.pool whose window is the whole plane): a reduction of
// each (n, c) plane by LANES cooperating invocations. A workgroup holds
// (workgroup size) / LANES planes; lanes stride over the plane (coalesced), then a
// shared-memory tree combines them. The host picks LANES by plane size so
// small planes (7x7) don't leave most lanes idle and large ones (56x56)
// spread over many lanes.
//
// Specialization constants: 0 = workgroup size (a power of two <= 256),
// 1 = KIND (pool.comp's codes), 2 = LANES (a power of two <= the workgroup
// size).
// Bindings: 0 = x, 1 = y, 2.. = epilogue inputs (PW_EPI).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"

#define POOL_MAX 0
#define POOL_AVG 1
#define POOL_LP 2

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int KIND = 0;
layout(constant_id = 2) const uint LANES = 32;
// NC4HW4 x (`vulkan/layouts.py`); y stays row-major [N, C] (a flatten or a
// broadcast operand follows global pools).
layout(constant_id = 3) const bool PACKED = false;

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y_data[]; };

#include "pw_epilogue.glsl"

layout(push_constant) uniform Params {
    uint planes, base;  // N*C, first plane of this dispatch
    uint HW, C;
    float lp;
} p;

shared afp red[256];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint lane = lid % LANES;
    uint row = lid / LANES;
    uint plane = p.base + gl_WorkGroupID.x * (gl_WorkGroupSize.x / LANES) + row;
    bool live = plane < p.planes;
    afp acc = KIND == POOL_MAX ? uintBitsToFloat(0xff800000u) : 0.0;
    if (live) {
        uint x_base = plane * p.HW;
        uint step_ = 1u;
        if (PACKED) {
            uint c = plane % p.C;
            x_base = ((plane / p.C) * ((p.C + 3u) >> 2) + (c >> 2)) * p.HW * 4u + (c & 3u);
            step_ = 4u;
        }
        for (uint i = lane; i < p.HW; i += LANES) {
            afp v = LOAD(x_data, x_base + i * step_);
            if (KIND == POOL_MAX) acc = v > acc ? v : acc;  // NaN skipped, as onnxruntime
            else if (KIND == POOL_AVG) acc += v;
            else acc += pow(abs(v), p.lp);
        }
    }
    red[lid] = acc;
    barrier();
    for (uint s = LANES / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            afp o = red[lid + s];
            red[lid] = KIND == POOL_MAX ? (o > red[lid] ? o : red[lid]) : red[lid] + o;
        }
        barrier();
    }
    if (live && lane == 0u) {
        afp r = red[lid];
        if (KIND == POOL_AVG) r /= float(p.HW);
        if (KIND == POOL_LP) r = pow(r, 1.0 / p.lp);
        STORE(y_data, plane, PW_APPLY(r, plane));
    }
}
