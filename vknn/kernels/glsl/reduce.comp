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
// argmax/argmin (one reduced axis, so r is the index along it) keep a
// (value, index) pair ordered as onnxruntime's scan picks (best = x[0], then
// x > best, or >= with select_last_index; comparisons with NaN are false):
// a NaN at index 0 wins, NaN elsewhere never does, ties go to the first
// index (LAST: the last). The int64 result is written as the word pair
// (index, 0).
//
// Built with VKNN_INT64 (shaderInt64), sum/max/min/prod of int64 tensors in
// 64 bits (wrapping as onnxruntime's), one invocation per output.
//
// Specialization constants: 0 = workgroup size (a power of two), 1 = KIND
// (codes below), 2 = WG_PER_OUT, 3 = LAST (argmax/argmin select_last_index).
// Push constants: n_out, count, base (first output of this dispatch),
// kdims[4], kstrides[4], rdims[4], rstrides[4] (innermost last; unused
// groups have dim 1, stride 0).
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#if VKNN_INT64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
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
#define REDUCE_ARGMAX 10
#define REDUCE_ARGMIN 11

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG_SIZE = 256;
layout(constant_id = 1) const int KIND = 0;
layout(constant_id = 2) const bool WG_PER_OUT = true;
layout(constant_id = 3) const bool LAST = false;

#include "reduce_wg.glsl"

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y_data[]; };
layout(std430, binding = 1) writeonly buffer YI { uvec2 yi_data[]; };

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

const bool EXTREME = KIND == REDUCE_MAX || KIND == REDUCE_MIN;

float term(float x, float shift) {
    if (EXTREME && isnan(x)) return identity();  // NaN is skipped, unless first (nan_first)
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

// onnxruntime's max/min scan starts at the slice's first element and takes
// each later one that beats it, so the result is NaN iff that first one is.
float nan_first(float acc, uint off) {
    if (EXTREME && p.count > 0u && isnan(LOAD(x_data, off))) return uintBitsToFloat(0x7fc00000u);
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

const bool ARG = KIND == REDUCE_ARGMAX || KIND == REDUCE_ARGMIN;
shared uint arg_index[WG_SIZE];

// 2: NaN at index 0 (the scan's start, nothing compares past it); 1: a
// number; 0: NaN elsewhere (never picked).
int arg_rank(float v, uint i) { return isnan(v) ? (i == 0u ? 2 : 0) : 1; }

// Whether (a at index ia) wins over (b at index ib).
bool arg_better(float a, uint ia, float b, uint ib) {
    int ra = arg_rank(a, ia);
    int rb = arg_rank(b, ib);
    if (ra != rb) return ra > rb;
    if (ra != 1 || a == b) return LAST ? ia > ib : ia < ib;
    return KIND == REDUCE_ARGMAX ? a > b : a < b;
}

// The winning index of output o's slice (count >= 1).
uint arg_reduce(uint o) {
    uint off = kept_offset(o);
    if (!WG_PER_OUT) {
        float best = LOAD(x_data, off);
        uint bi = 0u;
        for (uint r = 1u; r < p.count; ++r) {
            float v = LOAD(x_data, off + reduced_offset(r));
            if (arg_better(v, r, best, bi)) {
                best = v;
                bi = r;
            }
        }
        return bi;
    }
    uint t = gl_LocalInvocationID.x;
    float best = 0.0;
    uint bi = 0xffffffffu;  // none yet
    for (uint r = t; r < p.count; r += uint(WG_SIZE)) {
        float v = LOAD(x_data, off + reduced_offset(r));
        if (bi == 0xffffffffu || arg_better(v, r, best, bi)) {
            best = v;
            bi = r;
        }
    }
    wg_scratch[t] = best;
    arg_index[t] = bi;
    barrier();
    for (uint h = uint(WG_SIZE) / 2u; h > 0u; h >>= 1u) {
        if (t < h) {
            uint j = arg_index[t + h];
            if (j != 0xffffffffu && (arg_index[t] == 0xffffffffu
                    || arg_better(wg_scratch[t + h], j, wg_scratch[t], arg_index[t]))) {
                wg_scratch[t] = wg_scratch[t + h];
                arg_index[t] = j;
            }
        }
        barrier();
    }
    return arg_index[0];
}

#if VKNN_INT64
layout(std430, binding = 0) readonly buffer XL { int64_t xl_data[]; };
layout(std430, binding = 1) writeonly buffer YL { int64_t yl_data[]; };

int64_t int_reduce(uint o) {
    uint off = kept_offset(o);
    int64_t acc = xl_data[off];
    for (uint r = 1u; r < p.count; ++r) {
        int64_t v = xl_data[off + reduced_offset(r)];
        if (KIND == REDUCE_MAX) acc = v > acc ? v : acc;
        else if (KIND == REDUCE_MIN) acc = v < acc ? v : acc;
        else if (KIND == REDUCE_PROD) acc *= v;
        else acc += v;  // REDUCE_SUM
    }
    return acc;
}
#endif

void main() {
#if VKNN_INT64
    uint io = p.base + gl_GlobalInvocationID.x;
    if (io < p.n_out) yl_data[io] = int_reduce(io);
    return;
#endif
    if (ARG) {
        uint o = p.base + (WG_PER_OUT ? gl_WorkGroupID.x : gl_GlobalInvocationID.x);
        if (o >= p.n_out) return;  // uniform per workgroup in WG_PER_OUT mode
        uint i = arg_reduce(o);
        if (!WG_PER_OUT || gl_LocalInvocationID.x == 0u) yi_data[o] = uvec2(i, 0u);
        return;
    }
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
        if (t == 0u) STORE(y_data, o, PW_APPLY(nan_first(finish(acc, shift), off), o));
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
        STORE(y_data, o, PW_APPLY(nan_first(finish(acc, shift), off), o));
    }
}
