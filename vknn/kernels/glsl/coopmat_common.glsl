// What the cooperative-matrix (tensor core) kernels share: matmul_coopmat.comp,
// conv_coopmat.comp, attention_coopmat.comp.
//
// A workgroup of 4 subgroups (2 x 2, WG_SIZE = 4 * SG, SG the target's
// subgroup size: the module is SPIR-V 1.3, so the driver runs it at the
// device's reported subgroup size) computes a BM x BN output tile; each
// subgroup a (BM/2) x (BN/2) block of TM x TN 16 x 16 accumulators (fp32).
// K advances BK = 32 at a time through double-buffered shared tiles of fp16
// (one barrier per K step: the next tile is loaded from global memory into
// registers while the current one is multiplied, then stored to the other
// buffer). Global loads move 4 elements at a time (64 bits at fp16 storage)
// where the operand's contiguous dim allows it (VEC_A / VEC_B), else 4
// scalar loads, each bounds-checked: edge tiles are zero-filled, never read
// out of bounds. Shared rows are padded by 8 halfs (16 bytes) so that every
// coopMatLoad pointer and stride stays 16-byte aligned and rows do not map
// to the same banks.
//
// The result leaves through a 16 x 16 fp32 staging block per subgroup: each
// lane then applies alpha / C / bias and the fused pointwise epilogue
// (pw_epilogue.glsl) to its elements and stores them with the usual STORE
// (fp16 rounding and saturation), bounds-checked.
#ifndef VKNN_COOPMAT_COMMON_GLSL
#define VKNN_COOPMAT_COMMON_GLSL

#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require

#define BK 32u
#define PAD 8u
#define CM 16u
#define WM 2u
#define WN 2u

#if VKNN_FP16_STORAGE
#define sfp4 f16vec4
#else
#define sfp4 vec4
#endif

#define CM_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define CM_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define CM_ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>

#endif  // VKNN_COOPMAT_COMMON_GLSL
