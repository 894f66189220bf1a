// vx.conv as an implicit GEMM (NCHW, 1-D/2-D, any stride/dilation/pads,
// grouped): per image n and group g,
//     Y[g*Mg + m, p] = sum_k W[g*Mg + m, k] * im2col(X)[k, p]
// with k = (ci, ky, kx) over Cg*KH*KW and p = (oy, ox). The weight as given
// ([M, Cg, KH, KW] row-major) already is the GEMM's [M, K] matrix, so it is
// used in place; the im2col matrix is never materialized: each tile of it is
// gathered from X straight into shared memory.
//
// Tiling: a workgroup of TX*TY threads computes a (4*TY) x (4*TX) tile of
// [output channels x pixels], each thread a 4x4 register block, stepping K
// by BK through shared memory. Threads own strided rows/columns (ty + TY*i,
// tx + TX*j) so shared-memory reads are conflict-free and the final stores
// of a warp hit consecutive pixels. POINTWISE (1x1, stride 1, no pads)
// specializes the gather to a plain strided copy.
//
// Latency: the next K tile's global loads are issued into registers before
// the current tile's arithmetic (a register prefetch), so one DRAM round
// trip per K step is hidden behind the FMAs even with few warps per SM. The
// im2col index k -> (ci, ky, kx) divides by multiply-high with host-computed
// magic numbers (exact for k * d < 2^32; 0 = plain division).
//
// Split-K (VKNN_SPLITK=1, for grids too small to fill the GPU): workgroup z
// also selects a K slice [s * kchunk, (s+1) * kchunk), and binding 3 is an
// fp32 buffer of `splits` partial results, part[s * N*M*P + idx], summed
// (with bias and epilogue) by splitk_reduce.comp.
//
// NC4HW4 (PACKED, `vulkan/layouts.py`): x and y are [N, C/4, H, W, 4] (the
// split-K partials too, over the padded channels). Threads are then grouped
// in quads of 4 consecutive output channels of one pixel (ty fastest), so a
// warp's stores are contiguous runs of whole channel blocks. The weight is
// OHWI ([M, KH, KW, Cg], the executor uploads that copy), so K runs over
// channels fastest (k = tap * Cg + ci) and the B-tile gather likewise loads
// 4 channels of one pixel per quad: contiguous in NC4HW4.
//
// Specialization constants: 0 = workgroup size (TX*TY), 1 = TX, 2 = TY
// (TX, TY in {8, 16}), 3 = POINTWISE, 4 = HAS_BIAS, 5 = PACKED.
// Push constants: see Params. Dispatch: (ceil(P / (4*TX)), ceil(Mg / (4*TY)),
// N * groups * splits).
// Bindings: 0 = x, 1 = w, 2 = bias (any buffer when HAS_BIAS is false),
// 3 = y (the partials with VKNN_SPLITK), 4.. = epilogue inputs (PW_EPI).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "precision.glsl"
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TX = 16;
layout(constant_id = 2) const uint TY = 16;
layout(constant_id = 3) const bool POINTWISE = false;
layout(constant_id = 4) const bool HAS_BIAS = false;
layout(constant_id = 5) const bool PACKED = false;

layout(std430, binding = 0) readonly buffer X { sfp x_data[]; };
layout(std430, binding = 1) readonly buffer Wt { sfp w_data[]; };
#if VKNN_SPLITK
layout(std430, binding = 3) writeonly buffer Part { float part[]; };
#else
layout(std430, binding = 2) readonly buffer Bias { sfp b_data[]; };
layout(std430, binding = 3) writeonly buffer Y { sfp y_data[]; };
#include "pw_epilogue.glsl"
#endif

