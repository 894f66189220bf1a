// vx.conv on tensor cores: the implicit GEMM of conv.comp (per image n and
// group g, Y[g*Mg + m, p] = sum_k W[g*Mg + m, k] * im2col(X)[k, p]) with
// coopmat_common.glsl's tiling: rows are output channels (BM), columns
// output pixels (BN), K = Cg * KH * KW stepped BK = 32 at a time.
//
// A (the weight, [Mg, K] per group, K contiguous: OIHW flat, OHWI packed) is
// staged as rows of k (RowMajor). B (im2col, gathered straight from X into
// shared memory, never materialized) is staged in the order X is contiguous:
// - flat NCHW: rows of pixels per k (Bs[k][p], RowMajor); each invocation
//   gathers 4 consecutive pixels of one k (one 64-bit load for POINTWISE
//   convs when H*W is a multiple of 4), its pixels' window origins computed
//   once;
// - NC4HW4 (PACKED): k = tap * Cg + ci, so 4 consecutive k of one pixel are
//   one channel block: rows of k per pixel (Bs[p][k], ColumnMajor), one
//   64-bit load per chunk when Cg is a multiple of 4 (VEC_B).
// Out-of-window taps (padding) and edge tiles read nothing: zeros.
//
// The result leaves through the per-subgroup 16 x 16 fp32 staging block,
// bias and epilogue applied per element (PW_APPLY at y's storage index, as
// conv.comp), stores ordered so consecutive lanes write consecutive pixels
// (flat) or consecutive channels of a pixel block (packed).
//
// Split-K (VKNN_SPLITK=1): workgroup z also selects a K slice [s * kchunk,
// (s+1) * kchunk) and binding 3 holds `splits` fp32 partial results at y's
// storage index, part[s * total + yi], summed with bias and epilogue by
// splitk_reduce.comp (as conv.comp's).
//
// Specialization constants: 0 = workgroup size (4 * SG), 1 = BM, 2 = BN,
// 3 = POINTWISE, 4 = HAS_BIAS, 5 = PACKED, 6 = VEC_A, 7 = VEC_B, 8 = SG.
// Push constants: conv.comp's Params. Dispatch: (ceil(P / BN), ceil(Mg / BM),
// N * groups). Bindings: 0 = x, 1 = w, 2 = bias (w when none), 3 = y, then
// the epilogue's inputs.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"
#include "coopmat_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG_SIZE = 128;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const bool POINTWISE = false;
layout(constant_id = 4) const bool HAS_BIAS = false;
layout(constant_id = 5) const bool PACKED = false;
layout(constant_id = 6) const bool VEC_A = false;
layout(constant_id = 7) const bool VEC_B = false;
layout(constant_id = 8) const uint SG = 32;

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 0) readonly buffer X4 { sfp4 x4[]; };
layout(std430, binding = 1) readonly buffer Wt { sfp w_data[]; };
layout(std430, binding = 1) readonly buffer Wt4 { sfp4 w4[]; };
layout(std430, binding = 2) readonly buffer Bias { sfp b_data[]; };
#if VKNN_SPLITK
layout(std430, binding = 3) writeonly buffer Part { float part[]; };
#else
layout(std430, binding = 3) writeonly buffer Y { sfp y_data[]; };
#endif
#if !VKNN_SPLITK
#include "pw_epilogue.glsl"
#endif

layout(push_constant) uniform Params {
    uint C, H, W;
    uint M, OH, OW;
    uint Cg, Mg, K;
    uint KH, KW, groups;
    uint SH, SW, DH, DW;
    uint PH, PW;
    uint kchunk;
    uint splits;
    uint magic_khw;
    uint magic_kw;
} p;

const uint TM = BM / (CM * WM);
const uint TN = BN / (CM * WN);
const uint A_STRIDE = BK + PAD;    // As[m][k]
const uint B_STRIDE_P = BN + PAD;  // flat:   Bs[k][p]
const uint B_STRIDE_K = BK + PAD;  // packed: Bs[p][k]
const uint A_TILE = BM * (BK + PAD);
const uint B_TILE = BN * (BK + PAD);
const uint NA = BM * BK / 4u / WG_SIZE;
const uint NB = BN * BK / 4u / WG_SIZE;
#define MAX_CHUNKS 8

shared float16_t As[2 * A_TILE];
shared float16_t Bs[2 * B_TILE];
shared float stage[4 * CM * CM];

f16vec4 ra[MAX_CHUNKS];
f16vec4 rb[MAX_CHUNKS];

uint n, g, m0, p0, P, HW, KHW, x_base, w_base, k_end;
// Flat: this invocation's 4 pixels (fixed over K) and their window origins.
int fy[4], fx[4];
bool fok[4];

// Element (n, c, spatial sp) of an NC4HW4 tensor with `chans` channels of `hw` pixels.
uint packed_at(uint nn, uint c, uint sp, uint chans, uint hw) {
    return (((nn * ((chans + 3u) >> 2) + (c >> 2)) * hw + sp) << 2) + (c & 3u);
}

