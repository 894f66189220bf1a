// vx.layernorm: one workgroup per row (the `len` = prod(shape[axis:])
// trailing elements of one leading position). Two-pass statistics like the
// oracle (mean, then the mean of squared deviations: no cancellation), with
// the row kept in registers when it has at most CACHE * WG_SIZE elements.
// y = (x - mean) / sqrt(var + eps) * scale + bias; scale and bias have
// either `len` elements or one (their broadcast to shape[axis:] is checked
// by the gate).
//
// Specialization constants: 0 = workgroup size (a power of two), 1 = HAS_BIAS,
// 2 = CACHED, 3 = SCALE_SCALAR, 4 = BIAS_SCALAR.
// Push constants: rows, len, eps, base (first row of this dispatch).
// Bindings: 0 = x, 1 = scale, 2 = bias (bound to scale when absent), 3 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"

#define CACHE 8

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG_SIZE = 256;
layout(constant_id = 1) const bool HAS_BIAS = true;
layout(constant_id = 2) const bool CACHED = true;
layout(constant_id = 3) const bool SCALE_SCALAR = false;
layout(constant_id = 4) const bool BIAS_SCALAR = false;

#include "reduce_wg.glsl"

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) readonly buffer S { sfp scale_data[]; };
layout(std430, binding = 2) readonly buffer Bi { sfp bias_data[]; };
layout(std430, binding = 3) writeonly buffer Y { sfp y_data[]; };

layout(push_constant) uniform Params {
    uint rows;
    uint len;
    float eps;
    uint base;
} p;

float affine(float xhat, uint j) {
    float v = xhat * LOAD(scale_data, SCALE_SCALAR ? 0u : j);
    if (HAS_BIAS) v += LOAD(bias_data, BIAS_SCALAR ? 0u : j);
    return v;
}

void main() {
    uint r = p.base + gl_WorkGroupID.x;
    if (r >= p.rows) return;  // uniform per workgroup
    uint t = gl_LocalInvocationID.x;
    uint start = r * p.len;
    float n = float(p.len);

    float xs[CACHE];
    float s = 0.0;
    if (CACHED) {
        for (int c = 0; c < CACHE; ++c) {
            uint j = t + uint(c * WG_SIZE);
            xs[c] = j < p.len ? LOAD(x_data, start + j) : 0.0;
            s += xs[c];
        }
    } else {
        for (uint j = t; j < p.len; j += uint(WG_SIZE)) s += LOAD(x_data, start + j);
    }
    float mean = wg_reduce(RED_SUM, s) / n;

    float q = 0.0;
    if (CACHED) {
        for (int c = 0; c < CACHE; ++c) {
            uint j = t + uint(c * WG_SIZE);
            if (j < p.len) {
                xs[c] -= mean;
                q += xs[c] * xs[c];
            }
        }
    } else {
        for (uint j = t; j < p.len; j += uint(WG_SIZE)) {
            float d = LOAD(x_data, start + j) - mean;
            q += d * d;
        }
    }
    float var = wg_reduce(RED_SUM, q) / n;
    float inv = 1.0 / sqrt(var + p.eps);

    if (CACHED) {
        for (int c = 0; c < CACHE; ++c) {
            uint j = t + uint(c * WG_SIZE);
            if (j < p.len) STORE(y_data, start + j, affine(xs[c] * inv, j));
        }
    } else {
        for (uint j = t; j < p.len; j += uint(WG_SIZE))
            STORE(y_data, start + j, affine((LOAD(x_data, start + j) - mean) * inv, j));
    }
}
