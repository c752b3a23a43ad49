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
// Specialization constant j describes node j: bits 0-3 the op (as in
// elementwise.comp; 15: no node), bits 4-5 operand a's mode, bits 6-7
// operand b's (0: the previous node's value, 1: contiguous, 2: one element).
//
// TAIL (constant 4) appends a VIEW_BACK of the last node's output: then one
// invocation per element j of the contiguous root, as elementwise.comp's
// OP_VIEW_BACK finds the view index landing on j (dims sorted by view
// stride, largest first); j outside the view gets 0, j inside runs the chain
// at the matching element i (the chain's contiguous strides in that order)
// and stores its value at j. Every chain element lands on exactly one root
// element (the view does not overlap itself), so each is computed once.
// TAIL 2 appends the first pass of a SUM of the last output: each workgroup
// adds its 128 values in a fixed shared-memory tree and stores the partial
// at ot[ot_off + workgroup]; the host sums the partials in a second
// dispatch (reduce.comp), after the barrier a separate SUM would need anyway.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common/grid.glsl"
#include "common/ops_glue.glsl"

#define OP_NONE 15u

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint N0 = OP_NONE;
layout(constant_id = 1) const uint N1 = OP_NONE;
layout(constant_id = 2) const uint N2 = OP_NONE;
layout(constant_id = 3) const uint N3 = OP_NONE;
layout(constant_id = 4) const uint TAIL = 0u;

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

// Mirrored by struct chain_push in ops_glue.c.
layout(push_constant) uniform Push {
    uint n;        // elements of the shape
    uint a0_off;   // element offsets of the memory operands
    uint b0_off;
    uint m_off1, m_off2, m_off3;
    uint o_off0, o_off1, o_off2, o_off3;
    uint ot_off;   // TAIL: element offset of the root or the partials
    uint pad0;
    vec4 value;    // SCALE factor of each node
    uint root_n;   // TAIL: elements of the root
    uint view_off; // TAIL: the view's element offset in the root
    uint pad1, pad2;
    uvec4 vs_ne;   // TAIL: view dims sorted by stride, largest first (1: unused)
    uvec4 vs_nb;   // TAIL: their element strides in the root (0: unused)
    uvec4 vs_c;    // TAIL: their element strides in the chain's tensors
} p;

uint op_of(uint c) { return c & 15u; }
uint mode_a(uint c) { return (c >> 4) & 3u; }
uint mode_b(uint c) { return (c >> 6) & 3u; }

float apply(uint c, float a, float b, float value) {
    return vkg_glue_apply(op_of(c), a, b, value);
}

bool binary(uint c) {
    return vkg_glue_binary(op_of(c));
}

// The chain at element i: writes every node's output, returns the last value.
float run_chain(uint i) {
    // Node 0: both operands from memory.
    float a = a0[p.a0_off + (mode_a(N0) == 2u ? 0u : i)];
    float b = 0.0;
    if (binary(N0))
        b = b0[p.b0_off + (mode_b(N0) == 2u ? 0u : i)];
    precise float v = apply(N0, a, b, p.value.x);
    o0[p.o_off0 + i] = v;
    if (N1 == OP_NONE)
        return v;
    float m = 0.0;
    if (mode_a(N1) != 0u || (binary(N1) && mode_b(N1) != 0u))
        m = m1[p.m_off1 + ((mode_a(N1) | mode_b(N1)) == 2u ? 0u : i)];
    v = apply(N1, mode_a(N1) == 0u ? v : m, mode_b(N1) == 0u ? v : m, p.value.y);
    o1[p.o_off1 + i] = v;
    if (N2 == OP_NONE)
        return v;
    m = 0.0;
    if (mode_a(N2) != 0u || (binary(N2) && mode_b(N2) != 0u))
        m = m2[p.m_off2 + ((mode_a(N2) | mode_b(N2)) == 2u ? 0u : i)];
    v = apply(N2, mode_a(N2) == 0u ? v : m, mode_b(N2) == 0u ? v : m, p.value.z);
    o2[p.o_off2 + i] = v;
    if (N3 == OP_NONE)
        return v;
    m = 0.0;
    if (mode_a(N3) != 0u || (binary(N3) && mode_b(N3) != 0u))
        m = m3[p.m_off3 + ((mode_a(N3) | mode_b(N3)) == 2u ? 0u : i)];
    v = apply(N3, mode_a(N3) == 0u ? v : m, mode_b(N3) == 0u ? v : m, p.value.w);
    o3[p.o_off3 + i] = v;
    return v;
}

shared float partial[128];

void main() {
    uint j = vkg_group_linear() * 128u + gl_LocalInvocationID.x;
    if (TAIL == 2u) {
        // Whole workgroups stay to the end (barriers); the grid may hold
        // workgroups past the last one (vkg_vk_grid's fold), which leave
        // together.
        uint g = vkg_group_linear();
        if (g * 128u >= p.n)
            return;
        uint lid = gl_LocalInvocationID.x;
        partial[lid] = j < p.n ? run_chain(j) : 0.0;
        barrier();
        for (uint w = 64u; w > 0u; w >>= 1) {
            if (lid < w)
                partial[lid] += partial[lid + w];
            barrier();
        }
        if (lid == 0u)
            ot[p.ot_off + g] = partial[0];
        return;
    }
    if (TAIL == 0u) {
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
