// common/grid.glsl — workgroup grids folded into x and y.
//
// maxComputeWorkGroupCount[0] is only 65535 on some devices (lavapipe), so
// the host folds a 1-D count of groups into (x, y) with vkg_vk_grid(); the
// shader unfolds it here and must skip ids past the real count (the last row
// of the fold may be partial).
#ifndef VKG_GRID_GLSL
#define VKG_GRID_GLSL

uint vkg_group_linear() {
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

#endif
