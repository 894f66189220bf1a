// Workgroup-wide reductions (sum, max, min, prod) for kernels that give one
// row to one workgroup: subgroup arithmetic where the variant has it
// (VKNN_SUBGROUP=1: one subgroup op, then one shared slot per subgroup),
// otherwise a shared-memory tree. Every invocation of the workgroup must
// call these (they contain barriers) and gets the result.
//
// Needs: local_size_x_id = 0 and WG_SIZE, a spec constant (constant_id 0)
// holding the same value, declared before this include.
#ifndef VKNN_REDUCE_WG_GLSL
#define VKNN_REDUCE_WG_GLSL

#define RED_SUM 0
#define RED_MAX 1
#define RED_MIN 2
#define RED_PROD 3

#if VKNN_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#endif

shared float wg_scratch[WG_SIZE];

float wg_combine(int op, float a, float b) {
    if (op == RED_SUM) return a + b;
    if (op == RED_MAX) return vknn_max(a, b);
    if (op == RED_MIN) return vknn_min(a, b);
    return a * b;
}

float wg_reduce(int op, float v) {
#if VKNN_SUBGROUP
    float s;
    if (op == RED_SUM) s = subgroupAdd(v);
    else if (op == RED_MAX) s = subgroupMax(v);
    else if (op == RED_MIN) s = subgroupMin(v);
    else s = subgroupMul(v);
    // subgroupMax/Min leave NaN to the implementation; NaN must win.
    if (op == RED_MAX || op == RED_MIN) {
        if (subgroupAny(isnan(v))) s = VKNN_NAN;
    }
    if (subgroupElect()) wg_scratch[gl_SubgroupID] = s;
    barrier();
    float r = wg_scratch[0];
    for (uint i = 1u; i < gl_NumSubgroups; ++i) r = wg_combine(op, r, wg_scratch[i]);
    barrier();  // the scratch is reused by the next call
    return r;
#else
    uint t = gl_LocalInvocationID.x;
    wg_scratch[t] = v;
    barrier();
    for (uint s = uint(WG_SIZE) / 2u; s > 0u; s >>= 1u) {
        if (t < s) wg_scratch[t] = wg_combine(op, wg_scratch[t], wg_scratch[t + s]);
        barrier();
    }
    float r = wg_scratch[0];
    barrier();
    return r;
#endif
}

#endif  // VKNN_REDUCE_WG_GLSL
