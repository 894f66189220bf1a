// vx.float_test (ONNX IsNaN / IsInf): out = 1 where x is NaN (TEST 0),
// +-inf (1), +inf (2) or -inf (3), else 0. Tested on the stored bits, so
// fast-math defaults (which may assume no NaN/inf in float arithmetic) and
// the fp16 variant's 16-bit words give the same answer as numpy.
// Specialization constants: 0 = workgroup size, 1 = TEST.
// Push constants: n, base.
// Bindings: 0 = x (storage words), 1 = out (int32 words, 0/1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "movement.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int TEST = 0;

layout(std430, binding = 0) readonly buffer X { elem x_data[]; };
layout(std430, binding = 1) writeonly buffer Y { int y_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
} p;

#if VKNN_FP16_STORAGE
const uint EXP_BITS = 0x7c00u;
const uint MAN_BITS = 0x03ffu;
const uint SIGN_BIT = 0x8000u;
#else
const uint EXP_BITS = 0x7f800000u;
const uint MAN_BITS = 0x007fffffu;
const uint SIGN_BIT = 0x80000000u;
#endif

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint b = uint(x_data[i]);
    bool special = (b & EXP_BITS) == EXP_BITS;
    bool nan = special && (b & MAN_BITS) != 0u;
    bool inf = special && (b & MAN_BITS) == 0u;
    bool neg = (b & SIGN_BIT) != 0u;
    bool r = TEST == 0 ? nan : (TEST == 1 ? inf : (TEST == 2 ? inf && !neg : inf && neg));
    y_data[i] = r ? 1 : 0;
}
