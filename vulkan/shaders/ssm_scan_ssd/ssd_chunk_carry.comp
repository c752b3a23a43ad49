#version 450
// ssd_chunk_carry.comp — SSD_CARRY: the walk over chunks, the only serial
// part (SPEC.md §3, SSM_SCAN_BACK; the math in ssd_common.glsl). An
// invocation per (sequence, head, n, p) replaces S by the state entering
// each chunk and R by the adjoint leaving it, and writes a_0 lambda_0 of
// each sequence (its d_s part). Not run with CHAIN or for one chunk.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_shuffle : enable
#include "ssm_scan_ssd/ssd_common.glsl"

// CG > 1 (SSD_SC_CARRY_CG): chunks walked in groups of CG, the
// group's loads issued together (CG loads in flight per invocation instead
// of one: the walk is latency-bound otherwise).
layout(constant_id = SSD_SC_CARRY_CG) const uint CG = 1;
// CSP 1 (with CG > 1): the forward and the backward walk of an element in
// invocations of their own (twice the invocations, each half the walk).
layout(constant_id = SSD_SC_CARRY_SPLIT) const uint CSP = 0;

void carry_grouped(uint base, uint dc, uint np, uint nsr, uint dsq, float s, float lam, uint dir) {
    for (uint c0 = 0; dir != 1u && c0 < p.nc; c0 += CG) {
        float l[CG], dv[CG];
        UNROLL for (uint k = 0; k < CG; k++) {
            const uint c = c0 + k;
            l[k] = dv[k] = 0.0;
            if (c < p.nc) {
                l[k] = sr[base + c * np];
                dv[k] = sr[dc + c];
            }
        }
        UNROLL for (uint k = 0; k < CG; k++) {
            const uint c = c0 + k;
            if (c < p.nc) {
                sr[base + c * np] = s;
                s = fma(dv[k], s, l[k]);
            }
        }
    }
    if (dir == 0u)
        return;
    for (uint c1 = p.nc; c1 > 0u; c1 -= min(c1, CG)) {
        // Chunks c1 - 1 down to c1 - CG.
        float l[CG], dv[CG];
        UNROLL for (uint k = 0; k < CG; k++) {
            l[k] = dv[k] = 0.0;
            if (k < c1) {
                const uint c = c1 - 1u - k;
                l[k] = sr[nsr + base + c * np];
                dv[k] = sr[dc + c];
            }
        }
        UNROLL for (uint k = 0; k < CG; k++) {
            if (k < c1) {
                const uint c = c1 - 1u - k;
                sr[nsr + base + c * np] = lam;
                lam = fma(dv[k], lam, l[k]);
            }
        }
    }
    sr[dsq] = lam;
}

void main() {
    const uint np = p.ds * p.hd;
    uint e = vkg_group_linear() * WG + gl_LocalInvocationIndex;
    const uint ne = p.nq * p.nh * np;
    if (e >= (CSP != 0u && CG > 1u ? 2u : 1u) * ne)
        return;
    // dir: 0 forward only, 1 backward only, 2 both.
    const uint dir = CSP != 0u && CG > 1u ? e / ne : 2u;
    e %= ne;
    const uint r = e % np, qh = e / np, h = qh % p.nh, q = qh / p.nh;
    const uint n = r / p.hd, pp = r % p.hd;
    const uint slot = uint(ids_data[p.off_ids + q]);
    const uint base = qh * p.nc * np + r, dc = ssd_dc() + qh * p.nc, nsr = ssd_nsr();
    // Each step's loads are issued before the previous step's store, so
    // the walk waits on one memory latency per chunk, not two.
    float s = ld_s(n, pp, h, slot);
    if (CG > 1u) {
        carry_grouped(base, dc, np, nsr, ssd_dsq() + qh * np + r, s, ld_gS(n, pp, h, q), dir);
        return;
    }
    float loc = sr[base], dcv = sr[dc];
    for (uint c = 0; c < p.nc; c++) {
        const uint i = base + c * np;
        const float l = loc, dv = dcv;
        if (c + 1u < p.nc) {
            loc = sr[i + np];
            dcv = sr[dc + c + 1u];
        }
        sr[i] = s;
        s = fma(dv, s, l);
    }
    float lam = ld_gS(n, pp, h, q);
    loc = sr[nsr + base + (p.nc - 1u) * np];
    dcv = sr[dc + p.nc - 1u];
    for (uint c = p.nc; c-- > 0u;) {
        const uint i = nsr + base + c * np;
        const float l = loc, dv = dcv;
        if (c > 0u) {
            loc = sr[i - np];
            dcv = sr[dc + c - 1u];
        }
        sr[i] = lam;
        lam = fma(dv, lam, l);
    }
    sr[ssd_dsq() + qh * np + r] = lam;
}
