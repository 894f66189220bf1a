// A float tensor moved between the two storage types, for executors that mix
// them (`precision="normal"`: a tensor a precision rule keeps in fp32 read or
// written by a step whose shader variant stores fp16, or the reverse).
// fp16 -> fp32 is exact; fp32 -> fp16 goes through precision.glsl's STORE,
// so it rounds to nearest even and saturates to +-65504 like every fp16
// store (NaN stays NaN).
//
// Both storage types appear in one shader, so it always needs 16-bit
// storage: the fp32 variant (which only the every-variant compile test
// builds) is the same code as the fp16 one; recorders use the fp16 variant.
// Specialization constants: 0 = workgroup size, 1 = TO_FP32 (bool).
// Push constants: n (elements), base (first element of this dispatch).
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#ifndef VKNN_FP16_STORAGE
#define VKNN_FP16_STORAGE 1
#endif
#include "precision.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool TO_FP32 = true;

// Both views of each binding; a pipeline touches one of each.
layout(std430, binding = 0) readonly buffer X16 { float16_t x16[]; };
layout(std430, binding = 0) readonly buffer X32 { float x32[]; };
layout(std430, binding = 1) writeonly buffer Y16 { float16_t y16[]; };
layout(std430, binding = 1) writeonly buffer Y32 { float y32[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
} p;

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    if (TO_FP32) {
        y32[i] = float(x16[i]);
    } else {
        STORE(y16, i, x32[i]);
    }
}
