// vx.pool (max / avg / lp; 1-D/2-D; strided, dilated, padded, ceil mode),
// one invocation per output element. Global pools go to pool_global.comp.
//
// Average pooling divides by the number of taps on counted positions: the
// input only, or (COUNT_PAD) input + explicit pads, never the ceil-mode
// overhang beyond the end pads (ONNX / onnxruntime semantics; the CPU oracle
// computes the same count from a 0/1 mask).
//
// Specialization constants: 0 = workgroup size, 1 = KIND (codes below),
// 2 = COUNT_PAD.
// Bindings: 0 = x, 1 = y, 2.. = epilogue inputs (PW_EPI).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"

#define POOL_MAX 0
#define POOL_AVG 1
#define POOL_LP 2

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int KIND = 0;
layout(constant_id = 2) const bool COUNT_PAD = false;
// NC4HW4 x and y (`vulkan/layouts.py`): invocations in y's packed order,
// total = N * ceil(C/4) * OH * OW * 4; padded lanes exit at once.
layout(constant_id = 3) const bool PACKED = false;

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) writeonly buffer Y { sfp y_data[]; };

#include "pw_epilogue.glsl"

layout(push_constant) uniform Params {
    uint total, base;
    uint C, H, W, OH, OW;
    uint KH, KW, SH, SW, DH, DW;
    uint PT, PL, PB, PR;  // begin/end pads
    float lp;             // the p of an Lp pool
} p;

void main() {
    uint idx = p.base + gl_GlobalInvocationID.x;
    if (idx >= p.total) return;
    uint P = p.OH * p.OW;
    uint q, x_base, step_ = 1u;
    if (PACKED) {
        uint rest = idx >> 2;
        q = rest % P;
        uint blk = rest / P;  // n * C4 + c / 4
        uint lane = idx & 3u;
        if ((blk % ((p.C + 3u) >> 2)) * 4u + lane >= p.C) return;
        x_base = blk * p.H * p.W * 4u + lane;
        step_ = 4u;
    } else {
        q = idx % P;
        x_base = (idx / P) * p.H * p.W;
    }
    int iy0 = int((q / p.OW) * p.SH) - int(p.PT);
    int ix0 = int((q % p.OW) * p.SW) - int(p.PL);
    afp acc = KIND == POOL_MAX ? uintBitsToFloat(0xff800000u) : 0.0;  // -inf for max
    uint count = 0u;
    for (uint ky = 0u; ky < p.KH; ++ky) {
        int iy = iy0 + int(ky * p.DH);
        bool y_in = iy >= 0 && iy < int(p.H);
        bool y_counted = COUNT_PAD ? (iy < int(p.H + p.PB)) : y_in;
        for (uint kx = 0u; kx < p.KW; ++kx) {
            int ix = ix0 + int(kx * p.DW);
            bool x_in = ix >= 0 && ix < int(p.W);
            if (COUNT_PAD) {
                if (y_counted && ix < int(p.W + p.PR)) count += 1u;
            } else if (y_in && x_in) {
                count += 1u;
            }
            if (!(y_in && x_in)) continue;
            afp v = LOAD(x_data, x_base + (uint(iy) * p.W + uint(ix)) * step_);
            if (KIND == POOL_MAX) acc = v > acc ? v : acc;  // NaN skipped, as onnxruntime
            else if (KIND == POOL_AVG) acc += v;
            else acc += pow(abs(v), p.lp);
        }
    }
    afp r = acc;
    if (KIND == POOL_AVG) r = acc / float(count);
    if (KIND == POOL_LP) r = pow(acc, 1.0 / p.lp);
    STORE(y_data, idx, PW_APPLY(r, idx));
}
