// vx.attention on tensor cores: O = softmax(scale * Q K^T + mask) V in one
// pass over the keys (online softmax, as attention.comp), QK^T and PV as
// 16 x 16 x 16 cooperative-matrix products (fp16 operands, fp32 accumulation).
//
// A workgroup of 4 subgroups takes BQ = 64 query rows of one batch entry,
// each subgroup 16 of them; its Q block (16 x DMAX, zero past the head dim
// and the last row) is loaded once from shared memory into DMAX / 16 A
// matrices. Per tile of BKV = 32 keys: the K and V rows are staged in shared
// memory as fp16 (zero past the last key and the head dims), then per
// subgroup
//   S = Q K^T           (BKV / 16 accumulators; K^T read ColumnMajor)
//   lanes 0..15 each own a row of S (staged as fp32): scale, mask, the
//       running max, exp, the running sum; P = exp(S - max) as fp16 and the
//       row's rescale factor alpha go back to shared memory;
//   O_tile = P V        per 16-wide block of the output dims, through a
//       16 x 16 fp32 staging block, added to the lane-owned running output
//       (kept in registers: lane owns elements lane + 32 * i of each block)
//       after rescaling it by its row's alpha.
// A row whose max is still -inf (every key masked) is shifted by 0, so it
// adds exactly 0 and a fully masked row ends 0/0 = NaN, as the unfused
// softmax gives. Loads of Q / K / V move 4 head dims at a time (VEC: 64-bit
// loads, when the head dim is contiguous and every stride, offset and head
// dim is a multiple of 4), else 4 bounds-checked scalar loads.
//
// Operands are addressed through strides exactly as attention.comp (push
// constants identical): element (b0, b1, row, col) of X is
// X[off + b0*sb0 + b1*sb1 + row*srow + col*scol].
//
// Specialization constants: 0 = workgroup size (4 * SG), 1 = DMAX (32, 64 or
// 128: >= both head dims), 2 = HAS_MASK, 3 = VEC, 4 = SG.
// Bindings: 0 = Q, 1 = K, 2 = V, 3 = mask (Q when there is none), 4 = O.
// Dispatch: (ceil(sq / 64), nb0 * nb1, 1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "precision.glsl"
#include "common.glsl"
#include "coopmat_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG_SIZE = 128;
layout(constant_id = 1) const uint DMAX = 64;
layout(constant_id = 2) const bool HAS_MASK = false;
layout(constant_id = 3) const bool VEC = false;
layout(constant_id = 4) const uint SG = 32;

layout(std430, binding = 0) readonly buffer Qb { sfp q_data[]; };
layout(std430, binding = 0) readonly buffer Qb4 { sfp4 q4[]; };
layout(std430, binding = 1) readonly buffer Kb { sfp k_data[]; };
layout(std430, binding = 1) readonly buffer Kb4 { sfp4 k4[]; };
layout(std430, binding = 2) readonly buffer Vb { sfp v_data[]; };
layout(std430, binding = 2) readonly buffer Vb4 { sfp4 v4[]; };
layout(std430, binding = 3) readonly buffer Mb { sfp m_data[]; };
layout(std430, binding = 4) writeonly buffer Ob { sfp o_data[]; };

#define Q_ 0
#define K_ 5
#define V_ 10
#define M_ 15
#define O_ 20
layout(push_constant) uniform Params {
    uint sq, sk;
    uint d, dv;
    uint nb1;
    float scale;
    uint s[25];
} p;

#define BQ 64u
#define BKV 32u
const uint RS = DMAX + PAD;     // fp16 row of Qs / Ks / Vs
const uint PS = BKV + PAD;      // fp16 row of Ps
const uint ND = DMAX / CM;      // 16-wide blocks of the head dims
shared float16_t Qs[BQ * RS];
shared float16_t Ks[BKV * RS];
shared float16_t Vs[BKV * RS];
shared float Ss[4 * CM * BKV];  // per subgroup: S (16 x BKV), then O blocks (16 x 16)
shared float16_t Ps[4 * CM * PS];
shared float row_alpha[4 * CM];
shared float row_l[4 * CM];

