// vx.cast (ONNX Cast) between float32/float16 and the int32-stored integer
// and bool dtypes (see vulkan/dtypes.py). Float -> int truncates toward
// zero, then wraps to the target width; -> bool is `x != 0` (NaN is true);
// int -> int wraps; a float result is stored through STORE (in the fp16
// variant: rounded to nearest even, saturated). OUT_F16 is the fp32-storage
// case of a float16 target: the value is rounded to the nearest fp16 (ties
// to even), and overflows to +-inf as numpy's astype does.
// Float -> int32 (and narrower, before wrapping) of NaN, +-inf or a value
// past int32 gives INT32_MIN, as onnxruntime and numpy on x86 do.
// Built with VKNN_INT64 (needs shaderInt64) when either side is int64
// (stored as int64, see vulkan/dtypes.py): integers then pass through 64
// bits exactly, float -> int64 truncates and gives INT64_MIN for NaN, +-inf
// and values past int64 (onnxruntime's x86 result).
// Specialization constants: 0 = workgroup size, 1 = IN_FLOAT (bool),
// 2 = OUT (codes below), 3 = OUT_BITS, 4 = OUT_SIGNED (bool),
// 5 = IN_I64, 6 = OUT_I64 (the int64 sides, VKNN_INT64 builds only).
// Push constants: n, base.
// Bindings: 0 = x, 1 = y.
#version 450
#extension GL_GOOGLE_include_directive : require
#if VKNN_INT64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#include "movement.glsl"

#define CAST_FLOAT 0
#define CAST_F16 1
#define CAST_INT 2
#define CAST_BOOL 3

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool IN_FLOAT = true;
layout(constant_id = 2) const int OUT = 0;
layout(constant_id = 3) const int OUT_BITS = 32;
layout(constant_id = 4) const bool OUT_SIGNED = true;
layout(constant_id = 5) const bool IN_I64 = false;
layout(constant_id = 6) const bool OUT_I64 = false;

// Float and int views of each binding; a pipeline touches one of each.
layout(std430, binding = 0) readonly buffer XF { sfp xf_data[]; };
layout(std430, binding = 0) readonly buffer XI { int xi_data[]; };
layout(std430, binding = 1) writeonly buffer YF { sfp yf_data[]; };
layout(std430, binding = 1) writeonly buffer YI { int yi_data[]; };
#if VKNN_INT64
layout(std430, binding = 0) readonly buffer XL { int64_t xl_data[]; };
layout(std430, binding = 1) writeonly buffer YL { int64_t yl_data[]; };
#endif

layout(push_constant) uniform Params {
    uint n;
    uint base;
} p;

// Round to the nearest fp16 value (ties to even) in fp32, with integer
// arithmetic so no rounding mode is involved; past the largest finite
// fp16's rounding boundary (65520) the result is +-inf.
float vknn_to_f16(float v) {
    if (isnan(v) || isinf(v)) return v;
    uint u = floatBitsToUint(v);
    uint sgn = u & 0x80000000u;
    uint mag = u & 0x7fffffffu;
    if (mag >= 0x477ff000u) return uintBitsToFloat(sgn | 0x7f800000u);  // >= 65520
    if (mag >= 0x38800000u) {
        mag += 0x00000fffu + ((mag >> 13) & 1u);
        return uintBitsToFloat(sgn | (mag & 0xffffe000u));
    }
    uint e = mag >> 23;
    if (e < 102u) return uintBitsToFloat(sgn);
    uint m = (mag & 0x007fffffu) | 0x00800000u;
    uint s = 126u - e;
    uint q = m >> s;
    uint rem = m & ((1u << s) - 1u);
    uint half_ = 1u << (s - 1u);
    if (rem > half_ || (rem == half_ && (q & 1u) == 1u)) q += 1u;
    float r = float(q) * 5.9604644775390625e-8;
    return sgn != 0u ? -r : r;
}

// Truncation toward zero; NaN, +-inf and values past int32 give INT32_MIN.
int vknn_f2i(float x) {
    if (isnan(x) || x >= 2147483648.0 || x < -2147483648.0) return int(0x80000000u);
    return int(x);
}

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    if (IN_FLOAT) {
        float x = LOAD(xf_data, i);
        if (OUT == CAST_FLOAT) STORE(yf_data, i, x);
        else if (OUT == CAST_F16) STORE(yf_data, i, vknn_to_f16(x));
        else if (OUT == CAST_BOOL) yi_data[i] = x != 0.0 ? 1 : 0;
#if VKNN_INT64
        else if (OUT_I64) {
            // 2^63 is exact in fp32 (0x5f000000); -2^63 itself converts.
            bool past = isnan(x) || x >= uintBitsToFloat(0x5f000000u)
                || x < uintBitsToFloat(0xdf000000u);
            yl_data[i] = past ? int64_t(0x8000000000000000ul) : int64_t(x);
        }
#endif
        else yi_data[i] = vknn_wrap(vknn_f2i(x), OUT_BITS, OUT_SIGNED);
    } else {
#if VKNN_INT64
        int64_t x = IN_I64 ? xl_data[i] : int64_t(xi_data[i]);
        if (OUT == CAST_FLOAT) STORE(yf_data, i, float(x));
        else if (OUT == CAST_F16) STORE(yf_data, i, vknn_to_f16(float(x)));
        else if (OUT == CAST_BOOL) yi_data[i] = x != 0l ? 1 : 0;
        else if (OUT_I64) yl_data[i] = x;
        else yi_data[i] = vknn_wrap(int(x), OUT_BITS, OUT_SIGNED);  // the low word
#else
        int x = xi_data[i];
        if (OUT == CAST_FLOAT) STORE(yf_data, i, float(x));
        else if (OUT == CAST_F16) STORE(yf_data, i, vknn_to_f16(float(x)));
        else if (OUT == CAST_BOOL) yi_data[i] = x != 0 ? 1 : 0;
        else yi_data[i] = vknn_wrap(x, OUT_BITS, OUT_SIGNED);
#endif
    }
}
