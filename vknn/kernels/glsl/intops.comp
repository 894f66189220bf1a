// vx.binary / vx.unary on integer and bool tensors (int32 words, see
// vulkan/dtypes.py), and comparisons of float tensors (bool result). KIND
// picks the function; unary kinds read `a` only (the host binds it twice).
// Integer results wrap to the model's width (OUT_BITS, OUT_SIGNED); bool
// results are 0/1. Div truncates toward zero and mod takes the divisor's
// sign, a zero divisor giving 0 (the CPU oracle's choices); shifts by the
// width or more give 0. Broadcasting as binary.comp (RANK 0: none).
// Built with VKNN_INT64 (needs shaderInt64) for int64 operands (stored as
// int64): the same functions in 64 bits, the result int64 (C_I64) or bool.
// Specialization constants: 0 = workgroup size, 1 = KIND, 2 = RANK,
// 3 = A_FLOAT (operands are float tensors), 4 = OUT_BITS, 5 = OUT_SIGNED,
// 6 = C_I64.
// Push constants: n, base, dims[6], sa[6], sb[6].
// Bindings: 0 = a, 1 = b, 2 = c.
#version 450
#extension GL_GOOGLE_include_directive : require
#if VKNN_INT64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#include "movement.glsl"

#define INTOP_ADD 0
#define INTOP_SUB 1
#define INTOP_MUL 2
#define INTOP_DIV 3
#define INTOP_MOD 4
#define INTOP_MAX 5
#define INTOP_MIN 6
#define INTOP_EQUAL 10
#define INTOP_LESS 11
#define INTOP_LESS_EQUAL 12
#define INTOP_GREATER 13
#define INTOP_GREATER_EQUAL 14
#define INTOP_AND 20
#define INTOP_OR 21
#define INTOP_XOR 22
#define INTOP_SHIFT_LEFT 23
#define INTOP_SHIFT_RIGHT 24
#define INTOP_NOT 30
#define INTOP_ABS 31
#define INTOP_NEG 32
#define INTOP_RELU 33
#define INTOP_SIGN 34
#define INTOP_IDENTITY 35

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int KIND = 0;
layout(constant_id = 2) const int RANK = 0;
layout(constant_id = 3) const bool A_FLOAT = false;
layout(constant_id = 4) const int OUT_BITS = 32;
layout(constant_id = 5) const bool OUT_SIGNED = true;
layout(constant_id = 6) const bool C_I64 = false;

layout(std430, binding = 0) readonly buffer AI { int ai_data[]; };
layout(std430, binding = 0) readonly buffer AF { sfp af_data[]; };
layout(std430, binding = 1) readonly buffer BI { int bi_data[]; };
layout(std430, binding = 1) readonly buffer BF { sfp bf_data[]; };
layout(std430, binding = 2) writeonly buffer CI { int c_data[]; };
#if VKNN_INT64
layout(std430, binding = 0) readonly buffer AL { int64_t al_data[]; };
layout(std430, binding = 1) readonly buffer BL { int64_t bl_data[]; };
layout(std430, binding = 2) writeonly buffer CL { int64_t cl_data[]; };

