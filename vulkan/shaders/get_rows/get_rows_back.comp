// get_rows_back.comp — GET_ROWS_BACK (lib/ops_train.md "Embeddings"):
// d_a[:, r, j, k] = Σ_{i : ids[i, j, k] = r} g[:, i, j, k], summed in
// increasing i, with no float atomics.
//
// A workgroup owns a block of rows_per_wg table rows [r0, r1) of one batch
// and one slab of columns; each invocation owns CPG groups of 4 columns of
// the slab in every row of the block, so nobody else ever touches what it
// adds to. It zeroes its columns of the block, then walks the ids in tiles
// of TILE: each invocation tests TILE/WG consecutive ids against [r0, r1),
// a prefix sum of the per-invocation counts over the workgroup compacts the
// hits in increasing i (the inverse index of the tile, built on the device;
// one prefix sum per TILE ids, its 2·log2(WG) barriers shared by TILE/WG
// ids), and every invocation adds g's row of each hit,
// in that order, into its columns of the hit's row. Every element is thus a
// sum in increasing i, the CPU's order: the results match it bit for bit.
// Ids were checked against [0, n_rows) on the host. Error: γ(m), m the
// number of ids that hit the row.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "get_rows/get_rows_layout.h"
#include "common/grid.glsl"

layout(local_size_x_id = VKG_GET_ROWS_SPEC_WG) in;
layout(constant_id = VKG_GET_ROWS_SPEC_VEC4) const uint VEC4 = 0u;
layout(constant_id = VKG_GET_ROWS_SPEC_CPG) const uint CPG = 1u;
layout(constant_id = VKG_GET_ROWS_SPEC_TILE) const uint TILE = 256u;
#define WG gl_WorkGroupSize.x

layout(set = 0, binding = 0) readonly buffer G { float g[]; };
layout(set = 0, binding = 0) readonly buffer G4 { vec4 g4[]; };
layout(set = 0, binding = 1) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = 2) buffer D { float d[]; };
layout(set = 0, binding = 2) buffer D4 { vec4 d4[]; };

layout(push_constant) uniform Push { VKG_GET_ROWS_PUSH } p;

shared uint s_count[TILE]; // the first WG entries: per-invocation hit counts
shared uint s_i[TILE];
shared uint s_r[TILE];

// Add g row gi into result row dr (element offsets), this invocation's columns.
void add_row(uint gi, uint dr, uint c0, uint c1) {
    [[unroll]] for (uint q = 0u; q < CPG; q++) {
        const uint c = c0 + 4u * (gl_LocalInvocationID.x + q * WG);
        if (c >= c1)
            continue;
        if (VEC4 != 0u) {
            d4[(dr + c) / 4u] += g4[(gi + c) / 4u];
        } else {
            for (uint e = c; e < min(c + 4u, c1); e++)
                d[dr + e] += g[gi + e * p.s_nb.x];
        }
    }
}

void main() {
    const uint grp = vkg_group_linear();
    const uint lid = gl_LocalInvocationID.x;
    if (grp >= p.n_slabs * p.n_blocks * p.n2 * p.n3)
        return; // uniform per workgroup
    const uint slab = grp % p.n_slabs, t = grp / p.n_slabs;
    const uint block = t % p.n_blocks, batch = t / p.n_blocks;
    const uint j = batch % p.n2, k = batch / p.n2;
    const uint r0 = block * p.rows_per_wg, r1 = min(r0 + p.rows_per_wg, p.n_rows);
    const uint c0 = slab * p.slab, c1 = min(p.n0, c0 + p.slab);
    const uint d_batch = p.d_off + batch * p.n_rows * p.n0;

    for (uint r = r0; r < r1; r++) // zero this invocation's columns of the block
        [[unroll]] for (uint q = 0u; q < CPG; q++) {
            const uint c = c0 + 4u * (lid + q * WG);
            if (c >= c1)
                continue;
            if (VEC4 != 0u)
                d4[(d_batch + r * p.n0 + c) / 4u] = vec4(0.0);
            else
                for (uint e = c; e < min(c + 4u, c1); e++)
                    d[d_batch + r * p.n0 + e] = 0.0;
        }

    const uint per = TILE / WG; // ids per invocation and tile
    const uint id_base = p.ids_off + j * p.ids_nb.y + k * p.ids_nb.z;
    for (uint t0 = 0u; t0 < p.n_ids; t0 += TILE) {
        const uint first = t0 + lid * per;
        uint hits = 0u;
        for (uint e = 0u; e < per && first + e < p.n_ids; e++) {
            const uint r = uint(ids[id_base + (first + e) * p.ids_nb.x]);
            hits += r >= r0 && r < r1 ? 1u : 0u;
        }
        s_count[lid] = hits;
        barrier();
        for (uint off = 1u; off < WG; off <<= 1) { // inclusive prefix sum of the counts
            const uint v = lid >= off ? s_count[lid - off] : 0u;
            barrier();
            s_count[lid] += v;
            barrier();
        }
        const uint n_hits = s_count[WG - 1u];
        uint pos = s_count[lid] - hits;
        for (uint e = 0u; e < per && first + e < p.n_ids && hits != 0u; e++) {
            const uint r = uint(ids[id_base + (first + e) * p.ids_nb.x]);
            if (r >= r0 && r < r1) {
                s_i[pos] = first + e;
                s_r[pos] = r;
                pos++;
            }
        }
        barrier();
        for (uint h = 0u; h < n_hits; h++)
            add_row(p.s_off + s_i[h] * p.s_nb.y + j * p.s_nb.z + k * p.s_nb.w,
                    d_batch + s_r[h] * p.n0, c0, c1);
        barrier(); // the next tile rewrites the counts and the lists
    }
}
