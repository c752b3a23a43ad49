/* vkgrad/backend.h — backends: things that hold tensor data and run nodes.
 *
 * A backend is CPU (vkg_backend_cpu_init) or a Vulkan device
 * (vkg_backend_vulkan_init, vkgrad/vulkan.h). The caller owns it and frees it
 * with vkg_backend_free after every scheduler using it is freed. A backend is
 * used by one thread at a time.
 *
 * vkg_backend_tensor_set/get move bytes between host memory and a tensor's
 * storage, whichever backend holds it (the tensor must be allocated).
 *
 *     struct vkg_backend *cpu = vkg_backend_cpu_init();
 *     vkg_backend_cpu_set_n_threads(cpu, 4);
 *     printf("%s\n", vkg_backend_name(cpu));   // "CPU"
 *     vkg_backend_free(cpu);
 */
#ifndef VKGRAD_BACKEND_H
#define VKGRAD_BACKEND_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vkg_backend;

/* The CPU backend; threads default to the number of online cores. */
struct vkg_backend *vkg_backend_cpu_init(void);
/* n >= 1; returns INVALID_ARGUMENT otherwise or if backend is not CPU. */
enum vkg_status vkg_backend_cpu_set_n_threads(struct vkg_backend *backend, int n);
bool vkg_backend_is_cpu(const struct vkg_backend *backend);

void vkg_backend_free(struct vkg_backend *backend);
/* "CPU", "Vulkan0", ... */
const char *vkg_backend_name(const struct vkg_backend *backend);
/* Longer human description (device name, driver). */
const char *vkg_backend_description(const struct vkg_backend *backend);

/* Can backend run node? On false, reason (if non-NULL) gets a one-line why,
 * naming the limit: "ssm_scan_back d_state=512 > 256 (shared memory)". */
bool vkg_backend_supports_op(struct vkg_backend *backend, const struct vkg_tensor *node,
                             char *reason, size_t reason_size);

/* Copy size bytes between host and the tensor's storage, starting offset bytes
 * into the tensor (which must be contiguous over that range). */
enum vkg_status vkg_backend_tensor_set(struct vkg_tensor *t, const void *data, size_t offset,
                                       size_t size);
enum vkg_status vkg_backend_tensor_get(const struct vkg_tensor *t, void *data, size_t offset,
                                       size_t size);
/* Read a tensor of any layout (views included) into a contiguous host array of
 * vkg_nelements(t) elements. */
enum vkg_status vkg_backend_tensor_get_strided(const struct vkg_tensor *t, void *data);
/* Write a contiguous host array into a tensor of any layout. */
enum vkg_status vkg_backend_tensor_set_strided(struct vkg_tensor *t, const void *data);

#ifdef __cplusplus
}
#endif
#endif
