/* vulkan/spirv_denorm.c — ask a kernel to keep fp32 subnormals.
 *
 * Vulkan leaves fp32 denormal handling to the implementation unless a
 * shader asks (SPIR-V float controls, core in SPIR-V 1.4 / Vulkan 1.2): the
 * NVIDIA driver flushes by default, so a gradient under 2^-126 came back as
 * 0, and sums of such products (out_prod, the scans) lost normal-sized
 * results with them (canary_denormal). A device that advertises
 * shaderDenormPreserveFloat32 keeps them when the module says
 * `OpExecutionMode %main DenormPreserve 32`. The kernels are written in
 * GLSL, which cannot say it, so the backend adds it to each module before
 * creating it, where the device offers it:
 *
 *   OpCapability DenormPreserve          after the module's last OpCapability
 *   OpExecutionMode %e DenormPreserve 32 after its last execution mode, for
 *                                        every GLCompute entry point %e
 *
 * Both are in the module's preamble, whose order SPIR-V fixes (capabilities,
 * extensions, imports, memory model, entry points, execution modes), so the
 * words are inserted, never appended. Our modules target SPIR-V 1.5 (Vulkan
 * 1.2), so no OpExtension is needed. A module that already has the
 * capability is returned unchanged, as is anything that does not parse.
 */
#include <stdlib.h>
#include <string.h>

#include "vk_impl.h"

enum {
    SPV_MAGIC = 0x07230203u,
    SPV_VERSION_1_4 = 0x00010400u,
    OP_CAPABILITY = 17,
    OP_ENTRY_POINT = 15,
    OP_EXECUTION_MODE = 16,
    OP_EXECUTION_MODE_ID = 331,
    CAP_DENORM_PRESERVE = 4464,
    MODE_DENORM_PRESERVE = 4459,
    MODEL_GLCOMPUTE = 5,
    MAX_ENTRY_POINTS = 8,
};

uint32_t *vkg_vk_spirv_with_denorm_preserve(const uint32_t *words, size_t n_words,
                                            size_t *n_out) {
    *n_out = 0;
    if (n_words < 5 || words[0] != SPV_MAGIC || words[1] < SPV_VERSION_1_4) return NULL;
    size_t after_caps = 0, after_modes = 0, after_entries = 0;
    uint32_t entries[MAX_ENTRY_POINTS];
    int n_entries = 0;
    for (size_t i = 5; i < n_words;) {
        const uint32_t op = words[i] & 0xffffu, wc = words[i] >> 16;
        if (wc == 0 || i + wc > n_words) return NULL;
        if (op == OP_CAPABILITY && wc == 2) {
            if (words[i + 1] == CAP_DENORM_PRESERVE) return NULL;
            after_caps = i + wc;
        } else if (op == OP_ENTRY_POINT && wc >= 3) {
            if (words[i + 1] == MODEL_GLCOMPUTE) {
                if (n_entries == MAX_ENTRY_POINTS) return NULL;
                entries[n_entries++] = words[i + 2];
            }
            after_entries = i + wc;
        } else if (op == OP_EXECUTION_MODE || op == OP_EXECUTION_MODE_ID) {
            after_modes = i + wc;
        }
        i += wc;
    }
    if (!after_caps || !n_entries) return NULL;
    if (!after_modes) after_modes = after_entries;
    if (after_modes < after_caps) return NULL;

    const size_t extra = 2 + 4 * (size_t)n_entries;
    uint32_t *out = malloc((n_words + extra) * sizeof *out);
    if (!out) return NULL;
    size_t o = 0;
    memcpy(out, words, after_caps * sizeof *out);
    o = after_caps;
    out[o++] = 2u << 16 | OP_CAPABILITY;
    out[o++] = CAP_DENORM_PRESERVE;
    memcpy(out + o, words + after_caps, (after_modes - after_caps) * sizeof *out);
    o += after_modes - after_caps;
    for (int e = 0; e < n_entries; e++) {
        out[o++] = 4u << 16 | OP_EXECUTION_MODE;
        out[o++] = entries[e];
        out[o++] = MODE_DENORM_PRESERVE;
        out[o++] = 32;
    }
    memcpy(out + o, words + after_modes, (n_words - after_modes) * sizeof *out);
    o += n_words - after_modes;
    *n_out = o;
    return out;
}
