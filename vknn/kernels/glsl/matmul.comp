// vx.matmul / vx.gemm: Y[b] = alpha * A[b] @ B[b] (+ beta * C), tiled through
// shared memory. A workgroup computes a BM x BN tile of one batch entry; each
// invocation a TM x TN (4 x 4) register block of it, at rows ty + i*(BM/TM)
// and columns tx + j*(BN/TN): strided blocks make the shared-memory reads of
// neighbouring invocations hit neighbouring banks and the stores to Y
// coalesce. K advances BK at a time; tiles are loaded cooperatively with
// the invocation index running along whichever dim of A / B is contiguous
// (A_KCONTIG / B_NCONTIG), so global reads coalesce for plain and
// transposed operands alike.
//
// Operands are addressed by element strides and offsets (push constants),
// which covers trans_a / trans_b, broadcast batch dims (stride 0) and views
// (a transposed or sliced operand read in place: views.py) without copies.
// Batch entry gl_WorkGroupID.z is decomposed over up to 3 collapsed batch
// dims (bdims, innermost last).
//
// The next K tile is loaded into registers while the current one is
// multiplied (register prefetch), hiding a global round trip per K step.
// Split-K (VKNN_SPLITK=1, for grids too small to fill the GPU): workgroup z
// is batch * splits + s, slice s covers K [s * kchunk, (s+1) * kchunk). In
// one dispatch, without float atomics: each slice writes its unscaled fp32
// partials to part[s * batches*M*N + idx], then counts itself in on the
// tile's counter (an integer atomic); the slice that arrives last sums the
// tile's partials in slice order (deterministic whatever the arrival order),
// applies alpha, beta*C and the epilogue, stores Y and resets the counter to
// 0 for the next dispatch or replay. No workgroup ever waits for another.
//
// Specialization constants: 0 = workgroup size ((BM/4) * (BN/4)), 1 = BM,
// 2 = BN, 3 = A_KCONTIG, 4 = B_NCONTIG, 5 = HAS_C.
// Bindings: 0 = A, 1 = B, 2 = Y, 3 = C (bound to A when there is none),
// VKNN_SPLITK only: 4 = partials (fp32), 5 = per-tile counters (uint, zero
// between dispatches); then the epilogue's inputs (pw_epilogue.glsl: with
// PW_EPI, the generated pw_body.glsl applied to each element before its
// store, at its row-major index in Y).
#version 450
#extension GL_GOOGLE_include_directive : require
// [[unroll]]: the TM x TN accumulators must stay registers (dynamic indexing
// would put them in memory on compilers that do not unroll by themselves).
#extension GL_EXT_control_flow_attributes : require
#include "precision.glsl"
#include "common.glsl"

#define BK 16
#define TM 4
#define TN 4

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG_SIZE = 256;
layout(constant_id = 1) const int BM = 64;
layout(constant_id = 2) const int BN = 64;
layout(constant_id = 3) const bool A_KCONTIG = true;
layout(constant_id = 4) const bool B_NCONTIG = true;
layout(constant_id = 5) const bool HAS_C = false;

layout(std430, binding = 0) readonly buffer A { sfp a_data[]; };
layout(std430, binding = 1) readonly buffer B { sfp b_data[]; };
layout(std430, binding = 2) writeonly buffer Y { sfp y_data[]; };
layout(std430, binding = 3) readonly buffer C { sfp c_data[]; };
#if VKNN_SPLITK
// coherent: other workgroups of this dispatch read what this one writes.
layout(std430, binding = 4) coherent buffer Part { float part[]; };
layout(std430, binding = 5) coherent buffer Count { uint tile_count[]; };
shared bool last_slice;
#endif
#include "pw_epilogue.glsl"

layout(push_constant) uniform Params {
    uint M, N, K;
    uint a_sm, a_sk;   // A(m, k) = a_data[a_base + m*a_sm + k*a_sk]
    uint b_sk, b_sn;   // B(k, n) = b_data[b_base + k*b_sk + n*b_sn]
    uint c_sm, c_sn;   // C(m, n) = c_data[m*c_sm + n*c_sn] (0 where it broadcasts)
    uint bdims[3];
    uint a_bs[3];
    uint b_bs[3];
    float alpha, beta;
    uint kchunk;       // K per split slice (a multiple of BK; K when unsplit)
    uint splits;       // K slices (1 when unsplit)
    uint a_off, b_off; // first element of A / B (strided views of a larger tensor)
} p;

#define MAX_LOADS 8

shared float As[BK * BM];  // As[k * BM + m]
shared float Bs[BK * BN];  // Bs[k * BN + n]

