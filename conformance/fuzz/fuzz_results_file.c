/* conformance/fuzz/fuzz_results_file.c — a whole results file, as `vkgrad
 * compare` loads a baseline (incomplete files read too, then compared with
 * themselves). */
#include <stdlib.h>

#include "compare.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    struct conf_result *v = NULL;
    struct conf_run_meta m;
    int n = 0;
    char msg[512];
    if (conf_results_load_ex(path, true, &m, &v, &n, msg, sizeof msg)) {
        struct conf_compare_options o;
        conf_compare_options_default(&o);
        struct conf_transition *ts = NULL;
        int nt = 0;
        if (conf_compare(v, n, v, n, NULL, 0, &o, &ts, &nt, msg, sizeof msg) > 0) abort();
        free(ts);
    }
    free(v);
    return 0;
}
