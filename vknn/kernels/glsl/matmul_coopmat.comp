// vx.matmul / vx.gemm on tensor cores (VK_KHR_cooperative_matrix, fp16 A / B,
// fp32 accumulation): Y[b] = alpha * A[b] @ B[b] (+ beta * C), then the fused
// epilogue. Same operands, strides, batch decomposition and push constants as
// matmul.comp; the tiling is coopmat_common.glsl's. Split-K (VKNN_SPLITK=1,
// for grids too small to fill the GPU): workgroup z = batch * splits + s
// covers K [s * kchunk, (s+1) * kchunk) and writes its unscaled fp32
// partials to binding 2, part[s * batches*M*N + idx]; splitk_reduce.comp
// sums them with alpha, beta * C and the epilogue.
//
// Operands are staged in shared memory in the order they are contiguous in
// global memory (no transposition on the way): A(m, k) as rows of k when
// A_KCONTIG (read with RowMajor) else as rows of m (ColumnMajor); B(k, n) as
// rows of n when B_NCONTIG (RowMajor) else rows of k (ColumnMajor). VEC_A /
// VEC_B: the recorder checked that the contiguous dim, every other stride and
// the offsets are multiples of 4, so 4-element chunks are aligned and either
// wholly inside the operand or wholly outside.
//
// Specialization constants: 0 = workgroup size (4 * SG), 1 = BM, 2 = BN
// (each 32, 64 or 128), 3 = A_KCONTIG, 4 = B_NCONTIG, 5 = HAS_C, 6 = VEC_A,
// 7 = VEC_B, 8 = SG (the subgroup size).
// Bindings: 0 = A, 1 = B, 2 = Y, 3 = C (A when there is none), then the
// epilogue's inputs.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"
#include "coopmat_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG_SIZE = 128;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const bool A_KCONTIG = true;
layout(constant_id = 4) const bool B_NCONTIG = true;
layout(constant_id = 5) const bool HAS_C = false;
layout(constant_id = 6) const bool VEC_A = false;
layout(constant_id = 7) const bool VEC_B = false;
layout(constant_id = 8) const uint SG = 32;

layout(std430, binding = 0) readonly buffer A { sfp a_data[]; };
layout(std430, binding = 0) readonly buffer A4 { sfp4 a4[]; };
layout(std430, binding = 1) readonly buffer B { sfp b_data[]; };
layout(std430, binding = 1) readonly buffer B4 { sfp4 b4[]; };
#if VKNN_SPLITK
layout(std430, binding = 2) writeonly buffer Part { float part[]; };
#else
layout(std430, binding = 2) writeonly buffer Y { sfp y_data[]; };
#endif
layout(std430, binding = 3) readonly buffer C { sfp c_data[]; };
#if !VKNN_SPLITK
#include "pw_epilogue.glsl"
#endif

layout(push_constant) uniform Params {
    uint M, N, K;
    uint a_sm, a_sk;
    uint b_sk, b_sn;
    uint c_sm, c_sn;
    uint bdims[3];
    uint a_bs[3];
    uint b_bs[3];
    float alpha, beta;
    uint kchunk;
    uint splits;
    uint a_off, b_off;
} p;

const uint TM = BM / (CM * WM);  // accumulators per subgroup along M
const uint TN = BN / (CM * WN);
const uint A_STRIDE_K = BK + PAD;  // A_KCONTIG: As[m][k]
const uint A_STRIDE_M = BM + PAD;  // else:      As[k][m]
const uint B_STRIDE_N = BN + PAD;  // B_NCONTIG: Bs[k][n]
const uint B_STRIDE_K = BK + PAD;  // else:      Bs[n][k]
const uint A_TILE = BM * (BK + PAD);  // covers both layouts (BM >= 32)
const uint B_TILE = BN * (BK + PAD);
const uint NA = BM * BK / 4u / WG_SIZE;  // 4-element chunks per invocation
const uint NB = BN * BK / 4u / WG_SIZE;
#define MAX_CHUNKS 8

