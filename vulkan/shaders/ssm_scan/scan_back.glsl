// ssm_scan/scan_back.glsl — what the SSM_SCAN_BACK kernels share (SPEC §3
// SSM_SCAN_BACK): bindings 7-10 (g: g_y then g_S; d: the gradients; st: walk
// state scratch; pt: partials summed by scan_back_reduce) and the partials'
// layout. d_x is final where it is written; everything summed across
// workgroups (d_B, d_C over row blocks; d_dt over channels; d_A over
// channels, chunks and sequences; d_s over the sequences sharing a slot)
// goes to the partials. The reduce defines SCAN_PT_ACCESS readonly first.
#ifndef VKG_SCAN_BACK_GLSL
#define VKG_SCAN_BACK_GLSL

#include "ssm_scan/scan_common.glsl"

#ifndef SCAN_PT_ACCESS
#define SCAN_PT_ACCESS writeonly
#endif
layout(std430, set = 0, binding = 7) readonly buffer BufG { float g_data[]; };
layout(std430, set = 0, binding = 8) writeonly buffer BufD { float d_data[]; };
layout(std430, set = 0, binding = 9) buffer BufSt { float st_data[]; };
layout(std430, set = 0, binding = 10) SCAN_PT_ACCESS buffer BufPt { float pt_data[]; };

// Partials in the pt binding (element offsets after off_pt). nc: the number
// of time chunks the d_A partials are split into (1 for scan_back_rows). The d_B
// and d_C partials are per row block.

struct ScanParts {
    uint n_wg, n_rows_all, b, c, dt, a, s;
};

ScanParts scan_parts(uint nc) {
    ScanParts q;
    const uint rpg = (p.nh / p.ng) * p.hd;
    q.n_wg = ((rpg + RB - 1) / RB) * p.ng * p.nq;
    q.n_rows_all = p.nh * p.hd;
    q.b = 0;                                            // [w][t][n]
    q.c = q.n_wg * p.nt * p.ds;                         // [w][t][n]
    q.dt = 2 * q.n_wg * p.nt * p.ds;                    // [q][row][t]
    // [q][chunk][row], or [q][chunk][row][n] for Mamba-1:
    q.a = q.dt + p.nq * q.n_rows_all * p.nt;
    q.s = q.a + p.nq * nc * q.n_rows_all * (MAMBA1 != 0 ? p.ds : 1);  // [q][row][n]
    return q;
}

#endif
