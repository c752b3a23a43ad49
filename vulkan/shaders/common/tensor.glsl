// common/tensor.glsl — 4-D indexing of strided tensors.
//
// Shapes (ne) and element strides (nb / 4, set by the host) travel in push
// constants as uvec4; a tensor's element 0 sits at its bound range's start
// plus an element offset (vkg_vk_elem_offset) that the caller adds.
#ifndef VKG_TENSOR_GLSL
#define VKG_TENSOR_GLSL

// Index (i0, i1, i2, i3) of the i-th element of a contiguous walk over ne.
uvec4 vkg_unravel(uint i, uvec4 ne) {
    uvec4 idx;
    idx.x = i % ne.x;
    i /= ne.x;
    idx.y = i % ne.y;
    i /= ne.y;
    idx.z = i % ne.z;
    idx.w = i / ne.z;
    return idx;
}

// Element offset of index idx under element strides nb.
uint vkg_offset(uvec4 idx, uvec4 nb) {
    return idx.x * nb.x + idx.y * nb.y + idx.z * nb.z + idx.w * nb.w;
}

uint vkg_count(uvec4 ne) {
    return ne.x * ne.y * ne.z * ne.w;
}

#endif
