/* vulkan/tune_key.h — how a family describes its tuning knobs (tuning.h). */
#ifndef VKG_VK_TUNE_KEY_H
#define VKG_VK_TUNE_KEY_H

#include <stddef.h>

#include "device_limits.h"

/* One knob of a family. Tables end with an entry whose name is NULL. */
struct vkg_vk_tune_key {
    const char *name;          /* "fuse": spelled "glue.fuse" in VKGRAD_TUNING */
    size_t offset;             /* of its int in the family struct (offsetof) */
    int min, max;              /* accepted values of an INT key */
    const char *const *values; /* ENUM: the names of 0, 1, ..., NULL-terminated; INT: NULL */
    const char *doc;           /* one line: what it chooses */
};

/* Table entries: an INT knob in [lo, hi], an ENUM knob over a NULL-terminated
 * name list. */
#define VKG_VK_TUNE_INT(type, field, lo, hi, doc)                                                  \
    {#field, offsetof(type, field), (lo), (hi), NULL, (doc)}
#define VKG_VK_TUNE_ENUM(type, field, names, doc) {#field, offsetof(type, field), 0, 0, (names), (doc)}

#endif