layout(push_constant) uniform Params {
    uint C, H, W;      // input channels (all groups), spatial size
    uint M, OH, OW;    // output channels (all groups), spatial size
    uint Cg, Mg, K;    // per group: input channels, output channels, Cg*KH*KW
    uint KH, KW, groups;
    uint SH, SW, DH, DW;
    uint PH, PW;       // begin pads (end pads only bound the output size)
    uint kchunk;       // K per split slice (a multiple of BK; K when unsplit)
    uint splits;       // K slices (1 when unsplit)
    uint magic_khw;    // ceil(2^32 / (KH*KW)) (PACKED: / Cg), 0: divide
    uint magic_kw;     // ceil(2^32 / KW), 0: divide
} p;

#define BK 16u
#define TILE_MAX 64u
// One float of padding per row keeps the column-wise stores of the A tile
// free of bank conflicts (a row stride of 64 would put a warp in one bank).
#define AS_STRIDE (TILE_MAX + 1u)
#define MAX_LOADS 8u
shared afp As[BK * AS_STRIDE];
shared afp Bs[BK * TILE_MAX];

uint div_magic(uint k, uint d, uint magic) {
    if (d == 1u) return k;
    if (magic == 0u) return k / d;
    uint hi, lo;
    umulExtended(k, magic, hi, lo);
    return hi;
}

// Element (n, c, spatial sp) of an NC4HW4 tensor with `chans` channels of `hw` pixels.
uint packed_at(uint n, uint c, uint sp, uint chans, uint hw) {
    return (((n * ((chans + 3u) >> 2) + (c >> 2)) * hw + sp) << 2) + (c & 3u);
}

