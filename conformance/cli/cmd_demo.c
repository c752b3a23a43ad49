/* conformance/cli/cmd_demo.c — `vkgrad demo`: which backward ops run on the GPU, how fast,
 * and whether they are right.
 *
 * For each of the four backward ops the demo builds the smallest training
 * graph that exercises it (perf/demo_graphs.h), runs it on the CPU and on each
 * Vulkan device, and prints: where the backward node landed and why, the
 * number of splits, median CPU and Vulkan wall times, the speedup, and
 * agreement judged twice — against the float64 reference and CPU against
 * Vulkan — with the seed demo's metric (max |diff| / RMS < 5e-3). One more row
 * per op shows a shape the device refuses, placed on the CPU with the reason
 * the backend gave, so a fallback is always visible.
 *
 * The verdict lines (OK / FELL BACK / MISMATCH / NOT COMPARED) end the output;
 * the exit status is 0 only for OK on every device selected. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "compile_pass.h"
#include "demo_graphs.h"

#define MAX_DEVICES       16
#define REFUSED_MAX_BYTES (64.0 * 1024 * 1024)

struct demo_opts {
    int device; /* -1: all */
    int reps;
    int cpu_threads; /* 0: backend default (all cores) */
    bool refused;
    bool profile;
    enum vkg_compile_pass_mode compile_pass;
    bool child; /* --compile-pass-child: the pass itself (compile_pass.h) */
};

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: vkgrad demo [--device N|all] [--reps N] [--cpu-threads N] [--no-refused]\n"
        "                   [--profile] [--[no-]compile-pass] [--icd FILE]\n"
        "\n"
        "Builds the four training graphs of the seed demo (OUT_PROD dense 512->256 batch 64;\n"
        "cross-entropy 256 classes x 512 rows, one-hot labels; SSM_CONV d_conv 4, d_inner\n"
        "1024, 64 tokens; SSM_SCAN d_state 128, head_dim 64, 16 heads, 64 tokens, gradients\n"
        "of dt, A, B, C), runs each on the CPU and on every Vulkan device, and prints where\n"
        "the backward node ran and why, splits, CPU and Vulkan ms (median of --reps after a\n"
        "warm-up), speedup, and agreement with the float64 reference and between the\n"
        "backends (max |diff| / RMS < 5e-3). For each op one more row shows a shape the\n"
        "device refuses, placed on the CPU with its reason.\n"
        "\n"
        "  --device N|all    Vulkan device to compare (default: all)\n"
        "  --reps N          timed repetitions after the warm-up (default 20)\n"
        "  --cpu-threads N   threads of the CPU backend (default: all cores)\n"
        "  --no-refused      skip the refused-shape rows\n"
        "  --profile         per graph and device, every computing node with its median time\n"
        "                    (GPU timestamps on a GPU): where the wall time of a compute goes\n"
        "  --no-compile-pass time without first running the demo once, untimed, in a\n"
        "                    separate process (default: that pass on every device that is\n"
        "                    not a CPU device; --compile-pass: on every device). A driver may\n"
        "                    give the first process on a machine to compile a kernel a slower\n"
        "                    build than it later serves from its shader cache\n"
        "\n"
        "Ends with OK / FELL BACK / MISMATCH / NOT COMPARED per device; exit 0 on OK\n"
        "for every device, 1 otherwise (also when there is no Vulkan device), 2 on bad usage.\n");
}

