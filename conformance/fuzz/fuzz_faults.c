/* conformance/fuzz/fuzz_faults.c — a VKG_FAULT specification. */
#include <stdlib.h>

#include "fuzz_input.h"
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = fuzz_string(data, size);
    struct conf_fault f[8];
    char msg[256];
    conf_faults_parse(s, f, 8, msg, sizeof msg);
    free(s);
    return 0;
}
