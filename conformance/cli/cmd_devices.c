/* conformance/cli/cmd_devices.c — `vkgrad devices`: the Vulkan devices vkgrad
 * sees, with what decides where ops run (limits) and how results are
 * labelled (driver identity).
 *
 * Output is a human table, or JSON (--json, through json-c) for scripts and
 * CI. No device is not an error: the command says so and exits 0, since the
 * CPU backend still runs everything.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "vkgrad/vkgrad.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vkgrad devices [--json] [--tuning] [--icd FILE]\n"
               "\n"
               "List every Vulkan device (backend Vulkan<i>): device and driver identity, API\n"
               "version, CPU or GPU, subgroup size, shared memory, workgroup and storage-buffer\n"
               "limits, device-local memory, float atomic add and cooperative matrix support,\n"
               "whether fp32 subnormals are kept, and the largest shapes the kernels take\n"
               "(d_state, d_conv, one binding).\n"
               "\n"
               "  --json   one JSON object {\"vulkan_available\": ..., \"devices\": [...]}\n"
               "  --tuning also list each device's tuning: every key of VKGRAD_TUNING\n"
               "           (family.key=value,...), its value on that device, what it accepts\n"
               "           and what it chooses (with --json: a \"tuning\" object per device)\n"
               "  --icd FILE  the Vulkan driver of this ICD manifest only (vkgrad --help)\n"
               "  --help   this text\n"
               "\n"
               "Exits 0 (also when there is no Vulkan device), 2 on bad usage or when\n"
               "VKGRAD_TUNING names an unknown key or a bad value (with --tuning).\n");
}

static void print_bytes(char *buf, size_t size, uint64_t b) {
    if (b >= (1ull << 30))
        snprintf(buf, size, "%.1f GiB", (double)b / (double)(1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, size, "%.1f MiB", (double)b / (double)(1ull << 20));
    else if (b >= 1024)
        snprintf(buf, size, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, size, "%llu B", (unsigned long long)b);
}

/* The largest shapes the kernels take (vkg_vulkan_device_op_limits). */
static void print_op_limits(int i) {
    struct vkg_vulkan_op_limits l;
    if (vkg_vulkan_device_op_limits(i, &l) != VKG_STATUS_OK) {
        printf("  op limits           %s\n", vkg_last_error(NULL));
        return;
    }
    printf("  ssm_scan d_state    <= %lld (Mamba-1), <= %lld (Mamba-2, head_dim 64)\n",
           (long long)l.scan_fwd_d_state_mamba1, (long long)l.scan_fwd_d_state_mamba2);
    printf("  ssm_scan_back       d_state <= %lld (Mamba-1), <= %lld (Mamba-2, head_dim 64)\n",
           (long long)l.scan_back_d_state_mamba1, (long long)l.scan_back_d_state_mamba2);
    printf("  ssm_conv_back       d_conv <= %lld (64 channels x 64 tokens)\n",
           (long long)l.conv_back_d_conv);
    printf("  one binding         <= %llu bytes (a tensor or a scratch region)\n",
           (unsigned long long)l.binding_bytes);
    printf("  ssm_scan_back n_tok <= %lld (Mamba-2, d_state 128, 128 heads x 80; tensors fit to "
           "%lld), <= %lld (Mamba-1, d_state 16, d_inner 4096; tensors fit to %lld)\n",
           (long long)l.scan_back_tokens_mamba2, (long long)l.scan_back_tokens_mamba2_tensors,
           (long long)l.scan_back_tokens_mamba1, (long long)l.scan_back_tokens_mamba1_tensors);
}

