// Storage and arithmetic types of every VKNN kernel, chosen by one define so
// the fp16-storage variant of a shader is the same source (ncnn's model).
//
//   VKNN_FP16_STORAGE=1  tensors are float16_t in memory, arithmetic is fp32
//   VKNN_FP16_HW_RTE=1   (with fp16 storage) the module declares
//                        RoundingModeRTE for fp16 (runtime/spirv.py patches
//                        it in where the device supports it), so the
//                        conversion rounds to nearest even by itself
//   (unset)              tensors and arithmetic are fp32
//
// sfp       the storage type of a tensor element
// afp       the arithmetic type (always fp32: accumulate wide, round once)
// LOAD(buf, i)       element i of `buf` as afp
// STORE(buf, i, v)   store afp `v` as element i: for fp16 it rounds to
//                    nearest even and saturates finite overflow to +-65504
//                    (a finite value never becomes inf); +-inf and NaN stay
//                    (a -inf attention mask must stay -inf).
#ifndef VKNN_PRECISION_GLSL
#define VKNN_PRECISION_GLSL

#define afp float

#if VKNN_FP16_STORAGE
#extension GL_EXT_shader_16bit_storage : require
#define sfp float16_t

// The fp32 -> fp16 conversion's rounding mode is implementation-defined
// unless the module declares RoundingModeRTE (a capability not every device
// has). So the value is first rounded to the nearest fp16-representable fp32
// with integer arithmetic (ties to even); converting an exactly representable
// value is exact under any rounding mode.
float vknn_round_fp16(float v) {
    if (isnan(v) || isinf(v)) return v;  // inf: the rounding below keeps it
    v = clamp(v, -65504.0, 65504.0);
    uint u = floatBitsToUint(v);
    uint sgn = u & 0x80000000u;
    uint mag = u & 0x7fffffffu;
    if (mag >= 0x38800000u) {
        // fp16 normal range (>= 2^-14): keep 10 of the 23 mantissa bits.
        mag += 0x00000fffu + ((mag >> 13) & 1u);
        mag &= 0xffffe000u;
        return uintBitsToFloat(sgn | mag);
    }
    // fp16 subnormal range: a multiple of 2^-24. mantissa*2^(e-150) / 2^-24.
    uint e = mag >> 23;
    if (e < 102u) return uintBitsToFloat(sgn);  // below 2^-25: rounds to +-0
    uint m = (mag & 0x007fffffu) | 0x00800000u;
    uint s = 126u - e;  // 14..24
    uint q = m >> s;
    uint rem = m & ((1u << s) - 1u);
    uint half_ = 1u << (s - 1u);
    if (rem > half_ || (rem == half_ && (q & 1u) == 1u)) q += 1u;
    float r = float(q) * 5.9604644775390625e-8;  // 2^-24, exact
    return sgn != 0u ? -r : r;
}

// Finite overflow saturates to +-65504 (clamp is undefined for NaN; +-inf stays).
float vknn_saturate_fp16(float v) {
    return isnan(v) || isinf(v) ? v : clamp(v, -65504.0, 65504.0);
}

#define LOAD(buf, i) float(buf[i])
#if VKNN_FP16_HW_RTE
#define STORE(buf, i, v) buf[i] = float16_t(vknn_saturate_fp16(v))
#else
#define STORE(buf, i, v) buf[i] = float16_t(vknn_round_fp16(v))
#endif

#else
#define sfp float
#define LOAD(buf, i) (buf[i])
#define STORE(buf, i, v) buf[i] = (v)
#endif

#endif  // VKNN_PRECISION_GLSL
