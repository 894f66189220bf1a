// A float tensor moved between storage forms: fp16 or fp32 words, flat
// (row-major) or NC4HW4 (`vulkan/layouts.py`), any combination. The executor
// records it where a step reads or writes a tensor in another form than it
// is stored in (`precision="normal"` width changes, fp16 segment inputs and
// outputs kept fp32, packed tensors read by flat kernels and back).
// fp16 -> fp32 is exact; fp32 -> fp16 goes through precision.glsl's STORE,
// so it rounds to nearest even and saturates to +-65504 like every fp16
// store (NaN stays NaN). Padded lanes of a packed destination are not
// written.
//
// Both storage types appear in one shader, so it always needs 16-bit
// storage: the fp32 variant (which only the every-variant compile test
// builds) is the same code as the fp16 one; recorders use the fp16 variant.
// Specialization constants: 0 = workgroup size, 1 = SRC_FP32, 2 = DST_FP32,
// 3 = SRC_PACKED, 4 = DST_PACKED.
// Push constants: n (logical elements), base (first element of this
// dispatch), C and HW of the logical [N, C, H, W] (packed forms only).
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#ifndef VKNN_FP16_STORAGE
#define VKNN_FP16_STORAGE 1
#endif
#include "precision.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool SRC_FP32 = false;
layout(constant_id = 2) const bool DST_FP32 = true;
layout(constant_id = 3) const bool SRC_PACKED = false;
layout(constant_id = 4) const bool DST_PACKED = false;

// Both views of each binding; a pipeline touches one of each.
layout(std430, binding = 0) readonly buffer X16 { float16_t x16[]; };
layout(std430, binding = 0) readonly buffer X32 { float x32[]; };
layout(std430, binding = 1) writeonly buffer Y16 { float16_t y16[]; };
layout(std430, binding = 1) writeonly buffer Y32 { float y32[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    uint C;
    uint HW;
} p;

// Row-major element i of [N, C, H, W] in NC4HW4 storage.
uint packed_index(uint i) {
    uint hw = i % p.HW;
    uint nc = i / p.HW;
    uint c = nc % p.C;
    uint nn = nc / p.C;
    uint c4 = (p.C + 3u) / 4u;
    return ((nn * c4 + c / 4u) * p.HW + hw) * 4u + (c & 3u);
}

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint si = SRC_PACKED ? packed_index(i) : i;
    uint di = DST_PACKED ? packed_index(i) : i;
    float v = SRC_FP32 ? x32[si] : float(x16[si]);
    if (DST_FP32) {
        y32[di] = v;
    } else {
        STORE(y16, di, v);
    }
}