uint base_of(int x, uint b0, uint b1) { return p.s[x] + b0 * p.s[x + 1] + b1 * p.s[x + 2]; }

// 4 head dims [dd, dd + 4) of row `row` of operand X (base xb), zero outside.
#define LOAD4(DATA, DATA4, X, xb, row, rows, dd, dim)                                         \
    f16vec4 v4_ = f16vec4(0.0);                                                               \
    if ((row) < (rows)) {                                                                     \
        uint e_ = (xb) + (row) * p.s[X + 3] + (dd) * p.s[X + 4];                              \
        if (VEC) {                                                                            \
            if ((dd) < (dim)) v4_ = f16vec4(DATA4[e_ / 4u]);                                  \
        } else {                                                                              \
            [[unroll]] for (uint q_ = 0u; q_ < 4u; ++q_)                                      \
                if ((dd) + q_ < (dim)) v4_[q_] = float16_t(LOAD(DATA, e_ + q_ * p.s[X + 4])); \
        }                                                                                     \
    }

void main() {
    uint t = gl_LocalInvocationID.x;
    uint sg = gl_SubgroupID;
    uint lane = gl_SubgroupInvocationID;
    uint q0 = gl_WorkGroupID.x * BQ;
    uint b0 = gl_WorkGroupID.y / p.nb1;
    uint b1 = gl_WorkGroupID.y % p.nb1;
    uint qb = base_of(Q_, b0, b1);
    uint kb = base_of(K_, b0, b1);
    uint vb = base_of(V_, b0, b1);
    uint mb = base_of(M_, b0, b1);
    uint ob = base_of(O_, b0, b1);

    for (uint c = t; c < BQ * DMAX / 4u; c += WG_SIZE) {
        uint r = c / (DMAX / 4u), dd = (c % (DMAX / 4u)) * 4u;
        LOAD4(q_data, q4, Q_, qb, q0 + r, p.sq, dd, p.d)
        uint s_ = r * RS + dd;
        Qs[s_] = v4_.x; Qs[s_ + 1u] = v4_.y; Qs[s_ + 2u] = v4_.z; Qs[s_ + 3u] = v4_.w;
    }
    barrier();
    CM_A qa[ND];
    [[unroll]] for (uint j = 0u; j < ND; ++j)
        coopMatLoad(qa[j], Qs, sg * CM * RS + j * CM, RS, gl_CooperativeMatrixLayoutRowMajor);

    // Lanes 0..15 own row `lane` of this subgroup's block for the softmax.
    uint my_row = q0 + sg * CM + lane;
    float m_run = -1.0 / 0.0;
    float l_run = 0.0;
    // Running output: element lane + SG*i of each 16 x 16 block (row e / 16;
    // SG >= 32, so 8 per lane cover the block).
    float o_run[ND][8];
    [[unroll]] for (uint j = 0u; j < ND; ++j)
        [[unroll]] for (uint i = 0u; i < 8u; ++i) o_run[j][i] = 0.0;

    for (uint j0 = 0u; j0 < p.sk; j0 += BKV) {
        for (uint c = t; c < BKV * DMAX / 4u; c += WG_SIZE) {
            uint r = c / (DMAX / 4u), dd = (c % (DMAX / 4u)) * 4u;
            uint s_ = r * RS + dd;
            {
                LOAD4(k_data, k4, K_, kb, j0 + r, p.sk, dd, p.d)
                Ks[s_] = v4_.x; Ks[s_ + 1u] = v4_.y; Ks[s_ + 2u] = v4_.z; Ks[s_ + 3u] = v4_.w;
            }
            {
                LOAD4(v_data, v4, V_, vb, j0 + r, p.sk, dd, p.dv)
                Vs[s_] = v4_.x; Vs[s_ + 1u] = v4_.y; Vs[s_ + 2u] = v4_.z; Vs[s_ + 3u] = v4_.w;
            }
        }
        barrier();

        // S = Q K^T for this subgroup's 16 rows.
        [[unroll]] for (uint n = 0u; n < BKV / CM; ++n) {
            CM_ACC sacc = CM_ACC(0.0);
            [[unroll]] for (uint j = 0u; j < ND; ++j) {
                CM_B kt;
                coopMatLoad(kt, Ks, n * CM * RS + j * CM, RS, gl_CooperativeMatrixLayoutColumnMajor);
                sacc = coopMatMulAdd(qa[j], kt, sacc);
            }
            coopMatStore(sacc, Ss, sg * CM * BKV + n * CM, BKV, gl_CooperativeMatrixLayoutRowMajor);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        if (lane < CM) {
            float sc[BKV];
            float mx = -1.0 / 0.0;
            [[unroll]] for (uint c = 0u; c < BKV; ++c) {
                float a = p.scale * Ss[sg * CM * BKV + lane * BKV + c];
                uint j = j0 + c;
                if (j >= p.sk) a = -1.0 / 0.0;
                else if (HAS_MASK && my_row < p.sq)
                    a += LOAD(m_data, mb + my_row * p.s[M_ + 3] + j * p.s[M_ + 4]);
                sc[c] = a;
                mx = vknn_max(mx, a);
            }
            float m_new = vknn_max(m_run, mx);
            float shift = isinf(m_new) ? 0.0 : m_new;
            float alpha = exp(m_run - shift);
            float ps = 0.0;
            [[unroll]] for (uint c = 0u; c < BKV; ++c) {
                float e = exp(sc[c] - shift);
                Ps[sg * CM * PS + lane * PS + c] = float16_t(e);
                ps += e;
            }
            l_run = l_run * alpha + ps;
            m_run = m_new;
            row_alpha[sg * CM + lane] = alpha;
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        CM_A pa[BKV / CM];
        [[unroll]] for (uint n = 0u; n < BKV / CM; ++n)
            coopMatLoad(pa[n], Ps, sg * CM * PS + n * CM, PS, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint j = 0u; j < ND; ++j) {
            CM_ACC oacc = CM_ACC(0.0);
            [[unroll]] for (uint n = 0u; n < BKV / CM; ++n) {
                CM_B vb_;
                coopMatLoad(vb_, Vs, n * CM * RS + j * CM, RS, gl_CooperativeMatrixLayoutRowMajor);
                oacc = coopMatMulAdd(pa[n], vb_, oacc);
            }
            coopMatStore(oacc, Ss, sg * CM * BKV, CM, gl_CooperativeMatrixLayoutRowMajor);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            [[unroll]] for (uint i = 0u; i < 8u; ++i) {
                uint e = lane + i * SG;
                if (e < CM * CM) {
                    float a = row_alpha[sg * CM + e / CM];
                    o_run[j][i] = o_run[j][i] * a + Ss[sg * CM * BKV + e];
                }
            }
            subgroupBarrier();  // the block is read before the next overwrites it
        }
        barrier();  // the next tile overwrites Ks and Vs
    }

    if (lane < CM) row_l[sg * CM + lane] = l_run;
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint j = 0u; j < ND; ++j) {
        [[unroll]] for (uint i = 0u; i < 8u; ++i) {
            uint e = lane + i * SG;
            uint row = q0 + sg * CM + e / CM;
            uint dd = j * CM + e % CM;
            if (e < CM * CM && row < p.sq && dd < p.dv)
                STORE(o_data, ob + row * p.s[O_ + 3] + dd * p.s[O_ + 4],
                      o_run[j][i] / row_l[sg * CM + e / CM]);
        }
    }
}
