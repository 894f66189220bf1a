// vx.binary: c = f(a, b) with numpy broadcasting, f chosen by the KIND
// specialization constant.
//
// The host collapses the broadcast to at most 6 dims (merging dims that are
// contiguous in both operands, dropping size-1 dims). RANK (a specialization
// constant) is that rank; RANK 0 means both operands have the output's shape
// and are read at the output index directly.
// Specialization constants: 0 = workgroup size, 1 = KIND, 2 = RANK.
// Push constants: n, base (see unary.comp), dims[6] (output dims, outermost
// first), sa[6], sb[6] (element strides of a and b; 0 on broadcast dims).
// Bindings: 0 = a, 1 = b, 2 = c.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"

#define BINARY_ADD 0
#define BINARY_SUB 1
#define BINARY_MUL 2
#define BINARY_DIV 3
#define BINARY_POW 4
#define BINARY_MAX 5
#define BINARY_MIN 6
#define BINARY_MOD 7
#define BINARY_FMOD 8
#define BINARY_PRELU 9

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int KIND = 0;
layout(constant_id = 2) const int RANK = 0;

layout(std430, binding = 0) readonly buffer A { sfp a_data[]; };
layout(std430, binding = 1) readonly buffer B { sfp b_data[]; };
layout(std430, binding = 2) writeonly buffer C { sfp c_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    uint dims[6];
    uint sa[6];
    uint sb[6];
} p;

// ONNX Pow on floats: C's pow. GLSL pow is undefined for x < 0 and for
// x == 0 with y <= 0, so those cases are spelled out.
float vknn_pow(float x, float y) {
    if (y == 0.0) return 1.0;
    if (isnan(x) || isnan(y)) return x + y;
    bool y_int = floor(y) == y;
    if (x == 0.0) {
        bool odd = y_int && mod(y, 2.0) == 1.0;
        if (y > 0.0) return odd ? x : 0.0;
        float inf = uintBitsToFloat(0x7f800000u);
        return (odd && (floatBitsToUint(x) & 0x80000000u) != 0u) ? -inf : inf;
    }
    if (x < 0.0) {
        if (!y_int) return VKNN_NAN;
        float r = exp2(y * log2(-x));
        return mod(y, 2.0) == 1.0 ? -r : r;
    }
    return exp2(y * log2(x));
}

float apply(float a, float b) {
    if (KIND == BINARY_ADD) return a + b;
    if (KIND == BINARY_SUB) return a - b;
    if (KIND == BINARY_MUL) return a * b;
    if (KIND == BINARY_DIV) return a / b;
    if (KIND == BINARY_POW) return vknn_pow(a, b);
    if (KIND == BINARY_MAX) return vknn_max(a, b);
    if (KIND == BINARY_MIN) return vknn_min(a, b);
    // numpy remainder: the sign of the divisor.
    if (KIND == BINARY_MOD) {
        float r = a - b * trunc(a / b);
        return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;
    }
    // C fmod: the sign of the dividend.
    if (KIND == BINARY_FMOD) return a - b * trunc(a / b);
    if (KIND == BINARY_PRELU) return a < 0.0 ? a * b : a;
    return VKNN_NAN;
}

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint ia = i;
    uint ib = i;
    if (RANK > 0) {
        ia = 0u;
        ib = 0u;
        uint rem = i;
        for (int d = RANK - 1; d >= 0; --d) {
            uint q = rem / p.dims[d];
            uint c = rem - q * p.dims[d];
            ia += c * p.sa[d];
            ib += c * p.sb[d];
            rem = q;
        }
    }
    STORE(c_data, i, apply(LOAD(a_data, ia), LOAD(b_data, ib)));
}