void main() {
    const uint BM = 4u * TY;
    const uint BN = 4u * TX;
    const uint T = TX * TY;
    const uint NA = BM * BK / T;  // A-tile elements per thread (64 / TX)
    const uint NB = BK * BN / T;  // B-tile elements per thread (64 / TY)
    uint lid = gl_LocalInvocationID.x;
    uint tx = PACKED ? (lid >> 2) % TX : lid % TX;
    uint ty = PACKED ? (lid & 3u) + 4u * (lid / (4u * TX)) : lid / TX;
    uint P = p.OH * p.OW;
    uint HW = p.H * p.W;
    uint p0 = gl_WorkGroupID.x * BN;
    uint m0 = gl_WorkGroupID.y * BM;
    uint s = gl_WorkGroupID.z % p.splits;
    uint ng = gl_WorkGroupID.z / p.splits;
    uint n = ng / p.groups;
    uint g = ng % p.groups;
    uint KHW = p.KH * p.KW;
    uint k_begin = s * p.kchunk;
    uint k_end = min(p.K, k_begin + p.kchunk);

    // B-tile loads: T is a multiple of BN, so each thread always loads the
    // same pixel column; its window origin is computed once.
    // Quads (packed, a whole multiple of 4 rows per pass): each thread
    // keeps one pixel column and rows b_row0 + i * (T / BN) as before.
    const bool QUADS = PACKED && (T % (4u * BN) == 0u);
    uint b_col = QUADS ? (lid >> 2) % BN : lid % BN;
    uint b_row0 = QUADS ? (lid / (4u * BN)) * 4u + (lid & 3u) : lid / BN;
    uint pix = p0 + b_col;
    bool pix_ok = pix < P;
    uint oy = pix_ok ? pix / p.OW : 0u;
    uint ox = pix_ok ? pix % p.OW : 0u;
    int iy0 = int(oy * p.SH) - int(p.PH);
    int ix0 = int(ox * p.SW) - int(p.PW);
    uint x_base = (n * p.C + g * p.Cg) * HW;

    // A-tile loads: likewise each thread always loads the same k column.
    uint a_col = lid % BK;
    uint a_row0 = lid / BK;
    uint w_base = g * p.Mg * p.K;

    afp acc[4][4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;

    afp ra[MAX_LOADS];
    afp rb[MAX_LOADS];
    // Prefetch of the K tile at k0 into ra / rb.
#define LOAD_TILE(k0)                                                                   \
    {                                                                                   \
        uint ka = (k0) + a_col;                                                         \
        [[unroll]] for (uint i = 0u; i < MAX_LOADS; ++i) {                              \
            if (i < NA) {                                                               \
                uint m = m0 + a_row0 + i * (T / BK);                                    \
                ra[i] = (m < p.Mg && ka < k_end) ? LOAD(w_data, w_base + m * p.K + ka) : 0.0; \
            }                                                                           \
        }                                                                               \
        [[unroll]] for (uint i = 0u; i < MAX_LOADS; ++i) {                              \
            if (i < NB) {                                                               \
                uint k = (k0) + b_row0 + i * (T / BN);                                  \
                afp v = 0.0;                                                            \
                if (pix_ok && k < k_end) {                                              \
                    if (POINTWISE) {                                                    \
                        v = LOAD(x_data, PACKED ? packed_at(n, g * p.Cg + k, pix, p.C, HW)  \
                                                : x_base + k * HW + pix);                   \
                    } else {                                                            \
                        uint ci, rem;                                                   \
                        if (PACKED) {  /* OHWI: k = tap * Cg + ci */                    \
                            rem = div_magic(k, p.Cg, p.magic_khw);                      \
                            ci = k - rem * p.Cg;                                        \
                        } else {                                                        \
                            ci = div_magic(k, KHW, p.magic_khw);                        \
                            rem = k - ci * KHW;                                         \
                        }                                                               \
                        uint ky = div_magic(rem, p.KW, p.magic_kw);                     \
                        uint kx = rem - ky * p.KW;                                      \
                        int iy = iy0 + int(ky * p.DH);                                  \
                        int ix = ix0 + int(kx * p.DW);                                  \
                        if (iy >= 0 && iy < int(p.H) && ix >= 0 && ix < int(p.W))       \
                            v = LOAD(x_data, PACKED                                     \
                                ? packed_at(n, g * p.Cg + ci, uint(iy) * p.W + uint(ix), p.C, HW) \
                                : x_base + ci * HW + uint(iy) * p.W + uint(ix));        \
                    }                                                                   \
                }                                                                       \
                rb[i] = v;                                                              \
            }                                                                           \
        }                                                                               \
    }

    LOAD_TILE(k_begin)
    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
        [[unroll]] for (uint i = 0u; i < MAX_LOADS; ++i)
            if (i < NA) As[a_col * AS_STRIDE + a_row0 + i * (T / BK)] = ra[i];
        [[unroll]] for (uint i = 0u; i < MAX_LOADS; ++i)
            if (i < NB) Bs[(b_row0 + i * (T / BN)) * TILE_MAX + b_col] = rb[i];
        barrier();
        // The next tile's loads are in flight during this tile's FMAs.
        if (k0 + BK < k_end) LOAD_TILE(k0 + BK)
        [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
            afp a[4];
            afp b[4];
            [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = As[kk * AS_STRIDE + ty + TY * i];
            [[unroll]] for (uint j = 0u; j < 4u; ++j) b[j] = Bs[kk * TILE_MAX + tx + TX * j];
            [[unroll]] for (uint i = 0u; i < 4u; ++i)
                [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier();
    }

#if VKNN_SPLITK
    uint total = (gl_NumWorkGroups.z / (p.splits * p.groups)) * (PACKED ? (p.M + 3u) & ~3u : p.M) * P;
    uint part_base = s * total;
#endif
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        uint m = m0 + ty + TY * i;
        if (m >= p.Mg) continue;
        uint oc = g * p.Mg + m;
        uint nc = n * p.M + oc;
#if !VKNN_SPLITK
        afp bias = HAS_BIAS ? LOAD(b_data, oc) : 0.0;
#endif
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            uint q = p0 + tx + TX * j;
            if (q >= P) continue;
            uint idx = nc * P + q;
#if VKNN_SPLITK
            part[part_base + (PACKED ? packed_at(n, oc, q, p.M, P) : idx)] = acc[i][j];
#else
            uint yi = PACKED ? packed_at(n, oc, q, p.M, P) : idx;
            afp v = PW_APPLY(acc[i][j] + bias, yi);
            STORE(y_data, yi, v);
#endif
        }
    }
}