shared float16_t As[2 * A_TILE];
shared float16_t Bs[2 * B_TILE];
shared float stage[4 * CM * CM];

f16vec4 ra[MAX_CHUNKS];
f16vec4 rb[MAX_CHUNKS];

uint a_base, b_base;
uint m0, n0;
uint k_end;

// Chunk c of the A tile: (row, col) in the tile's contiguous order.
void a_chunk(uint c, out uint mm, out uint kk) {
    if (A_KCONTIG) { mm = c / (BK / 4u); kk = (c % (BK / 4u)) * 4u; }
    else { kk = c / (BM / 4u); mm = (c % (BM / 4u)) * 4u; }
}

void b_chunk(uint c, out uint nn, out uint kk) {
    if (B_NCONTIG) { kk = c / (BN / 4u); nn = (c % (BN / 4u)) * 4u; }
    else { nn = c / (BK / 4u); kk = (c % (BK / 4u)) * 4u; }
}

float16_t a_at(uint m, uint k) {
    return (m < p.M && k < k_end) ? float16_t(LOAD(a_data, a_base + m * p.a_sm + k * p.a_sk))
                                : float16_t(0.0);
}

float16_t b_at(uint k, uint n) {
    return (k < k_end && n < p.N) ? float16_t(LOAD(b_data, b_base + k * p.b_sk + n * p.b_sn))
                                : float16_t(0.0);
}

void load_tiles(uint k0) {
    uint t = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0u; i < MAX_CHUNKS; ++i) {
        if (i >= NA) break;
        uint mm, kk;
        a_chunk(t + i * WG_SIZE, mm, kk);
        uint m = m0 + mm, k = k0 + kk;
        if (VEC_A) {
            bool inside = m < p.M && k < k_end;
            uint e = a_base + m * p.a_sm + k * p.a_sk;
            ra[i] = inside ? f16vec4(a4[e / 4u]) : f16vec4(0.0);
        } else if (A_KCONTIG) {
            ra[i] = f16vec4(a_at(m, k), a_at(m, k + 1u), a_at(m, k + 2u), a_at(m, k + 3u));
        } else {
            ra[i] = f16vec4(a_at(m, k), a_at(m + 1u, k), a_at(m + 2u, k), a_at(m + 3u, k));
        }
    }
    [[unroll]] for (uint i = 0u; i < MAX_CHUNKS; ++i) {
        if (i >= NB) break;
        uint nn, kk;
        b_chunk(t + i * WG_SIZE, nn, kk);
        uint n = n0 + nn, k = k0 + kk;
        if (VEC_B) {
            bool inside = n < p.N && k < k_end;
            uint e = b_base + k * p.b_sk + n * p.b_sn;
            rb[i] = inside ? f16vec4(b4[e / 4u]) : f16vec4(0.0);
        } else if (B_NCONTIG) {
            rb[i] = f16vec4(b_at(k, n), b_at(k, n + 1u), b_at(k, n + 2u), b_at(k, n + 3u));
        } else {
            rb[i] = f16vec4(b_at(k, n), b_at(k + 1u, n), b_at(k + 2u, n), b_at(k + 3u, n));
        }
    }
}

void store_tiles(uint buf) {
    uint t = gl_LocalInvocationID.x;
    [[unroll]] for (uint i = 0u; i < MAX_CHUNKS; ++i) {
        if (i >= NA) break;
        uint mm, kk;
        a_chunk(t + i * WG_SIZE, mm, kk);
        uint s = buf * A_TILE + (A_KCONTIG ? mm * A_STRIDE_K + kk : kk * A_STRIDE_M + mm);
        As[s] = ra[i].x; As[s + 1u] = ra[i].y; As[s + 2u] = ra[i].z; As[s + 3u] = ra[i].w;
    }
    [[unroll]] for (uint i = 0u; i < MAX_CHUNKS; ++i) {
        if (i >= NB) break;
        uint nn, kk;
        b_chunk(t + i * WG_SIZE, nn, kk);
        uint s = buf * B_TILE + (B_NCONTIG ? kk * B_STRIDE_N + nn : nn * B_STRIDE_K + kk);
        Bs[s] = rb[i].x; Bs[s + 1u] = rb[i].y; Bs[s + 2u] = rb[i].z; Bs[s + 3u] = rb[i].w;
    }
}

