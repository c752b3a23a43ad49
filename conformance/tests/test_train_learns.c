/* conformance/tests/test_train_learns.c — `vkgrad train` learns on a Vulkan
 * device: llama at the tiny size, 40 steps of seed 1 on each Vulkan device
 * (lavapipe in CI), then the validation loss over 8 batches.
 *
 * The level: below 2.9 nats. A uniform guess over the 128 tokens costs
 * ln 128 = 4.85; predicting every character from the training text's
 * character frequencies alone costs 3.31 on these validation batches; a
 * bigram table 2.57. So < 2.9 means the model uses the context. (The CPU
 * backend reaches 2.74 at step 40, 2.71 at step 50.)
 *
 * The time: the whole run (building, 40 steps, the evaluation) must take
 * under a minute of the machine. On an idle 2-core machine that is its wall
 * time; on a machine shared with other work the wall time also counts the
 * others, so the test fails on time only when the run's own CPU time over
 * the cores it could use is a minute or more, and prints both. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "trainer.h"
#include "vkgrad/vkgrad.h"

#define STEPS    40
#define LEVEL    2.9
#define MINUTE_S 60.0

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void train_run__llama_validation_loss_falls_within_a_minute(void **state) {
    const int device = (int)(intptr_t)*state;
    char msg[1024];
    struct train_corpus corpus;
    if (!train_corpus_load(&corpus, NULL, msg, sizeof msg)) fail_msg("%s", msg);
    struct train_config cfg;
    assert_true(train_config_preset(&cfg, "llama", "tiny", msg, sizeof msg));
    struct train_opts opts;
    train_opts_default(&opts, &cfg);
    struct vkg_backend *gpu = vkg_backend_vulkan_init(device);
    if (!gpu) fail_msg("Vulkan%d: %s", device, vkg_last_error(NULL));
    const double w0 = wall_s(), c0 = cpu_s();
    struct trainer *tr = trainer_new(&cfg, &opts, &corpus, gpu, msg, sizeof msg);
    if (!tr) fail_msg("%s", msg);
    struct train_placement pl;
    trainer_placement(tr, &pl);
    float loss = 0, val = 0;
    for (int s = 0; s < STEPS; s++)
        if (trainer_step(tr, &loss)) fail_msg("step %d: %s", s + 1, vkg_last_error(NULL));
    if (trainer_eval(tr, &val)) fail_msg("validation: %s", vkg_last_error(NULL));
    const double wall = wall_s() - w0, cpu = cpu_s() - c0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    printf("# llama tiny on %s: %d steps, validation loss %.4f (level %.2f, uniform %.2f); "
           "%.1f s wall, %.1f s CPU on %ld cores; %d of %d nodes on the CPU\n",
           vkg_backend_name(gpu), STEPS, (double)val, LEVEL, log(128.0), wall, cpu, cores, pl.n_cpu,
           pl.n_nodes);
    trainer_free(tr);
    vkg_backend_free(gpu);
    train_corpus_free(&corpus);
    if (!(val < LEVEL)) fail_msg("validation loss %.4f is not below %.2f", (double)val, LEVEL);
    if (wall >= MINUTE_S && cpu / (double)cores >= MINUTE_S)
        fail_msg("the run took %.1f s (%.1f s of CPU on %ld cores): not under a minute", wall, cpu,
                 cores);
}

int main(void) {
    static char names[16][96];
    struct CMUnitTest tests[16];
    const int n = vkg_vulkan_device_count() < 16 ? vkg_vulkan_device_count() : 16;
    if (n == 0) {
        const char *req = getenv("VKGRAD_REQUIRE_VULKAN");
        if (req && !strcmp(req, "1")) {
            fprintf(stderr, "no Vulkan device and VKGRAD_REQUIRE_VULKAN=1\n");
            return 1;
        }
        printf("1..0 # SKIP no Vulkan device (%s)\n", vkg_last_error(NULL));
        return 0;
    }
    for (int d = 0; d < n; d++) {
        snprintf(names[d], sizeof names[d],
                 "train_run__llama_validation_loss_falls_within_a_minute_on_vulkan%d", d);
        tests[d] =
            (struct CMUnitTest){names[d], train_run__llama_validation_loss_falls_within_a_minute,
                                NULL, NULL, (void *)(intptr_t)d};
    }
    return _cmocka_run_group_tests("train_learns", tests, (size_t)n, NULL, NULL);
}
