// vx.fused_pointwise: one invocation per result element runs a generated
// body (pointwise_codegen writes the virtual include pw_body.glsl: its input
// and output buffers and `void pw_run(uint idx)`); one pipeline per distinct
// body and shapes, which are literals in the generated index arithmetic.
//
// Without PW_GENERATED (the plain build every shader gets in the test suite)
// the body is a copy of binding 0 to binding 1, so the template compiles.
//
// Specialization constants: 0 = workgroup size.
// Push constants: n (elements), base (first element of this dispatch, for
// dispatches split at maxComputeWorkGroupCount).
#version 450
#extension GL_GOOGLE_include_directive : require
#if VKNN_INT64
// int64 tensors or values in the body (needs shaderInt64).
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#include "precision.glsl"
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Params {
    uint n;
    uint base;
} p;

#if PW_GENERATED
#include "pw_body.glsl"
#else
layout(std430, binding = 0) readonly buffer PwIn0 { sfp pw_in0[]; };
layout(std430, binding = 1) writeonly buffer PwOut0 { sfp pw_out0[]; };
void pw_run(uint idx) { STORE(pw_out0, idx, LOAD(pw_in0, idx)); }
#endif

void main() {
    uint i = p.base + gl_GlobalInvocationID.x;
    if (i >= p.n) return;
    pw_run(i);
}
