/* PLACEHOLDER — replaced by the real command. */
#include <stdio.h>
#include "../conformance/commands.h"
int vkg_cmd_conform(int argc, char **argv) {
    (void)argc; (void)argv;
    fprintf(stderr, "vkgrad conform: not built yet\n");
    return 2;
}