float16_t w_at(uint m, uint k) {
    return (m < p.Mg && k < k_end) ? float16_t(LOAD(w_data, w_base + m * p.K + k)) : float16_t(0.0);
}

// im2col(X)[k, pixel] for a pixel with window origin (iy0, ix0); k < K.
float16_t x_tap(uint k, int iy0, int ix0, uint pix) {
    uint ci, rem;
    if (PACKED) { rem = k / p.Cg; ci = k - rem * p.Cg; }
    else { ci = k / KHW; rem = k - ci * KHW; }
    uint ky = rem / p.KW;
    uint kx = rem - ky * p.KW;
    int iy = iy0 + int(ky * p.DH);
    int ix = ix0 + int(kx * p.DW);
    if (iy < 0 || iy >= int(p.H) || ix < 0 || ix >= int(p.W)) return float16_t(0.0);
    uint sp = uint(iy) * p.W + uint(ix);
    return float16_t(LOAD(x_data, PACKED ? packed_at(n, g * p.Cg + ci, sp, p.C, HW)
                                         : x_base + ci * HW + sp));
}

void load_tiles(uint k0) {
    uint t = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0u; i < MAX_CHUNKS; ++i) {
        if (i >= NA) break;
        uint c = t + i * WG_SIZE;
        uint m = m0 + c / (BK / 4u), k = k0 + (c % (BK / 4u)) * 4u;
        if (VEC_A) {
            ra[i] = (m < p.Mg && k < k_end) ? f16vec4(w4[(w_base + m * p.K + k) / 4u])
                                          : f16vec4(0.0);
        } else {
            ra[i] = f16vec4(w_at(m, k), w_at(m, k + 1u), w_at(m, k + 2u), w_at(m, k + 3u));
        }
    }
    [[unroll]] for (uint i = 0u; i < MAX_CHUNKS; ++i) {
        if (i >= NB) break;
        uint c = t + i * WG_SIZE;
        f16vec4 v = f16vec4(0.0);
        if (PACKED) {
            // 4 consecutive k of one pixel.
            uint pix = p0 + c / (BK / 4u), k = k0 + (c % (BK / 4u)) * 4u;
            if (pix < P && k < k_end) {
                uint oy = pix / p.OW, ox = pix - oy * p.OW;
                int iy0 = int(oy * p.SH) - int(p.PH), ix0 = int(ox * p.SW) - int(p.PW);
                if (VEC_B) {
                    // Cg % 4 == 0: one tap, 4 channels of one NC4HW4 block.
                    uint tap = k / p.Cg, ci = k - tap * p.Cg;
                    uint ky = tap / p.KW, kx = tap - ky * p.KW;
                    int iy = iy0 + int(ky * p.DH), ix = ix0 + int(kx * p.DW);
                    if (iy >= 0 && iy < int(p.H) && ix >= 0 && ix < int(p.W))
                        v = f16vec4(x4[packed_at(n, g * p.Cg + ci, uint(iy) * p.W + uint(ix),
                                                 p.C, HW) / 4u]);
                } else {
                    [[unroll]] for (uint q = 0u; q < 4u; ++q)
                        if (k + q < k_end) v[q] = x_tap(k + q, iy0, ix0, pix);
                }
            }
        } else {
            // 4 consecutive pixels of one k (this invocation's fixed pixels).
            uint k = k0 + c / (BN / 4u);
            if (k < k_end) {
                uint pix = p0 + (c % (BN / 4u)) * 4u;
                if (POINTWISE && VEC_B) {
                    if (pix < P) v = f16vec4(x4[(x_base + k * HW + pix) / 4u]);
                } else if (POINTWISE) {
                    [[unroll]] for (uint q = 0u; q < 4u; ++q)
                        if (pix + q < P) v[q] = float16_t(LOAD(x_data, x_base + k * HW + pix + q));
                } else {
                    [[unroll]] for (uint q = 0u; q < 4u; ++q)
                        if (fok[q]) v[q] = x_tap(k, fy[q], fx[q], pix + q);
                }
            }
        }
        rb[i] = v;
    }
}

void store_tiles(uint buf) {
    uint t = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0u; i < MAX_CHUNKS; ++i) {
        if (i >= NA) break;
        uint c = t + i * WG_SIZE;
        uint s = buf * A_TILE + (c / (BK / 4u)) * A_STRIDE + (c % (BK / 4u)) * 4u;
        As[s] = ra[i].x; As[s + 1u] = ra[i].y; As[s + 2u] = ra[i].z; As[s + 3u] = ra[i].w;
    }
    [[unroll]] for (uint i = 0u; i < MAX_CHUNKS; ++i) {
        if (i >= NB) break;
        uint c = t + i * WG_SIZE;
        uint s = buf * B_TILE + (PACKED ? (c / (BK / 4u)) * B_STRIDE_K + (c % (BK / 4u)) * 4u
                                        : (c / (BN / 4u)) * B_STRIDE_P + (c % (BN / 4u)) * 4u);
        Bs[s] = rb[i].x; Bs[s + 1u] = rb[i].y; Bs[s + 2u] = rb[i].z; Bs[s + 3u] = rb[i].w;
    }
}

