/* conformance/fuzz/fuzz_glob.c — a glob and a name (split at the first
 * newline), matched; a name always matches itself when it has no glob
 * characters. */
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = fuzz_string(data, size);
    char *name = strchr(s, '\n');
    if (name) *name++ = 0;
    conf_glob_match(s, name ? name : s);
    if (!strpbrk(s, "*?[\\") && !conf_glob_match(s, s)) abort();
    free(s);
    return 0;
}