static json_object *op_limits_json(int i) {
    struct vkg_vulkan_op_limits l;
    if (vkg_vulkan_device_op_limits(i, &l) != VKG_STATUS_OK) return NULL;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "ssm_scan_d_state_mamba1", json_object_new_int64(l.scan_fwd_d_state_mamba1));
    json_object_object_add(o, "ssm_scan_d_state_mamba2_head_dim64",
                           json_object_new_int64(l.scan_fwd_d_state_mamba2));
    json_object_object_add(o, "ssm_scan_back_d_state_mamba1",
                           json_object_new_int64(l.scan_back_d_state_mamba1));
    json_object_object_add(o, "ssm_scan_back_d_state_mamba2_head_dim64",
                           json_object_new_int64(l.scan_back_d_state_mamba2));
    json_object_object_add(o, "ssm_conv_back_d_conv_64x64", json_object_new_int64(l.conv_back_d_conv));
    json_object_object_add(o, "binding_bytes", json_object_new_int64((int64_t)l.binding_bytes));
    json_object_object_add(o, "ssm_scan_back_n_tok_mamba2_nemotron_heads",
                           json_object_new_int64(l.scan_back_tokens_mamba2));
    json_object_object_add(o, "ssm_scan_back_n_tok_mamba2_nemotron_heads_tensors",
                           json_object_new_int64(l.scan_back_tokens_mamba2_tensors));
    json_object_object_add(o, "ssm_scan_back_n_tok_mamba1_d_inner4096",
                           json_object_new_int64(l.scan_back_tokens_mamba1));
    json_object_object_add(o, "ssm_scan_back_n_tok_mamba1_d_inner4096_tensors",
                           json_object_new_int64(l.scan_back_tokens_mamba1_tensors));
    return o;
}

static void print_text(int i, const struct vkg_vulkan_device_info *in) {
    char range[32], local[32];
    print_bytes(range, sizeof range, in->max_storage_buffer_range);
    print_bytes(local, sizeof local, in->device_local_bytes);
    printf("Vulkan%d: %s\n", i, in->name);
    printf("  driver              %s %s%s%s%s\n", in->driver_name[0] ? in->driver_name : "?",
           in->driver_version, in->driver_info[0] ? " (" : "", in->driver_info,
           in->driver_info[0] ? ")" : "");
    printf("  api version         %s\n", in->api_version);
    printf("  type                %s\n", in->is_cpu ? "CPU" : "GPU");
    printf("  vendor:device       0x%04x:0x%04x\n", in->vendor_id, in->device_id);
    printf("  subgroup size       %u\n", in->subgroup_size);
    printf("  shared memory       %u bytes\n", in->max_shared_memory);
    printf("  max workgroup       %u invocations\n", in->max_workgroup_invocations);
    printf("  max storage buffer  %llu bytes (%s)\n",
           (unsigned long long)in->max_storage_buffer_range, range);
    printf("  device-local memory %s\n", local);
    printf("  float atomic add    %s\n", in->float_atomic_add ? "yes" : "no");
    printf("  cooperative matrix  %s\n", in->cooperative_matrix ? "yes" : "no");
    printf("  fp32 subnormals     %s\n",
           in->denorm_preserve_f32 ? "kept (kernels ask: shaderDenormPreserveFloat32)"
                                   : "may flush to zero (no shaderDenormPreserveFloat32)");
    printf("  timestamp period    %g ns\n", in->timestamp_period_ns);
    print_op_limits(i);
}

