// vx.softmax / vx.log_softmax along one axis: one workgroup per row.
// A row is the `len` elements of the axis at one (outer, inner) position:
// element j of row r = (r / inner, r % inner) is x[(o * len + j) * inner + i].
// Three passes over the row (max, sum of exp(x - max), store); rows of at
// most CACHE * WG_SIZE elements are read from memory once and kept in
// registers. Reductions: reduce_wg.glsl (subgroup ops in the VKNN_SUBGROUP
// variant). A row whose max is not finite (+-inf, NaN) is all NaN (inf - inf),
// as in onnxruntime and the oracle.
//
// Specialization constants: 0 = workgroup size (a power of two), 1 = LOG
// (log_softmax), 2 = CACHED (len <= CACHE * WG_SIZE), 3 = ZERO_NAN (NaN
// results stored as 0: the exporters' Where(IsNaN(p), 0, p) folded in).
// Push constants: rows, len, inner, base (first row of this dispatch).
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"

#define CACHE 8

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG_SIZE = 256;
layout(constant_id = 1) const bool LOG = false;
layout(constant_id = 2) const bool CACHED = true;
layout(constant_id = 3) const bool ZERO_NAN = false;

float guard(float v) { return ZERO_NAN && isnan(v) ? 0.0 : v; }

#include "reduce_wg.glsl"

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y_data[]; };

layout(push_constant) uniform Params {
    uint rows;
    uint len;
    uint inner;
    uint base;
} p;

void main() {
    uint r = p.base + gl_WorkGroupID.x;
    if (r >= p.rows) return;  // uniform per workgroup: no barrier is skipped by half of it
    uint t = gl_LocalInvocationID.x;
    uint start = (r / p.inner) * p.len * p.inner + r % p.inner;
    uint step = p.inner;

    float xs[CACHE];
    float m = -1.0 / 0.0;
    if (CACHED) {
        for (int c = 0; c < CACHE; ++c) {
            uint j = t + uint(c * WG_SIZE);
            xs[c] = j < p.len ? LOAD(x_data, start + j * step) : -1.0 / 0.0;
            m = vknn_max(m, xs[c]);
        }
    } else {
        for (uint j = t; j < p.len; j += uint(WG_SIZE)) m = vknn_max(m, LOAD(x_data, start + j * step));
    }
    m = wg_reduce(RED_MAX, m);

    float s = 0.0;
    if (CACHED) {
        for (int c = 0; c < CACHE; ++c) {
            uint j = t + uint(c * WG_SIZE);
            if (j < p.len) {
                xs[c] -= m;
                s += exp(xs[c]);
            }
        }
    } else {
        for (uint j = t; j < p.len; j += uint(WG_SIZE)) s += exp(LOAD(x_data, start + j * step) - m);
    }
    s = wg_reduce(RED_SUM, s);

    float inv = 1.0 / s;
    float ls = log(s);
    if (CACHED) {
        for (int c = 0; c < CACHE; ++c) {
            uint j = t + uint(c * WG_SIZE);
            if (j < p.len) STORE(y_data, start + j * step, guard(LOG ? xs[c] - ls : exp(xs[c]) * inv));
        }
    } else {
        for (uint j = t; j < p.len; j += uint(WG_SIZE)) {
            float d = LOAD(x_data, start + j * step) - m;
            STORE(y_data, start + j * step, guard(LOG ? d - ls : exp(d) * inv));
        }
    }
}
