/* PLACEHOLDER — replaced by the real command. */
#include <stdio.h>
#include "../conformance/commands.h"
int vkg_cmd_perf(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "vkgrad perf: not built yet\n");
    return 2;
}
