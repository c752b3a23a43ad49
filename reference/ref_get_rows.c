/* reference/ref_get_rows.c — GET_ROWS and GET_ROWS_BACK in float64
 * (lib/ops_train.md "Embeddings"):
 *
 *   y[:, i, j, k]   = a[:, ids[i, j, k], j, k]                 (a copy: exact, K = 0)
 *   d_a[:, r, j, k] = Σ_{i : ids[i, j, k] = r} g[:, i, j, k]   (zero where no id points)
 *
 * Error bound of the backward: row r of batch (j, k) is a sum of m terms,
 * m the number of ids that point to it; any summation order is within
 * γ(m)·Σ|terms| (ref_internal.h), so K = the largest m over all rows, c = 1,
 * mag = Σ mag_g. Floor: the common one.
 */
#include "ref_internal.h"

#include <stdlib.h>

static int64_t id_of(const struct vkgref_array *ids, int64_t i, int64_t j, int64_t k) {
    return (int64_t)vkgref_get(ids, i, j, k, 0);
}

struct vkgref_bound vkgref_get_rows(const struct vkgref_array *a, const struct vkgref_array *ids,
                                    double *out, double *mag) {
    const int64_t n0 = a->ne[0], n_ids = ids->ne[0];
    const int64_t n_a = vkgref_nelements(a);
    double *av = vkgref_alloc(n_a), *am = vkgref_alloc(n_a);
    vkgref_load(a, av, am);
    int64_t o = 0;
    for (int64_t k = 0; k < a->ne[3]; k++)
        for (int64_t j = 0; j < a->ne[2]; j++)
            for (int64_t i = 0; i < n_ids; i++) {
                int64_t r = id_of(ids, i, j, k);
                for (int64_t c = 0; c < n0; c++, o++) {
                    int64_t s = vkgref_cidx(a->ne, c, r, j, k);
                    out[o] = av[s];
                    mag[o] = am[s];
                }
            }
    free(av);
    free(am);
    return vkgref_make_bound(1.0, 0, mag, o);
}

struct vkgref_bound vkgref_get_rows_back(const struct vkgref_array *g,
                                         const struct vkgref_array *ids, int64_t n_rows,
                                         double *out, double *mag) {
    const int64_t n0 = g->ne[0], n_ids = g->ne[1], n2 = g->ne[2], n3 = g->ne[3];
    const int64_t n_out = n0 * n_rows * n2 * n3, n_g = vkgref_nelements(g);
    const int64_t one[4] = {n0, n_rows, n2, n3};
    double *gv = vkgref_alloc(n_g), *gm = vkgref_alloc(n_g);
    int64_t *count = calloc((size_t)(n_rows * n2 * n3), sizeof *count);
    if (!count) abort();
    vkgref_load(g, gv, gm);
    for (int64_t i = 0; i < n_out; i++)
        out[i] = mag[i] = 0.0;
    int64_t K = 0;
    for (int64_t k = 0; k < n3; k++)
        for (int64_t j = 0; j < n2; j++)
            for (int64_t i = 0; i < n_ids; i++) {
                int64_t r = id_of(ids, i, j, k), *m = &count[r + n_rows * (j + n2 * k)];
                if (++*m > K) K = *m;
                for (int64_t c = 0; c < n0; c++) {
                    int64_t d = vkgref_cidx(one, c, r, j, k), s = vkgref_cidx(g->ne, c, i, j, k);
                    out[d] += gv[s];
                    mag[d] += gm[s];
                }
            }
    free(count);
    free(gv);
    free(gm);
    return vkgref_make_bound(1.0, K, mag, n_out);
}