void main() {
    uint sg = gl_SubgroupID;
    uint row0 = (sg / WN) * TM * CM;
    uint col0 = (sg % WN) * TN * CM;
    P = p.OH * p.OW;
    HW = p.H * p.W;
    KHW = p.KH * p.KW;
    p0 = gl_WorkGroupID.x * BN;
    m0 = gl_WorkGroupID.y * BM;
    uint ks = gl_WorkGroupID.z % p.splits;
    uint ng = gl_WorkGroupID.z / p.splits;
    n = ng / p.groups;
    g = ng % p.groups;
    uint k_begin = ks * p.kchunk;
    k_end = min(p.K, k_begin + p.kchunk);
    x_base = (n * p.C + g * p.Cg) * HW;
    w_base = g * p.Mg * p.K;
    if (!PACKED && !POINTWISE) {
        // WG_SIZE is a multiple of BN / 4: the pixel quad is the same for every chunk.
        uint pix = p0 + (gl_LocalInvocationID.x % (BN / 4u)) * 4u;
        [[unroll]] for (uint q = 0u; q < 4u; ++q) {
            uint pq = pix + q;
            fok[q] = pq < P;
            uint oy = fok[q] ? pq / p.OW : 0u, ox = fok[q] ? pq - oy * p.OW : 0u;
            fy[q] = int(oy * p.SH) - int(p.PH);
            fx[q] = int(ox * p.SW) - int(p.PW);
        }
    }

    CM_ACC acc[TM][TN];
    [[unroll]] for (uint i = 0u; i < TM; ++i)
        [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = CM_ACC(0.0);

    uint steps = (k_end - k_begin + BK - 1u) / BK;
    load_tiles(k_begin);
    store_tiles(0u);
    barrier();
    for (uint s = 0u; s < steps; ++s) {
        uint cur = s & 1u;
        bool more = s + 1u < steps;
        if (more) load_tiles(k_begin + (s + 1u) * BK);
        [[unroll]] for (uint kk = 0u; kk < BK; kk += CM) {
            CM_A ma[TM];
            CM_B mb[TN];
            [[unroll]] for (uint i = 0u; i < TM; ++i)
                coopMatLoad(ma[i], As, cur * A_TILE + (row0 + i * CM) * A_STRIDE + kk, A_STRIDE,
                            gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint j = 0u; j < TN; ++j) {
                uint c = col0 + j * CM;
                if (PACKED)
                    coopMatLoad(mb[j], Bs, cur * B_TILE + c * B_STRIDE_K + kk, B_STRIDE_K,
                                gl_CooperativeMatrixLayoutColumnMajor);
                else
                    coopMatLoad(mb[j], Bs, cur * B_TILE + kk * B_STRIDE_P + c, B_STRIDE_P,
                                gl_CooperativeMatrixLayoutRowMajor);
            }
            [[unroll]] for (uint i = 0u; i < TM; ++i)
                [[unroll]] for (uint j = 0u; j < TN; ++j)
                    acc[i][j] = coopMatMulAdd(ma[i], mb[j], acc[i][j]);
        }
        if (more) store_tiles(cur ^ 1u);
        barrier();
    }

    uint lane = gl_SubgroupInvocationID;
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
        [[unroll]] for (uint j = 0u; j < TN; ++j) {
            coopMatStore(acc[i][j], stage, sg * CM * CM, CM, gl_CooperativeMatrixLayoutRowMajor);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < CM * CM; e += SG) {
                // Flat: pixels fastest; packed: the 4 channels of a block fastest.
                uint r = PACKED ? (e / 64u) * 4u + (e & 3u) : e / CM;
                uint q = PACKED ? (e >> 2) & 15u : e % CM;
                uint m = m0 + row0 + i * CM + r;
                uint pix = p0 + col0 + j * CM + q;
                if (m < p.Mg && pix < P) {
                    uint oc = g * p.Mg + m;
                    uint yi = PACKED ? packed_at(n, oc, pix, p.M, P) : (n * p.M + oc) * P + pix;
                    float v = stage[sg * CM * CM + r * CM + q];
#if VKNN_SPLITK
                    uint total = (gl_NumWorkGroups.z / (p.splits * p.groups))
                                 * (PACKED ? (p.M + 3u) & ~3u : p.M) * P;
                    part[ks * total + yi] = v;
#else
                    if (HAS_BIAS) v += LOAD(b_data, oc);
                    STORE(y_data, yi, PW_APPLY(v, yi));
#endif
                }
            }
            subgroupBarrier();
        }
    }
}
