// vx.attention: O = softmax(scale * Q K^T + mask) V in one pass over the keys
// (online softmax), never materializing the scores.
//
// A workgroup computes BQ query rows of one batch entry; invocation
// (r, lane) = (t / LANES, t % LANES) works on row r. Q's block sits in
// shared memory (pre-scaled); K and V stream through one shared tile of BKV
// keys: per tile, each invocation scores keys lane + i*LANES, the row's max
// and sum are reduced over its LANES invocations through shared memory, the
// running output (output dims lane + j*LANES, in registers) and the running
// sum are rescaled by exp(old max - new max) and the tile's weighted V rows
// added. A row whose max is -inf so far (every key masked) is shifted by 0,
// so it contributes exactly 0 and a fully masked row ends as 0/0 = NaN, as
// the unfused softmax gives. Shared rows are padded by one float so the
// lanes of a row hit distinct banks.
//
// Operands are addressed through strides (push constants), so head splits
// and merges (transposes), a fused QKV projection's slices and broadcast
// batch dims or masks cost no copies: element (b0, b1, row, col) of operand
// X is X[off + b0*sb0 + b1*sb1 + row*srow + col*scol] (the batch entry is
// gl_WorkGroupID.y = b0 * nb1 + b1).
//
// Specialization constants: 0 = workgroup size (BQ * LANES), 1 = BQ,
// 2 = LANES (divides BKV and DMAX), 3 = DMAX (>= head dims of Q/K and of V,
// a multiple of 4), 4 = HAS_MASK, 5 = BKV (keys per tile).
// Bindings: 0 = Q, 1 = K, 2 = V, 3 = mask (Q when there is none), 4 = O.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "precision.glsl"
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const int WG_SIZE = 128;
layout(constant_id = 1) const int BQ = 8;
layout(constant_id = 2) const int LANES = 16;
layout(constant_id = 3) const int DMAX = 64;
layout(constant_id = 4) const bool HAS_MASK = false;
layout(constant_id = 5) const int BKV = 32;

layout(std430, binding = 0) readonly buffer Qb { sfp q_data[]; };
layout(std430, binding = 1) readonly buffer Kb { sfp k_data[]; };
layout(std430, binding = 2) readonly buffer Vb { sfp v_data[]; };
layout(std430, binding = 3) readonly buffer Mb { sfp m_data[]; };
layout(std430, binding = 4) writeonly buffer Ob { sfp o_data[]; };

// Per operand (Q, K, V, mask, O): off, sb0, sb1, srow, scol.
#define Q_ 0
#define K_ 5
#define V_ 10
#define M_ 15
#define O_ 20
layout(push_constant) uniform Params {
    uint sq, sk;   // query rows, keys
    uint d, dv;    // head dims of Q/K and of V
    uint nb1;      // extent of the inner batch dim
    float scale;
    uint s[25];
} p;

const int RS = DMAX + 1;  // padded row of Qs / KVs
const int PS = BKV + 1;   // padded row of Ps
shared float Qs[BQ * RS];
shared float KVs[BKV * RS];
shared float Ps[BQ * PS];
shared float red_max[BQ * LANES];
shared float red_sum[BQ * LANES];

uint base_of(int x, uint b0, uint b1) { return p.s[x] + b0 * p.s[x + 1] + b1 * p.s[x + 2]; }