void main() {
    uint sg = gl_SubgroupID;
    uint row0 = (sg / WN) * TM * CM;  // this subgroup's block in the tile
    uint col0 = (sg % WN) * TN * CM;
    m0 = gl_WorkGroupID.y * BM;
    n0 = gl_WorkGroupID.x * BN;
    uint ks = gl_WorkGroupID.z % p.splits;
    uint batch = gl_WorkGroupID.z / p.splits;
    uint k_begin = ks * p.kchunk;
    k_end = min(p.K, k_begin + p.kchunk);
    a_base = p.a_off;
    b_base = p.b_off;
    uint rest = batch;
    for (int d = 2; d >= 0; --d) {
        uint c = rest % p.bdims[d];
        rest /= p.bdims[d];
        a_base += c * p.a_bs[d];
        b_base += c * p.b_bs[d];
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
        if (more) load_tiles(k_begin + (s + 1u) * BK);  // in flight during the MMAs below
        [[unroll]] for (uint kk = 0u; kk < BK; kk += CM) {
            CM_A ma[TM];
            CM_B mb[TN];
            [[unroll]] for (uint i = 0u; i < TM; ++i) {
                uint r = row0 + i * CM;
                if (A_KCONTIG)
                    coopMatLoad(ma[i], As, cur * A_TILE + r * A_STRIDE_K + kk, A_STRIDE_K,
                                gl_CooperativeMatrixLayoutRowMajor);
                else
                    coopMatLoad(ma[i], As, cur * A_TILE + kk * A_STRIDE_M + r, A_STRIDE_M,
                                gl_CooperativeMatrixLayoutColumnMajor);
            }
            [[unroll]] for (uint j = 0u; j < TN; ++j) {
                uint c = col0 + j * CM;
                if (B_NCONTIG)
                    coopMatLoad(mb[j], Bs, cur * B_TILE + kk * B_STRIDE_N + c, B_STRIDE_N,
                                gl_CooperativeMatrixLayoutRowMajor);
                else
                    coopMatLoad(mb[j], Bs, cur * B_TILE + c * B_STRIDE_K + kk, B_STRIDE_K,
                                gl_CooperativeMatrixLayoutColumnMajor);
            }
            [[unroll]] for (uint i = 0u; i < TM; ++i)
                [[unroll]] for (uint j = 0u; j < TN; ++j)
                    acc[i][j] = coopMatMulAdd(ma[i], mb[j], acc[i][j]);
        }
        if (more) store_tiles(cur ^ 1u);
        barrier();
    }

    uint y_base = batch * p.M * p.N;
    uint lane = gl_SubgroupInvocationID;
    [[unroll]] for (uint i = 0u; i < TM; ++i) {
        [[unroll]] for (uint j = 0u; j < TN; ++j) {
            coopMatStore(acc[i][j], stage, sg * CM * CM, CM, gl_CooperativeMatrixLayoutRowMajor);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < CM * CM; e += SG) {
                uint m = m0 + row0 + i * CM + e / CM;
                uint n = n0 + col0 + j * CM + e % CM;
                if (m < p.M && n < p.N) {
                    uint idx = y_base + m * p.N + n;
#if VKNN_SPLITK
                    part[ks * (gl_NumWorkGroups.z / p.splits) * p.M * p.N + idx] =
                        stage[sg * CM * CM + e];
#else
                    float v = p.alpha * stage[sg * CM * CM + e];
                    if (HAS_C) v += p.beta * LOAD(c_data, m * p.c_sm + n * p.c_sn);
                    STORE(y_data, idx, PW_APPLY(v, idx));
#endif
                }
            }
            subgroupBarrier();  // the block is read before the next one overwrites it
        }
    }
}
