// Shared by the data-movement kernels (copy, gather, pad, resize, select,
// cast, quant, intops): tensor elements as raw storage words, so a copy is
// bit-exact for every dtype and never goes through float registers (an int32
// 1 is a float denormal, which a float move may flush).
//
//   elem   one stored element: uint16_t in the fp16 variant (a float tensor
//          of an fp16-storage executor), uvec2 with VKNN_I64_WORDS (an int64
//          tensor: two words, no shaderInt64 needed to move it), uint
//          otherwise (fp32 floats, and every other int/bool tensor, stored
//          as int32; see vulkan/dtypes.py)
//
// The Python side picks the variant per tensor (`dtypes.elem_variant`), so
// an int tensor in an fp16 executor uses the fp32 variant of these shaders.
#ifndef VKNN_MOVEMENT_GLSL
#define VKNN_MOVEMENT_GLSL

#include "precision.glsl"

#if VKNN_I64_WORDS
#define elem uvec2
#elif VKNN_FP16_STORAGE
#define elem uint16_t
#else
#define elem uint
#endif

// a mod b with the sign of b (b > 0): GLSL leaves % of negatives undefined.
int vknn_pmod(int a, int b) {
    int r = a - b * (a / b);
    return r < 0 ? r + b : r;
}

// Wrap a 32-bit result to the model's integer width (int8 add wraps at 8
// bits, as numpy does); bits 32 is the identity, bits 1 is bool (0/1).
int vknn_wrap(int v, int bits, bool signed_) {
    if (bits >= 32) return v;
    if (bits == 1) return v != 0 ? 1 : 0;
    return signed_ ? bitfieldExtract(v, 0, bits) : int(bitfieldExtract(uint(v), 0, bits));
}

#endif  // VKNN_MOVEMENT_GLSL
