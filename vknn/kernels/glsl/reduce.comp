// vx.reduce over any set of axes. The host collapses the input into kept and
// reduced dim groups (at most 4 each, merged where adjacent), each with its
// element stride; output element o (row-major over the kept groups, which is
// the output order with or without keepdims) reads the `count` elements of
// its reduced groups.
//
// Two modes (spec constant WG_PER_OUT): one workgroup per output element
// (long reductions: the invocations stride over the reduced elements, then
// reduce_wg.glsl combines them), or one invocation per output element (short
// reductions over many outputs: no idle lanes, no barriers).
// Accumulation is fp32; log_sum_exp takes the max first (two passes).
//
// Specialization constants: 0 = workgroup size (a power of two), 1 = KIND
// (codes below), 2 = WG_PER_OUT.
// Push constants: n_out, count, base (first output of this dispatch),
// kdims[4], kstrides[4], rdims[4], rstrides[4] (innermost last; unused
// groups have dim 1, stride 0).
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"

#define REDUCE_SUM 0
#define REDUCE_MEAN 1
#define REDUCE_MAX 2
#define REDUCE_MIN 3
#define REDUCE_PROD 4
#define REDUCE_L1 5
#define REDUCE_L2 6
#define REDUCE_LOG_SUM 7
#define REDUCE_LOG_SUM_EXP 8
#define REDUCE_SUM_SQUARE 9

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG_SIZE = 256;
layout(constant_id = 1) const int KIND = 0;
layout(constant_id = 2) const bool WG_PER_OUT = true;

#include "reduce_wg.glsl"

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y_data[]; };

#include "pw_epilogue.glsl"

layout(push_constant) uniform Params {
    uint n_out;
    uint count;
    uint base;
    uint kdims[4];
    uint kstrides[4];
    uint rdims[4];
    uint rstrides[4];
} p;

int combine_op() {
    if (KIND == REDUCE_MAX) return RED_MAX;
    if (KIND == REDUCE_MIN) return RED_MIN;
    if (KIND == REDUCE_PROD) return RED_PROD;
    return RED_SUM;
}

float identity() {
    if (KIND == REDUCE_MAX) return -1.0 / 0.0;
    if (KIND == REDUCE_MIN) return 1.0 / 0.0;
    if (KIND == REDUCE_PROD) return 1.0;
    return 0.0;
}

float term(float x, float shift) {
    if (KIND == REDUCE_L1) return abs(x);
    if (KIND == REDUCE_L2 || KIND == REDUCE_SUM_SQUARE) return x * x;
    if (KIND == REDUCE_LOG_SUM_EXP) return exp(x - shift);
    return x;
}

float finish(float acc, float shift) {
    if (KIND == REDUCE_MEAN) return acc / float(p.count);
    if (KIND == REDUCE_L2) return sqrt(acc);
    if (KIND == REDUCE_LOG_SUM) return log(acc);
    if (KIND == REDUCE_LOG_SUM_EXP) return log(acc) + shift;
    return acc;
}

uint kept_offset(uint o) {
    uint off = 0u;
    for (int d = 3; d >= 0; --d) {
        off += (o % p.kdims[d]) * p.kstrides[d];
        o /= p.kdims[d];
    }
    return off;
}

uint reduced_offset(uint r) {
    uint off = 0u;
    for (int d = 3; d >= 0; --d) {
        off += (r % p.rdims[d]) * p.rstrides[d];
        r /= p.rdims[d];
    }
    return off;
}

void main() {
    int op = combine_op();
    if (WG_PER_OUT) {
        uint o = p.base + gl_WorkGroupID.x;
        if (o >= p.n_out) return;  // uniform per workgroup
        uint t = gl_LocalInvocationID.x;
        uint off = kept_offset(o);
        float shift = 0.0;
        if (KIND == REDUCE_LOG_SUM_EXP) {
            float m = -1.0 / 0.0;
            for (uint r = t; r < p.count; r += uint(WG_SIZE))
                m = vknn_max(m, LOAD(x_data, off + reduced_offset(r)));
            m = wg_reduce(RED_MAX, m);
            shift = isinf(m) ? 0.0 : m;  // an all -inf slice keeps -inf
        }
        float acc = identity();
        for (uint r = t; r < p.count; r += uint(WG_SIZE))
            acc = wg_combine(op, acc, term(LOAD(x_data, off + reduced_offset(r)), shift));
        acc = wg_reduce(op, acc);
        if (t == 0u) STORE(y_data, o, PW_APPLY(finish(acc, shift), o));
    } else {
        uint o = p.base + gl_GlobalInvocationID.x;
        if (o >= p.n_out) return;
        uint off = kept_offset(o);
        float shift = 0.0;
        if (KIND == REDUCE_LOG_SUM_EXP) {
            float m = -1.0 / 0.0;
            for (uint r = 0u; r < p.count; ++r) m = vknn_max(m, LOAD(x_data, off + reduced_offset(r)));
            shift = isinf(m) ? 0.0 : m;
        }
        float acc = identity();
        for (uint r = 0u; r < p.count; ++r)
            acc = wg_combine(op, acc, term(LOAD(x_data, off + reduced_offset(r)), shift));
        STORE(y_data, o, PW_APPLY(finish(acc, shift), o));
    }
}
