/* vulkan/spirv_workgroup.c — a compute shader's workgroup size, read from its
 * SPIR-V and the pipeline's specialization constants (for the pipeline
 * statistics: registers x invocations is what bounds the workgroups an SM
 * holds).
 *
 * Where SPIR-V puts it, in the order that wins: a constant composite
 * decorated BuiltIn WorkgroupSize (glslang's form for local_size_x_id),
 * else OpExecutionModeId LocalSizeId, else OpExecutionMode LocalSize. A
 * constant decorated SpecId i takes spec[i] when the pipeline sets it.
 * Only the instructions named here are read; anything else is skipped by
 * its word count.
 */
#include <stdlib.h>
#include <string.h>

#include "vk_impl.h"

enum {
    SPV_MAGIC = 0x07230203u,
    OP_EXECUTION_MODE = 16,
    OP_CONSTANT = 43,
    OP_CONSTANT_COMPOSITE = 44,
    OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51,
    OP_DECORATE = 71,
    OP_EXECUTION_MODE_ID = 331,
    DEC_SPEC_ID = 1,
    DEC_BUILTIN = 11,
    BUILTIN_WORKGROUP_SIZE = 25,
    MODE_LOCAL_SIZE = 17,
    MODE_LOCAL_SIZE_ID = 38,
};

/* Per result id: its scalar constant value (spec-overridden) and, for a
 * composite, where its three constituents start in the module. */
struct ids {
    uint32_t bound;
    uint32_t *value;
    uint32_t *spec_id; /* SpecId + 1; 0: none */
    uint8_t *known;
    uint32_t *composite; /* word index of the first constituent + 1; 0: none */
};

static bool value_of(const struct ids *t, uint32_t id, uint32_t *out) {
    if (id >= t->bound || !t->known[id]) return false;
    *out = t->value[id];
    return true;
}

bool vkg_vk_spirv_workgroup_size(const uint32_t *words, size_t n_words, const uint32_t *spec,
                                 uint32_t n_spec, uint32_t out[3]) {
    out[0] = out[1] = out[2] = 0;
    if (n_words < 5 || words[0] != SPV_MAGIC || words[3] == 0 || words[3] > (1u << 22))
        return false;
    struct ids t = {.bound = words[3]};
    t.value = calloc(t.bound, sizeof *t.value);
    t.spec_id = calloc(t.bound, sizeof *t.spec_id);
    t.known = calloc(t.bound, 1);
    t.composite = calloc(t.bound, sizeof *t.composite);
    bool ok = false;
    if (!t.value || !t.spec_id || !t.known || !t.composite) goto done;

    uint32_t builtin_id = 0, literal[3] = {0, 0, 0}, size_ids[3] = {0, 0, 0};
    bool have_builtin = false, have_literal = false, have_ids = false;
    /* Decorations come before the constants they decorate, so one pass
     * reads SpecIds first and applies them when the constant appears. */
    for (size_t i = 5; i < n_words;) {
        const uint32_t wc = words[i] >> 16, op = words[i] & 0xffffu;
        if (wc == 0 || i + wc > n_words) goto done; /* malformed */
        const uint32_t *w = &words[i];
        if (op == OP_DECORATE && wc >= 4 && w[1] < t.bound) {
            if (w[2] == DEC_SPEC_ID) t.spec_id[w[1]] = w[3] + 1;
            if (w[2] == DEC_BUILTIN && w[3] == BUILTIN_WORKGROUP_SIZE) {
                builtin_id = w[1];
                have_builtin = true;
            }
        } else if (op == OP_EXECUTION_MODE && wc >= 6 && w[2] == MODE_LOCAL_SIZE) {
            memcpy(literal, &w[3], sizeof literal);
            have_literal = true;
        } else if (op == OP_EXECUTION_MODE_ID && wc >= 6 && w[2] == MODE_LOCAL_SIZE_ID) {
            memcpy(size_ids, &w[3], sizeof size_ids);
            have_ids = true;
        } else if ((op == OP_CONSTANT || op == OP_SPEC_CONSTANT) && wc >= 4 && w[2] < t.bound) {
            uint32_t v = w[3];
            const uint32_t sid = t.spec_id[w[2]];
            if (op == OP_SPEC_CONSTANT && sid && sid - 1 < n_spec) v = spec[sid - 1];
            t.value[w[2]] = v;
            t.known[w[2]] = 1;
        } else if ((op == OP_CONSTANT_COMPOSITE || op == OP_SPEC_CONSTANT_COMPOSITE) && wc >= 6 &&
                   w[2] < t.bound) {
            t.composite[w[2]] = (uint32_t)(i + 3) + 1;
        }
        i += wc;
    }
    if (have_builtin && builtin_id < t.bound && t.composite[builtin_id]) {
        const uint32_t *c = &words[t.composite[builtin_id] - 1];
        ok = value_of(&t, c[0], &out[0]) && value_of(&t, c[1], &out[1]) &&
             value_of(&t, c[2], &out[2]);
    } else if (have_ids) {
        ok = value_of(&t, size_ids[0], &out[0]) && value_of(&t, size_ids[1], &out[1]) &&
             value_of(&t, size_ids[2], &out[2]);
    } else if (have_literal) {
        memcpy(out, literal, sizeof literal);
        ok = true;
    }
    if (!ok) out[0] = out[1] = out[2] = 0;

done:
    free(t.value);
    free(t.spec_id);
    free(t.known);
    free(t.composite);
    return ok;
}