void main() {
    const uint RM = uint(BM / TM);  // invocations along M
    const uint RN = uint(BN / TN);  // invocations along N
    uint t = gl_LocalInvocationID.x;
    uint tx = t % RN;
    uint ty = t / RN;
    uint m0 = gl_WorkGroupID.y * uint(BM);
    uint n0 = gl_WorkGroupID.x * uint(BN);

    uint s = gl_WorkGroupID.z % p.splits;
    uint batch = gl_WorkGroupID.z / p.splits;
    uint a_base = p.a_off, b_base = p.b_off;
    uint rest = batch;
    for (int d = 2; d >= 0; --d) {
        uint c = rest % p.bdims[d];
        rest /= p.bdims[d];
        a_base += c * p.a_bs[d];
        b_base += c * p.b_bs[d];
    }
    uint k_begin = s * p.kchunk;
    uint k_end = min(p.K, k_begin + p.kchunk);
    const int NA = BM * BK / WG_SIZE;  // A-tile elements per invocation
    const int NB = BN * BK / WG_SIZE;

    float acc[TM][TN];
    [[unroll]] for (int i = 0; i < TM; ++i)
        [[unroll]] for (int j = 0; j < TN; ++j) acc[i][j] = 0.0;

    float ra[MAX_LOADS];
    float rb[MAX_LOADS];
    // Tile coordinates of this invocation's loads: element e = t + i*WG_SIZE
    // of the A (BM x BK) and B (BK x BN) tiles, along the contiguous dim.
#define A_COORD(e, mm, kk)                                        \
    if (A_KCONTIG) { kk = (e) % uint(BK); mm = (e) / uint(BK); }  \
    else { mm = (e) % uint(BM); kk = (e) / uint(BM); }
#define B_COORD(e, nn, kk)                                        \
    if (B_NCONTIG) { nn = (e) % uint(BN); kk = (e) / uint(BN); }  \
    else { kk = (e) % uint(BK); nn = (e) / uint(BK); }
#define LOAD_TILE(k0)                                                                     \
    [[unroll]] for (int i = 0; i < MAX_LOADS; ++i) {                                      \
        if (i < NA) {                                                                     \
            uint mm, kk;                                                                  \
            A_COORD(t + uint(i * WG_SIZE), mm, kk)                                        \
            uint m = m0 + mm, k = (k0) + kk;                                              \
            ra[i] = (m < p.M && k < k_end) ? LOAD(a_data, a_base + m * p.a_sm + k * p.a_sk) : 0.0; \
        }                                                                                 \
    }                                                                                     \
    [[unroll]] for (int i = 0; i < MAX_LOADS; ++i) {                                      \
        if (i < NB) {                                                                     \
            uint nn, kk;                                                                  \
            B_COORD(t + uint(i * WG_SIZE), nn, kk)                                        \
            uint n = n0 + nn, k = (k0) + kk;                                              \
            rb[i] = (n < p.N && k < k_end) ? LOAD(b_data, b_base + k * p.b_sk + n * p.b_sn) : 0.0; \
        }                                                                                 \
    }

    LOAD_TILE(k_begin)
    for (uint k0 = k_begin; k0 < k_end; k0 += uint(BK)) {
        [[unroll]] for (int i = 0; i < MAX_LOADS; ++i) {
            if (i < NA) {
                uint mm, kk;
                A_COORD(t + uint(i * WG_SIZE), mm, kk)
                As[kk * uint(BM) + mm] = ra[i];
            }
        }
        [[unroll]] for (int i = 0; i < MAX_LOADS; ++i) {
            if (i < NB) {
                uint nn, kk;
                B_COORD(t + uint(i * WG_SIZE), nn, kk)
                Bs[kk * uint(BN) + nn] = rb[i];
            }
        }
        barrier();
        // The next tile's loads are in flight during this tile's FMAs.
        if (k0 + uint(BK) < k_end) {
            LOAD_TILE(k0 + uint(BK))
        }
        [[unroll]] for (int kk = 0; kk < BK; ++kk) {
            float av[TM];
            float bv[TN];
            [[unroll]] for (int i = 0; i < TM; ++i) av[i] = As[kk * BM + int(ty) + i * int(RM)];
            [[unroll]] for (int j = 0; j < TN; ++j) bv[j] = Bs[kk * BN + int(tx) + j * int(RN)];
            [[unroll]] for (int i = 0; i < TM; ++i)
                [[unroll]] for (int j = 0; j < TN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
        }
        barrier();
    }

    uint y_base = batch * p.M * p.N;
#if VKNN_SPLITK
    uint total = (gl_NumWorkGroups.z / p.splits) * p.M * p.N;
    [[unroll]] for (int i = 0; i < TM; ++i) {
        uint m = m0 + ty + uint(i) * RM;
        if (m >= p.M) continue;
        [[unroll]] for (int j = 0; j < TN; ++j) {
            uint n = n0 + tx + uint(j) * RN;
            if (n < p.N) part[s * total + y_base + m * p.N + n] = acc[i][j];
        }
    }
#if VKNN_SPLITK_TWOPASS
    return;  // splitk_reduce.comp sums the slices in a second dispatch
#endif
    // Release: this invocation's partials are visible device-wide before the
    // workgroup counts itself in (the threadfence-reduction pattern).
    memoryBarrierBuffer();
    barrier();
    if (t == 0u) {
        uint tile = (batch * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x
                    + gl_WorkGroupID.x;
        bool last = atomicAdd(tile_count[tile], 1u) == p.splits - 1u;
        // Every slice of the tile has counted itself in: reset for the next use.
        if (last) atomicExchange(tile_count[tile], 0u);
        last_slice = last;
    }
    barrier();
    if (!last_slice) return;  // uniform: a shared value read after a barrier
    // Acquire: the other slices' partials, published before their increments.
    memoryBarrierBuffer();
#endif
    [[unroll]] for (int i = 0; i < TM; ++i) {
        uint m = m0 + ty + uint(i) * RM;
        if (m >= p.M) continue;
        [[unroll]] for (int j = 0; j < TN; ++j) {
            uint n = n0 + tx + uint(j) * RN;
            if (n >= p.N) continue;
            uint idx = y_base + m * p.N + n;
#if VKNN_SPLITK
            float sum = 0.0;
            for (uint q = 0u; q < p.splits; ++q) sum += part[q * total + idx];
            float v = p.alpha * sum;
#else
            float v = p.alpha * acc[i][j];
#endif
            if (HAS_C) v += p.beta * LOAD(c_data, m * p.c_sm + n * p.c_sn);
            STORE(y_data, idx, PW_APPLY(v, idx));
        }
    }
}
