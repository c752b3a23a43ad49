/* conformance/fuzz/fuzz_expectations.c — an expectations file, loaded and
 * matched against a result. */
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    struct conf_expectation *e = NULL;
    int n = 0;
    char msg[512];
    if (conf_expectations_load(path, &e, &n, msg, sizeof msg)) {
        struct conf_result r;
        memset(&r, 0, sizeof r);
        strcpy(r.case_name, "add.contig.ne0=7.ne1=3");
        strcpy(r.backend, "Vulkan0");
        strcpy(r.device, "llvmpipe");
        strcpy(r.driver, "Mesa");
        r.status = CONF_FAIL;
        conf_expectation_match(e, n, &r);
    }
    free(e);
    return 0;
}