int64_t apply64(int64_t a, int64_t b) {
    if (KIND == INTOP_ADD) return a + b;
    if (KIND == INTOP_SUB) return a - b;
    if (KIND == INTOP_MUL) return a * b;
    if (KIND == INTOP_DIV) return b == 0l ? 0l : a / b;
    if (KIND == INTOP_MOD) {
        if (b == 0l) return 0l;
        int64_t r = a - b * (a / b);
        return (r != 0l && ((r < 0l) != (b < 0l))) ? r + b : r;
    }
    if (KIND == INTOP_MAX) return a > b ? a : b;
    if (KIND == INTOP_MIN) return a < b ? a : b;
    if (KIND == INTOP_EQUAL) return a == b ? 1l : 0l;
    if (KIND == INTOP_LESS) return a < b ? 1l : 0l;
    if (KIND == INTOP_LESS_EQUAL) return a <= b ? 1l : 0l;
    if (KIND == INTOP_GREATER) return a > b ? 1l : 0l;
    if (KIND == INTOP_GREATER_EQUAL) return a >= b ? 1l : 0l;
    if (KIND == INTOP_SHIFT_LEFT) return (b < 0l || b >= 64l) ? 0l : int64_t(uint64_t(a) << b);
    if (KIND == INTOP_SHIFT_RIGHT) return (b < 0l || b >= 64l) ? 0l : int64_t(uint64_t(a) >> b);
    if (KIND == INTOP_ABS) return a < 0l ? -a : a;
    if (KIND == INTOP_NEG) return -a;
    if (KIND == INTOP_RELU) return a > 0l ? a : 0l;
    if (KIND == INTOP_SIGN) return a > 0l ? 1l : (a < 0l ? -1l : 0l);
    return a;  // INTOP_IDENTITY
}
#endif

layout(push_constant) uniform Params {
    uint n;
    uint base;
    uint dims[6];
    uint sa[6];
    uint sb[6];
} p;

int compare_f(float a, float b) {
    // Ordered comparisons: NaN compares false, as numpy.
    if (KIND == INTOP_EQUAL) return a == b ? 1 : 0;
    if (KIND == INTOP_LESS) return a < b ? 1 : 0;
    if (KIND == INTOP_LESS_EQUAL) return a <= b ? 1 : 0;
    if (KIND == INTOP_GREATER) return a > b ? 1 : 0;
    return a >= b ? 1 : 0;
}

int apply(int a, int b) {
    if (KIND == INTOP_ADD) return a + b;
    if (KIND == INTOP_SUB) return a - b;
    if (KIND == INTOP_MUL) return a * b;
    if (KIND == INTOP_DIV) return b == 0 ? 0 : a / b;  // OpSDiv truncates
    if (KIND == INTOP_MOD) {
        if (b == 0) return 0;
        int r = a - b * (a / b);
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    if (KIND == INTOP_MAX) return max(a, b);
    if (KIND == INTOP_MIN) return min(a, b);
    if (KIND == INTOP_EQUAL) return a == b ? 1 : 0;
    if (KIND == INTOP_LESS) return a < b ? 1 : 0;
    if (KIND == INTOP_LESS_EQUAL) return a <= b ? 1 : 0;
    if (KIND == INTOP_GREATER) return a > b ? 1 : 0;
    if (KIND == INTOP_GREATER_EQUAL) return a >= b ? 1 : 0;
    if (KIND == INTOP_AND) return (a != 0 && b != 0) ? 1 : 0;
    if (KIND == INTOP_OR) return (a != 0 || b != 0) ? 1 : 0;
    if (KIND == INTOP_XOR) return ((a != 0) != (b != 0)) ? 1 : 0;
    if (KIND == INTOP_SHIFT_LEFT) return (b < 0 || b >= OUT_BITS) ? 0 : int(uint(a) << uint(b));
    if (KIND == INTOP_SHIFT_RIGHT) return (b < 0 || b >= OUT_BITS) ? 0 : int(uint(a) >> uint(b));
    if (KIND == INTOP_NOT) return a != 0 ? 0 : 1;
    if (KIND == INTOP_ABS) return abs(a);
    if (KIND == INTOP_NEG) return -a;
    if (KIND == INTOP_RELU) return max(a, 0);
    if (KIND == INTOP_SIGN) return sign(a);
    return a;  // INTOP_IDENTITY
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
#if VKNN_INT64
    int64_t r = apply64(al_data[ia], bl_data[ib]);
    if (C_I64) cl_data[i] = r;
    else c_data[i] = int(r);  // a comparison: 0 or 1
#else
    if (A_FLOAT) {
        c_data[i] = compare_f(LOAD(af_data, ia), LOAD(bf_data, ib));
    } else {
        c_data[i] = vknn_wrap(apply(ai_data[ia], bi_data[ib]), OUT_BITS, OUT_SIGNED);
    }
#endif
}