static json_object *info_json(int i, const struct vkg_vulkan_device_info *in) {
    json_object *o = json_object_new_object();
    char backend[32];
    snprintf(backend, sizeof backend, "Vulkan%d", i);
    json_object_object_add(o, "index", json_object_new_int(i));
    json_object_object_add(o, "backend", json_object_new_string(backend));
    json_object_object_add(o, "name", json_object_new_string(in->name));
    json_object_object_add(o, "driver_name", json_object_new_string(in->driver_name));
    json_object_object_add(o, "driver_info", json_object_new_string(in->driver_info));
    json_object_object_add(o, "driver_version", json_object_new_string(in->driver_version));
    json_object_object_add(o, "api_version", json_object_new_string(in->api_version));
    json_object_object_add(o, "vendor_id", json_object_new_int64(in->vendor_id));
    json_object_object_add(o, "device_id", json_object_new_int64(in->device_id));
    json_object_object_add(o, "type", json_object_new_string(in->is_cpu ? "CPU" : "GPU"));
    json_object_object_add(o, "subgroup_size", json_object_new_int64(in->subgroup_size));
    json_object_object_add(o, "max_shared_memory", json_object_new_int64(in->max_shared_memory));
    json_object_object_add(o, "max_workgroup_invocations",
                           json_object_new_int64(in->max_workgroup_invocations));
    json_object_object_add(o, "max_storage_buffer_range",
                           json_object_new_int64((int64_t)in->max_storage_buffer_range));
    json_object_object_add(o, "device_local_bytes",
                           json_object_new_int64((int64_t)in->device_local_bytes));
    json_object_object_add(o, "float_atomic_add", json_object_new_boolean(in->float_atomic_add));
    json_object_object_add(o, "cooperative_matrix",
                           json_object_new_boolean(in->cooperative_matrix));
    json_object_object_add(o, "denorm_preserve_f32",
                           json_object_new_boolean(in->denorm_preserve_f32));
    json_object_object_add(o, "timestamp_period_ns",
                           json_object_new_double(in->timestamp_period_ns));
    return o;
}

static void print_key(const char *key, const char *value, const char *accepted, const char *doc,
                      void *user) {
    (void)user;
    printf("  %-24s %-8s %-16s %s\n", key, value, accepted, doc);
}

static void json_key(const char *key, const char *value, const char *accepted, const char *doc,
                     void *user) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "value", json_object_new_string(value));
    json_object_object_add(o, "accepts", json_object_new_string(accepted));
    json_object_object_add(o, "doc", json_object_new_string(doc));
    json_object_object_add(user, key, o);
}

int vkg_cmd_devices(int argc, char **argv) {
    bool json = false, tuning = false;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[a], "--tuning") == 0) {
            tuning = true;
        } else if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "vkgrad devices: unknown argument '%s'\n", argv[a]);
            usage(stderr);
            return 2;
        }
    }
    bool available = vkg_vulkan_available();
    int n = vkg_vulkan_device_count();
    if (json) {
        json_object *root = json_object_new_object();
        json_object *arr = json_object_new_array();
        json_object_object_add(root, "vulkan_available", json_object_new_boolean(available));
        for (int i = 0; i < n; i++) {
            struct vkg_vulkan_device_info in;
            if (vkg_vulkan_device_get_info(i, &in) != VKG_STATUS_OK) continue;
            json_object *dev = info_json(i, &in);
            json_object_array_add(arr, dev);
            json_object_object_add(dev, "op_limits", op_limits_json(i));
            if (!tuning) continue;
            json_object *t = json_object_new_object();
            json_object_object_add(dev, "tuning", t);
            if (vkg_vulkan_device_tuning(i, json_key, t) != VKG_STATUS_OK) {
                fprintf(stderr, "vkgrad devices: Vulkan%d: %s\n", i, vkg_last_error(NULL));
                json_object_put(root);
                return 2;
            }
        }
        json_object_object_add(root, "devices", arr);
        if (!available)
            json_object_object_add(
                root, "message",
                json_object_new_string(
                    "no Vulkan devices (Vulkan not available in this build or on this machine)"));
        printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                                JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
        return 0;
    }
    if (n == 0) {
        printf("no Vulkan devices%s\n",
               available ? "" : " (Vulkan not available in this build or on this machine)");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        struct vkg_vulkan_device_info in;
        if (vkg_vulkan_device_get_info(i, &in) != VKG_STATUS_OK) {
            printf("Vulkan%d: %s\n", i, vkg_last_error(NULL));
            continue;
        }
        if (i) printf("\n");
        print_text(i, &in);
        if (!tuning) continue;
        printf("  tuning (VKGRAD_TUNING keys):\n  %-24s %-8s %-16s %s\n", "key", "value", "accepts",
               "chooses");
        if (vkg_vulkan_device_tuning(i, print_key, NULL) != VKG_STATUS_OK) {
            fprintf(stderr, "vkgrad devices: Vulkan%d: %s\n", i, vkg_last_error(NULL));
            return 2;
        }
    }
    return 0;
}
