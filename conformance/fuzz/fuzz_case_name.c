/* conformance/fuzz/fuzz_case_name.c — a case name as --case takes it, with a
 * --param setting after the first newline; a parsed name must parse again. */
#include <stdlib.h>
#include <string.h>

#include "case.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = fuzz_string(data, size);
    char *setting = strchr(s, '\n');
    if (setting) *setting++ = 0;
    struct conf_case c;
    char msg[256];
    if (conf_case_parse(&c, s, msg, sizeof msg)) {
        if (setting) conf_case_set(&c, setting, msg, sizeof msg);
        struct conf_case again;
        if (!conf_case_parse(&again, c.name, msg, sizeof msg)) abort();
    }
    free(s);
    return 0;
}
