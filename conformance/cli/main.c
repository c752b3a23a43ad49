/* conformance/cli/main.c — the `vkgrad` program: a table of subcommands.
 *
 * Each subcommand lives in its own file (see commands.h) and parses its own
 * options; this file only dispatches and prints the overview. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "icd.h"
#include "vkgrad/vkgrad.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    bool takes_icd; /* --icd FILE: the commands that use a Vulkan driver */
};

/* This program's path, for demo and perf, which run it once more before
 * timing (perf/compile_pass.h); NULL when it cannot be found. */
static const char *self_program;

static int cmd_version(int argc, char **argv);
static int cmd_demo(int argc, char **argv) {
    return vkg_cmd_demo(self_program, argc, argv);
}
static int cmd_perf(int argc, char **argv) {
    return vkg_cmd_perf(self_program, argc, argv);
}
static int cmd_conform(int argc, char **argv) {
    return vkg_cmd_conform(self_program, argc, argv);
}

static const struct command commands[] = {
    {"version", cmd_version, "print the vkgrad version", false},
    {"devices", vkg_cmd_devices, "list the Vulkan devices and their limits", true},
    {"demo", cmd_demo, "the four backward ops: CPU vs each Vulkan device, placement and agreement",
     true},
    {"conform", cmd_conform, "run the conformance cases against the float64 reference", true},
    {"compare", vkg_cmd_compare,
     "compare a conformance run with a baseline; exit 1 on a regression", false},
    {"perf", cmd_perf, "benchmark the backward ops per shape; CSV out", true},
    {"train", vkg_cmd_train, "train a Llama or Mamba language model end to end", false},
};

static int cmd_version(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("vkgrad %s\n", vkg_version());
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: vkgrad <command> [options]\n"
               "       vkgrad <command> --help\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\ndevices, demo, conform and perf take --icd FILE: use the Vulkan driver of\n"
               "this ICD manifest (an absolute library_path), in every process they start,\n"
               "instead of the installed ones (ci/fetch-mesa-backports.sh writes one)\n");
}

int main(int argc, char **argv) {
    if (access("/proc/self/exe", X_OK) == 0)
        self_program = "/proc/self/exe";
    else if (argc > 0 && strchr(argv[0], '/'))
        self_program = argv[0];
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) return cmd_version(0, NULL);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        int n = argc - 1;
        if (commands[i].takes_icd && (n = vkg_cli_icd_take(argv[1], n, argv + 1)) < 0) return 2;
        return commands[i].run(n, argv + 1);
    }
    fprintf(stderr, "vkgrad: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
