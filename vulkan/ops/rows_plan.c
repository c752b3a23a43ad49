/* vulkan/ops/rows_plan.c — the row kernels' plan (rows_plan.h). */
#include "rows_plan.h"

#include <stdio.h>

static uint32_t floor_pow2(uint32_t x) {
    uint32_t p = 1;
    while (p * 2 <= x && p * 2 != 0)
        p *= 2;
    return p;
}

bool vkg_vk_rows_vec4_ok(const struct vkg_vk_limits *lim, uint32_t n, const uint32_t st[4],
                         const uint32_t ne[4], uint32_t off) {
    if (lim->storage_offset_alignment % 16 || n % 4 || st[0] != 1 || off % 4) return false;
    for (int d = 1; d < 4; d++)
        if (ne[d] > 1 && st[d] % 4) return false;
    return true;
}

bool vkg_vk_rows_plan_make(const struct vkg_vk_rows_problem *p, const struct vkg_vk_limits *lim,
                           struct vkg_vk_rows_plan *pl, char *reason, size_t n) {
    const uint64_t grid = (uint64_t)lim->max_workgroup_count[0] * lim->max_workgroup_count[1];
    if (p->n > UINT32_MAX || p->rows > UINT32_MAX) {
        snprintf(reason, n, "row length %llu x %llu rows past 32-bit indices",
                 (unsigned long long)p->n, (unsigned long long)p->rows);
        return false;
    }
    if (p->rows > grid) {
        snprintf(reason, n, "rows=%llu > %llu (workgroup count)", (unsigned long long)p->rows,
                 (unsigned long long)grid);
        return false;
    }
    uint32_t cap = lim->max_workgroup_invocations;
    if (lim->max_workgroup_size[0] < cap) cap = lim->max_workgroup_size[0];
    if (lim->max_shared_memory / 16 < cap) cap = lim->max_shared_memory / 16;
    const uint32_t want = p->wg_max > 0 ? (uint32_t)p->wg_max : VKG_VK_ROWS_WG_MAX;
    if (want < cap) cap = want;
    if (cap == 0) {
        snprintf(reason, n, "no workgroup fits %u B of shared memory", lim->max_shared_memory);
        return false;
    }
    cap = floor_pow2(cap);
    const uint32_t sgs = lim->subgroup_size;
    uint32_t wg = VKG_VK_ROWS_WG_MIN > sgs ? VKG_VK_ROWS_WG_MIN : floor_pow2(sgs ? sgs : 1);
    if (wg > cap) wg = cap;
    const uint64_t cmax = p->cache_max > 0 ? (uint64_t)p->cache_max : VKG_VK_ROWS_CACHE;
    const uint64_t slots = p->vec4 ? p->n / 4 : p->n;
    while (wg < cap && (uint64_t)wg * cmax < slots)
        wg *= 2;
    uint64_t cache = (slots + wg - 1) / wg;
    if (cache > cmax) cache = cmax;
    if (cache < 1) cache = 1;
    *pl = (struct vkg_vk_rows_plan){
        .wg = wg,
        .cache = (uint32_t)cache,
        .sg = p->sg && lim->subgroup_shuffle && sgs > 0 && wg % sgs == 0,
        .vec4 = p->vec4,
        .rows = (uint32_t)p->rows,
        .shared_bytes = 16 * wg,
        .streamed = slots > (uint64_t)wg * cache ? slots - (uint64_t)wg * cache : 0,
    };
    return true;
}