static int parse_opts(int argc, char **argv, struct demo_opts *o) {
    *o = (struct demo_opts){.device = -1, .reps = 20, .refused = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int shared;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--no-refused")) {
            o->refused = false;
        } else if (!strcmp(a, "--profile")) {
            o->profile = true;
        } else if (vkg_compile_pass_parse(a, &o->compile_pass)) {
            /* set */
        } else if (!strcmp(a, "--compile-pass-child")) {
            o->child = true;
            o->reps = 1;
            o->refused = false;
        } else if ((shared = vkg_perf_parse_shared_opt("vkgrad demo", a, v, MAX_DEVICES - 1,
                                                       &o->device, &o->reps, &o->cpu_threads))) {
            if (shared < 0) return 2;
            i++;
        } else {
            fprintf(stderr, "vkgrad demo: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    return -1; /* go on */
}

/* ---- printing ---------------------------------------------------------------- */

struct op_row {
    struct vkg_perf_shape shape;
    struct vkg_demo_data data;
    bool data_ok;
    char data_error[256];
    struct vkg_demo_result cpu;
    double cpu_rel_ref, cpu_bound;
    struct vkg_demo_result vk[MAX_DEVICES];
    double vk_rel_ref[MAX_DEVICES], vk_bound[MAX_DEVICES], rel_between[MAX_DEVICES];
    /* refused row, per device */
    struct vkg_perf_refusal pick[MAX_DEVICES];
    bool refused_ran[MAX_DEVICES];
    struct vkg_demo_data rdata[MAX_DEVICES];
    struct vkg_demo_result rres[MAX_DEVICES];
    double r_rel_ref[MAX_DEVICES];
};

/* The nodes of one run, slowest first, with their share of the wall time. */
static void print_profile(const char *label, const char *backend, const struct vkg_demo_result *r) {
    if (r->status != VKG_STATUS_OK || r->n_nodes == 0) return;
    int order[VKG_DEMO_MAX_NODES];
    double sum = 0;
    for (int i = 0; i < r->n_nodes; i++) {
        order[i] = i;
        sum += r->nodes[i].us;
    }
    for (int i = 1; i < r->n_nodes; i++) /* insertion sort, slowest first */
        for (int j = i; j > 0 && r->nodes[order[j]].us > r->nodes[order[j - 1]].us; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    printf("\nProfile: %s graph on %s, wall %.1f us per compute, nodes %.1f us in all\n", label,
           backend, r->ms * 1e3, sum);
    printf("  %-26s %-22s %-9s %10s %6s\n", "op", "node", "backend", "us", "share");
    for (int i = 0; i < r->n_nodes; i++) {
        const struct vkg_demo_node_time *nt = &r->nodes[order[i]];
        printf("  %-26s %-22s %-9s %10.2f %5.1f%%%s\n", nt->op, nt->name[0] ? nt->name : "-",
               nt->backend, nt->us, r->ms > 0 ? 100.0 * nt->us / (r->ms * 1e3) : 0.0,
               nt->gpu ? "" : "  (host)");
    }
}

static const char *agree_str(double rel) {
    if (!isfinite(rel)) return "??";
    return rel < VKG_DEMO_AGREE ? "yes" : "NO";
}

static void print_device_info(int dev) {
    struct vkg_vulkan_device_info info;
    if (vkg_vulkan_device_get_info(dev, &info) != VKG_STATUS_OK) return;
    printf("  limits: subgroup %u, shared memory %u B, workgroup invocations %u, storage "
           "buffer range %llu B, float atomic add %s\n",
           info.subgroup_size, info.max_shared_memory, info.max_workgroup_invocations,
           (unsigned long long)info.max_storage_buffer_range, info.float_atomic_add ? "yes" : "no");
}

static void print_summary(struct op_row *rows, int n_rows, int d, int dev, const char *vk_name,
                          bool refused) {
    printf("\n=== summary: CPU vs %s (%s) ===\n", vk_name, vkg_vulkan_device_description(dev));
    printf("%-24s %-9s %6s %9s %10s %8s  %-5s %9s %9s %9s %7s\n", "op", "placement", "splits",
           "CPU ms", "Vulkan ms", "speedup", "agree", "CPU/ref", "GPU/ref", "CPU/GPU", "bound");
    for (int i = 0; i < n_rows; i++) {
        struct op_row *r = &rows[i];
        struct vkg_demo_result *v = &r->vk[d];
        const char *label = vkg_demo_label(&r->shape);
        if (!r->data_ok || v->status != VKG_STATUS_OK || r->cpu.status != VKG_STATUS_OK) {
            printf("%-24s %-9s %6s %9s %10s %8s  %-5s  (not compared: %s)\n", label,
                   v->placement[0] ? v->placement : "-", "-", "-", "-", "-", "??",
                   !r->data_ok                      ? r->data_error
                   : r->cpu.status != VKG_STATUS_OK ? r->cpu.error
                                                    : v->error);
            continue;
        }
        double worst = fmax(fmax(r->cpu_rel_ref, r->vk_rel_ref[d]), r->rel_between[d]);
        if (!isfinite(r->cpu_rel_ref) || !isfinite(r->vk_rel_ref[d]) ||
            !isfinite(r->rel_between[d]))
            worst = NAN;
        double sp = r->cpu.ms / v->ms;
        printf("%-24s %-9s %6d %9.3f %10.3f %7.*fx  %-5s %9.2e %9.2e %9.2e %7.3f\n", label,
               v->placement, v->n_splits, r->cpu.ms, v->ms, sp < 10 ? 2 : 1, sp, agree_str(worst),
               r->cpu_rel_ref, r->vk_rel_ref[d], r->rel_between[d], r->vk_bound[d]);
    }
    printf("\nwhere each backward node ran, and why:\n");
    for (int i = 0; i < n_rows; i++) {
        struct vkg_demo_result *v = &rows[i].vk[d];
        char shape[160];
        vkg_perf_shape_str(&rows[i].shape, shape, sizeof shape);
        printf("  %-24s %-9s %s  [%s]", vkg_demo_label(&rows[i].shape),
               v->placement[0] ? v->placement : "-", v->reason[0] ? v->reason : v->error, shape);
        if (isfinite(v->node_us))
            printf("  node %.3f ms%s", v->node_us / 1e3,
                   v->node_time_is_gpu ? " (GPU timestamps)" : "");
        printf("\n");
    }
    if (!refused) return;
    printf("\nshapes %s refuses (the scheduler places the node on the CPU):\n", vk_name);
    printf("%-24s %-9s %6s %9s  %-5s %9s  %s\n", "op", "placement", "splits", "CPU ms", "agree",
           "CPU/ref", "shape / reason");
    for (int i = 0; i < n_rows; i++) {
        struct op_row *r = &rows[i];
        struct vkg_perf_refusal *p = &r->pick[d];
        const char *label = vkg_demo_label(&r->shape);
        char shape[160];
        if (!p->found) {
            struct vkg_vulkan_device_info info;
            vkg_vulkan_device_get_info(dev, &info);
            if (p->found_large) {
                vkg_perf_shape_str(&p->large, shape, sizeof shape);
                printf("%-24s %-9s %6s %9s  %-5s %9s  no refused shape up to 64 MB; refused at "
                       "%s (%.0f MB, not run): %s\n",
                       label, "-", "-", "-", "-", "-", shape, vkg_perf_bytes(&p->large) / 1048576.0,
                       p->large_reason);
            } else {
                printf("%-24s %-9s %6s %9s  %-5s %9s  no shape tried is refused (limits: storage "
                       "buffer range %llu B, shared memory %u B)%s%s\n",
                       label, "-", "-", "-", "-", "-",
                       (unsigned long long)info.max_storage_buffer_range, info.max_shared_memory,
                       p->error[0] ? "; " : "", p->error);
            }
            continue;
        }
        struct vkg_demo_result *rr = &r->rres[d];
        vkg_perf_shape_str(&p->shape, shape, sizeof shape);
        if (!r->refused_ran[d] || rr->status != VKG_STATUS_OK) {
            printf("%-24s %-9s %6s %9s  %-5s %9s  %s: %s (run failed: %s)\n", label,
                   rr->placement[0] ? rr->placement : "-", "-", "-", "??", "-", shape, p->reason,
                   rr->error);
            continue;
        }
        printf("%-24s %-9s %6d %9.3f  %-5s %9.2e  %s\n", label, rr->placement, rr->n_splits, rr->ms,
               agree_str(r->r_rel_ref[d]), r->r_rel_ref[d], shape);
        printf("%-24s %-9s %6s %9s  %-5s %9s  reason: %s\n", "", "", "", "", "", "",
               rr->reason[0] ? rr->reason : p->reason);
    }
}

/* Verdict lines for device d; returns true for OK. */
static bool print_verdict(struct op_row *rows, int n_rows, int d, const char *vk_name,
                          bool refused) {
    char fell[512] = "", wrong[512] = "", unk[512] = "", odd[512] = "";
    for (int i = 0; i < n_rows; i++) {
        struct op_row *r = &rows[i];
        struct vkg_demo_result *v = &r->vk[d];
        const char *label = vkg_demo_label(&r->shape);
        char *dst;
        bool compared = r->data_ok && r->cpu.status == VKG_STATUS_OK && v->status == VKG_STATUS_OK;
        if (compared && strcmp(v->placement, vk_name)) {
            size_t l = strlen(fell);
            snprintf(fell + l, sizeof fell - l, "%s%s (%s)", l ? ", " : "", label, v->reason);
        }
        double rels[3] = {r->cpu_rel_ref, r->vk_rel_ref[d], r->rel_between[d]};
        bool finite = compared && isfinite(rels[0]) && isfinite(rels[1]) && isfinite(rels[2]);
        dst =
            !finite ? unk
            : (rels[0] >= VKG_DEMO_AGREE || rels[1] >= VKG_DEMO_AGREE || rels[2] >= VKG_DEMO_AGREE)
                ? wrong
                : NULL;
        if (dst) {
            size_t l = strlen(dst);
            if (dst == wrong)
                snprintf(dst + l, 512 - l, "%s%s (CPU/ref %.2g, GPU/ref %.2g, CPU/GPU %.2g)",
                         l ? ", " : "", label, rels[0], rels[1], rels[2]);
            else
                snprintf(dst + l, 512 - l, "%s%s (%s)", l ? ", " : "", label,
                         !r->data_ok                      ? r->data_error
                         : r->cpu.status != VKG_STATUS_OK ? r->cpu.error
                         : v->status != VKG_STATUS_OK     ? v->error
                                                          : "non-finite gradient");
        }
        if (refused && r->pick[d].found && r->refused_ran[d]) {
            struct vkg_demo_result *rr = &r->rres[d];
            size_t l = strlen(odd);
            if (rr->status != VKG_STATUS_OK || !isfinite(r->r_rel_ref[d]))
                snprintf(unk + strlen(unk), sizeof unk - strlen(unk), "%srefused %s (%s)",
                         unk[0] ? ", " : "", label,
                         rr->status != VKG_STATUS_OK ? rr->error : "non-finite gradient");
            else if (r->r_rel_ref[d] >= VKG_DEMO_AGREE)
                snprintf(wrong + strlen(wrong), sizeof wrong - strlen(wrong),
                         "%srefused %s on the CPU (vs ref %.2g)", wrong[0] ? ", " : "", label,
                         r->r_rel_ref[d]);
            else if (!strcmp(rr->placement, vk_name))
                snprintf(odd + l, sizeof odd - l, "%s%s", l ? ", " : "", label);
        }
    }
    printf("\n");
    if (!fell[0] && !wrong[0] && !unk[0]) {
        printf("OK: all %d backward ops ran on %s and matched the CPU and the float64 reference "
               "(max |diff|/RMS < %.0e).\n",
               n_rows, vk_name, VKG_DEMO_AGREE);
        if (odd[0])
            printf("note: supports_op refused a shape of %s but the scheduler placed it on %s.\n",
                   odd, vk_name);
        return true;
    }
    if (fell[0])
        printf("FELL BACK: %s ran on the CPU -- %s\n", fell, "supports_op refused the shape.");
    if (wrong[0]) printf("MISMATCH: %s.\n", wrong);
    if (unk[0]) printf("NOT COMPARED: %s.\n", unk);
    return false;
}

/* ---- main -------------------------------------------------------------------- */

int vkg_cmd_demo(const char *self, int argc, char **argv) {
    struct demo_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    if (!o.child && o.compile_pass != VKG_COMPILE_PASS_OFF) {
        /* Before any Vulkan call of this process (compile_pass.h). */
        char dev_s[16];
        char *args[8] = {"demo", "--compile-pass-child"};
        int n = 2;
        if (o.compile_pass == VKG_COMPILE_PASS_ON) args[n++] = "--compile-pass";
        if (o.device >= 0) {
            snprintf(dev_s, sizeof dev_s, "%d", o.device);
            args[n++] = "--device";
            args[n++] = dev_s;
        }
        args[n] = NULL;
        vkg_compile_pass_run(self, "vkgrad demo", args);
    }

    struct vkg_backend *cpu = vkg_backend_cpu_init();
    if (!cpu) {
        fprintf(stderr, "vkgrad demo: CPU backend: %s\n", vkg_last_error(NULL));
        return 1;
    }
    if (o.cpu_threads > 0) vkg_backend_cpu_set_n_threads(cpu, o.cpu_threads);

    int n_dev_all = vkg_vulkan_device_count();
    int devs[MAX_DEVICES], n_dev = 0;
    if (o.device >= 0) {
        if (o.device >= n_dev_all) {
            fprintf(stderr, "vkgrad demo: no Vulkan device %d (%d present)\n", o.device, n_dev_all);
            vkg_backend_free(cpu);
            return 2;
        }
        devs[n_dev++] = o.device;
    } else {
        for (int i = 0; i < n_dev_all && n_dev < MAX_DEVICES; i++)
            devs[n_dev++] = i;
    }
    if (o.child && (n_dev = vkg_compile_pass_devices(o.compile_pass, devs, n_dev)) == 0) {
        vkg_backend_free(cpu);
        return VKG_COMPILE_PASS_NOTHING;
    }
    struct vkg_backend *vk[MAX_DEVICES] = {0};
    char vk_names[MAX_DEVICES][64];

    printf("Backward ops on the GPU: CPU vs Vulkan (median of %d timed reps after a warm-up)\n",
           o.reps);
    printf("CPU: %s\n", vkg_backend_description(cpu));
    if (n_dev == 0)
        printf("No Vulkan device%s -- printing the CPU column only.\n",
               vkg_vulkan_available() ? " found" : " (Vulkan not available)");
    for (int d = 0; d < n_dev; d++) {
        vk[d] = vkg_backend_vulkan_init(devs[d]);
        snprintf(vk_names[d], sizeof vk_names[d], "%s",
                 vk[d] ? vkg_backend_name(vk[d]) : "Vulkan?");
        printf("Vulkan%d: %s%s%s\n", devs[d], vkg_vulkan_device_description(devs[d]),
               vk[d] ? "" : " -- init failed: ", vk[d] ? "" : vkg_last_error(NULL));
        print_device_info(devs[d]);
    }
    printf("\n");

    static struct op_row rows[VKG_DEMO_N_OPS];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < VKG_DEMO_N_OPS; i++) {
        struct op_row *r = &rows[i];
        r->shape = vkg_demo_shape(i);
        const char *label = vkg_demo_label(&r->shape);
        r->data_ok = vkg_demo_data_init(&r->data, &r->shape, VKG_DEMO_SEED, r->data_error,
                                        sizeof r->data_error);
        if (!r->data_ok) {
            printf("  %-24s cannot build: %s\n", label, r->data_error);
            continue;
        }
        struct vkg_backend *cb[1] = {cpu};
        vkg_demo_run(cb, 1, &r->data, o.reps, &r->cpu);
        r->cpu_rel_ref = vkg_demo_rel_vs_ref(&r->data, &r->cpu, &r->cpu_bound);
        printf("  %-24s %-9s %9.3f ms  vs ref %.2g%s%s\n", label,
               r->cpu.placement[0] ? r->cpu.placement : "CPU", r->cpu.ms, r->cpu_rel_ref,
               r->cpu.status ? "  error: " : "", r->cpu.status ? r->cpu.error : "");
        for (int d = 0; d < n_dev; d++) {
            if (!vk[d]) {
                r->vk[d].status = VKG_STATUS_BACKEND_ERROR;
                snprintf(r->vk[d].error, sizeof r->vk[d].error, "device init failed");
                r->vk_rel_ref[d] = r->rel_between[d] = NAN;
                continue;
            }
            struct vkg_backend *vb[1] = {vk[d]};
            vkg_demo_run(vb, 1, &r->data, o.reps, &r->vk[d]);
            r->vk_rel_ref[d] = vkg_demo_rel_vs_ref(&r->data, &r->vk[d], &r->vk_bound[d]);
            r->rel_between[d] = vkg_demo_rel_between(&r->data, &r->cpu, &r->vk[d]);
            printf("  %-24s %-9s %9.3f ms  vs ref %.2g  vs CPU %.2g%s%s\n", label,
                   r->vk[d].placement[0] ? r->vk[d].placement : vk_names[d], r->vk[d].ms,
                   r->vk_rel_ref[d], r->rel_between[d], r->vk[d].status ? "  error: " : "",
                   r->vk[d].status ? r->vk[d].error : "");
            if (!o.refused) continue;
            vkg_perf_find_refused(vk[d], i, REFUSED_MAX_BYTES, &r->pick[d]);
            if (r->pick[d].found) {
                char msg[256];
                if (vkg_demo_data_init(&r->rdata[d], &r->pick[d].shape, VKG_DEMO_SEED, msg,
                                       sizeof msg)) {
                    r->refused_ran[d] = true;
                    vkg_demo_run(vb, 1, &r->rdata[d], o.reps < 3 ? o.reps : 3, &r->rres[d]);
                    r->r_rel_ref[d] = vkg_demo_rel_vs_ref(&r->rdata[d], &r->rres[d], NULL);
                } else {
                    r->refused_ran[d] = true;
                    r->rres[d].status = VKG_STATUS_OUT_OF_MEMORY;
                    snprintf(r->rres[d].error, sizeof r->rres[d].error, "%s", msg);
                }
                fflush(stdout);
            }
        }
        fflush(stdout);
    }

    bool all_ok = n_dev > 0;
    if (n_dev == 0) {
        printf("\n=== CPU column ===\n");
        printf("%-24s %-9s %6s %9s  %-5s %9s %7s\n", "op", "placement", "splits", "CPU ms", "agree",
               "CPU/ref", "bound");
        bool cpu_ok = true;
        for (int i = 0; i < VKG_DEMO_N_OPS; i++) {
            struct op_row *r = &rows[i];
            printf("%-24s %-9s %6d %9.3f  %-5s %9.2e %7.3f\n", vkg_demo_label(&r->shape),
                   r->cpu.placement, r->cpu.n_splits, r->cpu.ms, agree_str(r->cpu_rel_ref),
                   r->cpu_rel_ref, r->cpu_bound);
            cpu_ok = cpu_ok && isfinite(r->cpu_rel_ref) && r->cpu_rel_ref < VKG_DEMO_AGREE;
        }
        printf("\nNOT COMPARED: no Vulkan device -- the CPU %s the float64 reference.\n",
               cpu_ok ? "matches" : "does NOT match");
    }
    for (int d = 0; d < n_dev; d++) {
        print_summary(rows, VKG_DEMO_N_OPS, d, devs[d], vk_names[d], o.refused);
        all_ok = print_verdict(rows, VKG_DEMO_N_OPS, d, vk_names[d], o.refused) && all_ok;
        for (int i = 0; i < VKG_DEMO_N_OPS && o.profile; i++)
            print_profile(vkg_demo_label(&rows[i].shape), vk_names[d], &rows[i].vk[d]);
    }
    for (int i = 0; i < VKG_DEMO_N_OPS && o.profile && n_dev == 0; i++)
        print_profile(vkg_demo_label(&rows[i].shape), "CPU", &rows[i].cpu);

    for (int i = 0; i < VKG_DEMO_N_OPS; i++) {
        struct op_row *r = &rows[i];
        vkg_demo_data_free(&r->data);
        vkg_demo_result_free(&r->cpu);
        for (int d = 0; d < n_dev; d++) {
            vkg_demo_result_free(&r->vk[d]);
            vkg_demo_result_free(&r->rres[d]);
            vkg_demo_data_free(&r->rdata[d]);
        }
    }
    for (int d = 0; d < n_dev; d++)
        vkg_backend_free(vk[d]);
    vkg_backend_free(cpu);
    return all_ok || o.child ? 0 : 1;
}
