// vx.unary: y = f(x) element-wise over a flat range, f chosen by the KIND
// specialization constant (dead branches fold away at pipeline creation).
//
// Specialization constants: 0 = workgroup size, 1 = KIND (codes below; the
// Python kernel spec reads them from this file, so they are defined once).
// Push constants: n (elements), base (first element of this dispatch, for
// dispatches split at maxComputeWorkGroupCount), alpha, beta (kind params).
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"

#define UNARY_IDENTITY 0
#define UNARY_RELU 1
#define UNARY_SIGMOID 2
#define UNARY_TANH 3
#define UNARY_EXP 4
#define UNARY_LOG 5
#define UNARY_SQRT 6
#define UNARY_RECIPROCAL 7
#define UNARY_ABS 8
#define UNARY_NEG 9
#define UNARY_FLOOR 10
#define UNARY_CEIL 11
#define UNARY_ROUND 12
#define UNARY_SIGN 13
#define UNARY_ERF 14
#define UNARY_GELU 15
#define UNARY_GELU_TANH 16
#define UNARY_SILU 17
#define UNARY_MISH 18
#define UNARY_SOFTPLUS 19
#define UNARY_SOFTSIGN 20
#define UNARY_LEAKY_RELU 21
#define UNARY_ELU 22
#define UNARY_CELU 23
#define UNARY_SELU 24
#define UNARY_THRESHOLDED_RELU 25
#define UNARY_HARD_SIGMOID 26
#define UNARY_HARD_SWISH 27
#define UNARY_CLIP 28

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int KIND = 0;

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    float alpha;
    float beta;
} p;

float softplus(float x) { return max(x, 0.0) + vknn_log1p(exp(-abs(x))); }

float apply(float x) {
    float a = p.alpha;
    float b = p.beta;
    if (KIND == UNARY_IDENTITY) return x;
    if (KIND == UNARY_RELU) return x < 0.0 ? 0.0 : x;  // NaN passes through
    if (KIND == UNARY_SIGMOID) return vknn_sigmoid(x);
    if (KIND == UNARY_TANH) return vknn_tanh(x);
    if (KIND == UNARY_EXP) return exp(x);
    if (KIND == UNARY_LOG) return log(x);
    if (KIND == UNARY_SQRT) return sqrt(x);
    if (KIND == UNARY_RECIPROCAL) return 1.0 / x;
    if (KIND == UNARY_ABS) return abs(x);
    if (KIND == UNARY_NEG) return -x;
    if (KIND == UNARY_FLOOR) return floor(x);
    if (KIND == UNARY_CEIL) return ceil(x);
    if (KIND == UNARY_ROUND) return roundEven(x);
    if (KIND == UNARY_SIGN) return isnan(x) ? x : sign(x);
    if (KIND == UNARY_ERF) return vknn_erf(x);
    // 0.5 x erfc(-x/sqrt2) rather than 0.5 x (1 + erf): no cancellation for x << 0.
    if (KIND == UNARY_GELU) return 0.5 * x * vknn_erfc(-x * 0.70710678118654752);
    // 0.5 (1 + tanh y) == sigmoid(2y), again without cancellation.
    if (KIND == UNARY_GELU_TANH)
        return x * vknn_sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x));
    if (KIND == UNARY_SILU) return x * vknn_sigmoid(x);
    if (KIND == UNARY_MISH) return x * vknn_tanh(softplus(x));
    if (KIND == UNARY_SOFTPLUS) return softplus(x);
    if (KIND == UNARY_SOFTSIGN) return x / (1.0 + abs(x));
    if (KIND == UNARY_LEAKY_RELU) return x < 0.0 ? a * x : x;
    if (KIND == UNARY_ELU) return x < 0.0 ? a * vknn_expm1(x) : x;
    if (KIND == UNARY_CELU) return max(x, 0.0) + min(0.0, a * vknn_expm1(x / a));
    if (KIND == UNARY_SELU) return b * (x > 0.0 ? x : a * vknn_expm1(x));
    if (KIND == UNARY_THRESHOLDED_RELU) return x > a ? x : 0.0;
    if (KIND == UNARY_HARD_SIGMOID) return vknn_max(0.0, vknn_min(1.0, a * x + b));
    if (KIND == UNARY_HARD_SWISH) return x * vknn_max(0.0, vknn_min(1.0, x / 6.0 + 0.5));
    if (KIND == UNARY_CLIP) return vknn_min(vknn_max(x, a), b);
    return VKNN_NAN;
}

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    STORE(y_data, i, apply(LOAD(x_data, i)));
}
