// vx.quantize: y = clamp(round_half_even(x / scale) + zp, qmin, qmax);
// vx.dequantize: y = float(x - zp) * scale. Per tensor (C = 1) or per axis:
// the parameter index of element i is (i / inner) % C. Integers are int32
// words (vulkan/dtypes.py). The quotient relies on a correctly rounded
// division, as the oracle's f32 division is (ties decide the rounding);
// lavapipe divides exactly, and the tests check ties on the device.
// Specialization constants: 0 = workgroup size, 1 = DEQUANT (bool),
// 2 = HAS_ZP (bool).
// Push constants: n, base, inner, C, qmin, qmax.
// Bindings: 0 = x, 1 = scale, 2 = zero point (int words; x again when
// absent), 3 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "movement.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool DEQUANT = false;
layout(constant_id = 2) const bool HAS_ZP = true;

layout(std430, binding = 0) readonly buffer XF { sfp xf_data[]; };
layout(std430, binding = 0) readonly buffer XI { int xi_data[]; };
layout(std430, binding = 1) readonly buffer S { sfp s_data[]; };
layout(std430, binding = 2) readonly buffer Z { int z_data[]; };
layout(std430, binding = 3) writeonly buffer YF { sfp yf_data[]; };
layout(std430, binding = 3) writeonly buffer YI { int yi_data[]; };

layout(push_constant) uniform Params {
    uint n;
    uint base;
    uint inner;
    uint C;
    int qmin;
    int qmax;
} p;

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    uint c = (i / p.inner) % p.C;
    float s = LOAD(s_data, c);
    int zp = HAS_ZP ? z_data[c] : 0;
    if (DEQUANT) {
        STORE(yf_data, i, float(xi_data[i] - zp) * s);
    } else {
        precise float q = LOAD(xf_data, i) / s;
        // Clamp in float first: int() of an out-of-range float is undefined.
        float r = clamp(roundEven(q), -2147483520.0, 2147483520.0);
        yi_data[i] = clamp(int(r) + zp, p.qmin, p.qmax);
    }
}