void main() {
    const int KPL = BKV / LANES;   // keys per lane per tile
    const int DPL = DMAX / LANES;  // output dims per lane
    uint t = gl_LocalInvocationID.x;
    uint r = t / uint(LANES);
    uint lane = t % uint(LANES);
    uint q0 = gl_WorkGroupID.x * uint(BQ);
    uint b0 = gl_WorkGroupID.y / p.nb1;
    uint b1 = gl_WorkGroupID.y % p.nb1;
    uint qb = base_of(Q_, b0, b1);
    uint kb = base_of(K_, b0, b1);
    uint vb = base_of(V_, b0, b1);
    uint mb = base_of(M_, b0, b1);
    uint ob = base_of(O_, b0, b1);
    uint row = q0 + r;

    // Q block, scaled; zero past the last row and the head dim.
    for (uint i = t; i < uint(BQ * DMAX); i += uint(WG_SIZE)) {
        uint rr = i / uint(DMAX), dd = i % uint(DMAX);
        float x = 0.0;
        if (q0 + rr < p.sq && dd < p.d)
            x = p.scale * LOAD(q_data, qb + (q0 + rr) * p.s[Q_ + 3] + dd * p.s[Q_ + 4]);
        Qs[rr * uint(RS) + dd] = x;
    }

    float m_run = -1.0 / 0.0;
    float l_run = 0.0;
    float acc[DPL];
    [[unroll]] for (int j = 0; j < DPL; ++j) acc[j] = 0.0;

    for (uint j0 = 0u; j0 < p.sk; j0 += uint(BKV)) {
        for (uint i = t; i < uint(BKV * DMAX); i += uint(WG_SIZE)) {
            uint c = i / uint(DMAX), dd = i % uint(DMAX);
            float x = 0.0;
            if (j0 + c < p.sk && dd < p.d)
                x = LOAD(k_data, kb + (j0 + c) * p.s[K_ + 3] + dd * p.s[K_ + 4]);
            KVs[c * uint(RS) + dd] = x;
        }
        barrier();

        float sc[KPL];
        float mx = -1.0 / 0.0;
        [[unroll]] for (int i = 0; i < KPL; ++i) {
            uint c = lane + uint(i * LANES);
            // Four partial sums: independent FMA chains (DMAX is a multiple of 4).
            vec4 a4 = vec4(0.0);
            [[unroll]] for (int dd = 0; dd < DMAX; dd += 4) {
                uint qi = r * uint(RS) + uint(dd), ki = c * uint(RS) + uint(dd);
                a4 = fma(vec4(Qs[qi], Qs[qi + 1u], Qs[qi + 2u], Qs[qi + 3u]),
                         vec4(KVs[ki], KVs[ki + 1u], KVs[ki + 2u], KVs[ki + 3u]), a4);
            }
            float a = (a4.x + a4.y) + (a4.z + a4.w);
            uint j = j0 + c;
            if (j >= p.sk) {
                a = -1.0 / 0.0;
            } else if (HAS_MASK && row < p.sq) {
                a += LOAD(m_data, mb + row * p.s[M_ + 3] + j * p.s[M_ + 4]);
            }
            sc[i] = a;
            mx = vknn_max(mx, a);
        }
        red_max[t] = mx;
        barrier();

        float tmax = -1.0 / 0.0;
        for (int l = 0; l < LANES; ++l) tmax = vknn_max(tmax, red_max[r * uint(LANES) + uint(l)]);
        float m_new = vknn_max(m_run, tmax);
        float shift = isinf(m_new) ? 0.0 : m_new;
        float alpha = exp(m_run - shift);
        float ps = 0.0;
        [[unroll]] for (int i = 0; i < KPL; ++i) {
            float e = exp(sc[i] - shift);
            Ps[r * uint(PS) + lane + uint(i * LANES)] = e;
            ps += e;
        }
        red_sum[t] = ps;
        // Every invocation is past its K reads (barrier above): V takes the tile.
        for (uint i = t; i < uint(BKV * DMAX); i += uint(WG_SIZE)) {
            uint c = i / uint(DMAX), dd = i % uint(DMAX);
            float x = 0.0;
            if (j0 + c < p.sk && dd < p.dv)
                x = LOAD(v_data, vb + (j0 + c) * p.s[V_ + 3] + dd * p.s[V_ + 4]);
            KVs[c * uint(RS) + dd] = x;
        }
        barrier();

        float tsum = 0.0;
        for (int l = 0; l < LANES; ++l) tsum += red_sum[r * uint(LANES) + uint(l)];
        l_run = l_run * alpha + tsum;
        [[unroll]] for (int j = 0; j < DPL; ++j) acc[j] *= alpha;
        for (int c = 0; c < BKV; ++c) {
            float w = Ps[r * uint(PS) + uint(c)];
            [[unroll]] for (int j = 0; j < DPL; ++j)
                acc[j] = fma(w, KVs[uint(c * RS) + lane + uint(j * LANES)], acc[j]);
        }
        m_run = m_new;
        barrier();  // the next tile overwrites KVs, Ps and the reductions
    }

    if (row < p.sq) {
        float inv = 1.0 / l_run;
        [[unroll]] for (int j = 0; j < DPL; ++j) {
            uint dd = lane + uint(j * LANES);
            if (dd < p.dv)
                STORE(o_data, ob + row * p.s[O_ + 3] + dd * p.s[O_ + 4], acc[j] * inv);
        }
    }
}
