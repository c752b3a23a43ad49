// chain.comp — a run of up to 4 elementwise glue nodes in one dispatch.
//
// The nodes share one shape and have contiguous outputs; node j > 0 takes
// node j-1's output as one (or both) of its operands. One invocation per
// element i computes every node's value at i, keeps it in a register for the
// next node and still writes each node's output, so the result is the one
// of the nodes run apart (same roundings, same order), minus the dispatches
// and barriers between them. The host fuses only operands that are either
// carried, contiguous with the node's shape (element off + i) or a single
// element (element off), and no operand overlapping a chain output.
//
// Specialization constant j describes node j (glue/glue_layout.h,
// VKG_GLUE_CHAIN_NODE): its op (as in elementwise.comp; OP_NONE: no node)
// and the modes of its operands a and b (the previous node's value,
// contiguous, or one element).
//
// TAIL VIEW_BACK appends a VIEW_BACK of the last node's output: then one
// invocation per element j of the contiguous root, as elementwise.comp's
// OP_VIEW_BACK finds the view index landing on j (dims sorted by view
// stride, largest first); j outside the view gets 0, j inside runs the chain
// at the matching element i (the chain's contiguous strides in that order)
// and stores its value at j. Every chain element lands on exactly one root
// element (the view does not overlap itself), so each is computed once.
// TAIL SUM appends the first pass of a SUM of the last output: each workgroup
// adds its 128 values in a fixed shared-memory tree and stores the partial
// at ot[ot_off + workgroup]; the host sums the partials in a second
// dispatch (reduce.comp), after the barrier a separate SUM would need anyway.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "common/ops_glue.glsl"

#define OP_NONE VKG_GLUE_OP_NONE
#define CARRIED VKG_GLUE_MODE_CARRIED // operand modes
#define ONE VKG_GLUE_MODE_ONE

layout(local_size_x = VKG_GLUE_WG) in;
// Node k's descriptor (VKG_GLUE_CHAIN_NODE: op, operand modes).
layout(constant_id = 0) const uint N0 = OP_NONE;
layout(constant_id = 1) const uint N1 = OP_NONE;
layout(constant_id = 2) const uint N2 = OP_NONE;
layout(constant_id = 3) const uint N3 = OP_NONE;
layout(constant_id = VKG_GLUE_SPEC_TAIL) const uint TAIL = VKG_GLUE_TAIL_NONE;

// Memory operands: node 0's a and b, then one per later node.
layout(set = 0, binding = 0) readonly buffer A0 { float a0[]; };
layout(set = 0, binding = 1) readonly buffer B0 { float b0[]; };
layout(set = 0, binding = 2) readonly buffer M1 { float m1[]; };
layout(set = 0, binding = 3) readonly buffer M2 { float m2[]; };
layout(set = 0, binding = 4) readonly buffer M3 { float m3[]; };
// Outputs of nodes 0..3.
layout(set = 0, binding = 5) writeonly buffer O0 { float o0[]; };
layout(set = 0, binding = 6) writeonly buffer O1 { float o1[]; };
layout(set = 0, binding = 7) writeonly buffer O2 { float o2[]; };
layout(set = 0, binding = 8) writeonly buffer O3 { float o3[]; };
layout(set = 0, binding = 9) writeonly buffer OT { float ot[]; }; // TAIL: root or partials

layout(push_constant) uniform Push { VKG_GLUE_CHAIN_PUSH } p;

uint op_of(uint c) { return VKG_GLUE_CHAIN_OP(c); }
uint mode_a(uint c) { return VKG_GLUE_CHAIN_MODE_A(c); }
uint mode_b(uint c) { return VKG_GLUE_CHAIN_MODE_B(c); }

float apply(uint c, float a, float b, float value) {
    return vkg_glue_apply(op_of(c), a, b, value);
}

bool binary(uint c) {
    return vkg_glue_binary(op_of(c));
}

// The chain at element i: writes every node's output, returns the last value.
float run_chain(uint i) {
    // Node 0: both operands from memory.
    float a = a0[p.a0_off + (mode_a(N0) == ONE ? 0u : i)];
    float b = 0.0;
    if (binary(N0))
        b = b0[p.b0_off + (mode_b(N0) == ONE ? 0u : i)];
    precise float v = apply(N0, a, b, p.value.x);
    o0[p.o_off0 + i] = v;
    if (N1 == OP_NONE)
        return v;
    float m = 0.0;
    if (mode_a(N1) != CARRIED || (binary(N1) && mode_b(N1) != CARRIED))
        m = m1[p.m_off1 + ((mode_a(N1) | mode_b(N1)) == ONE ? 0u : i)];
    v = apply(N1, mode_a(N1) == CARRIED ? v : m, mode_b(N1) == CARRIED ? v : m, p.value.y);
    o1[p.o_off1 + i] = v;
    if (N2 == OP_NONE)
        return v;
    m = 0.0;
    if (mode_a(N2) != CARRIED || (binary(N2) && mode_b(N2) != CARRIED))
        m = m2[p.m_off2 + ((mode_a(N2) | mode_b(N2)) == ONE ? 0u : i)];
    v = apply(N2, mode_a(N2) == CARRIED ? v : m, mode_b(N2) == CARRIED ? v : m, p.value.z);
    o2[p.o_off2 + i] = v;
    if (N3 == OP_NONE)
        return v;
    m = 0.0;
    if (mode_a(N3) != CARRIED || (binary(N3) && mode_b(N3) != CARRIED))
        m = m3[p.m_off3 + ((mode_a(N3) | mode_b(N3)) == ONE ? 0u : i)];
    v = apply(N3, mode_a(N3) == CARRIED ? v : m, mode_b(N3) == CARRIED ? v : m, p.value.w);
    o3[p.o_off3 + i] = v;
    return v;
}

shared float partial[VKG_GLUE_WG];

void main() {
    uint j = vkg_group_linear() * uint(VKG_GLUE_WG) + gl_LocalInvocationID.x;
    if (TAIL == VKG_GLUE_TAIL_SUM) {
        // Whole workgroups stay to the end (barriers); the grid may hold
        // workgroups past the last one (vkg_vk_grid's fold), which leave
        // together.
        uint g = vkg_group_linear();
        if (g * uint(VKG_GLUE_WG) >= p.n)
            return;
        uint lid = gl_LocalInvocationID.x;
        partial[lid] = j < p.n ? run_chain(j) : 0.0;
        barrier();
        for (uint w = uint(VKG_GLUE_WG) / 2u; w > 0u; w >>= 1) {
            if (lid < w)
                partial[lid] += partial[lid + w];
            barrier();
        }
        if (lid == 0u)
            ot[p.ot_off + g] = partial[0];
        return;
    }
    if (TAIL == VKG_GLUE_TAIL_NONE) {
        if (j < p.n)
            run_chain(j);
        return;
    }
    if (j >= p.root_n)
        return;
    float r = 0.0;
    if (j >= p.view_off) {
        uint rel = j - p.view_off, i = 0u;
        bool inside = true;
        for (int k = 0; k < 4; k++) {
            uint q = p.vs_nb[k] == 0u ? 0u : rel / p.vs_nb[k];
            inside = inside && q < p.vs_ne[k];
            rel -= q * p.vs_nb[k];
            i += q * p.vs_c[k];
        }
        if (inside && rel == 0u)
            r = run_chain(i);
    }
    ot[p.ot_off + j] = r;
}
