/* conformance/fuzz/fuzz_deqp_files.c — deqp-runner's files as vkgrad reads
 * them: the input loaded as a baseline and as a flakes / skips list, each
 * then asked about a result. */
#include <string.h>

#include "deqp_formats.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file(data, size);
    char msg[512];
    struct conf_result r;
    memset(&r, 0, sizeof r);
    strcpy(r.case_name, "add.contig.ne0=7.ne1=3");
    strcpy(r.backend, "Vulkan0");
    r.status = CONF_FAIL;
    struct conf_deqp_baseline b = {0};
    if (conf_deqp_baseline_load(path, &b, msg, sizeof msg)) (void)conf_deqp_status_of(&r, &b);
    conf_deqp_baseline_free(&b);
    struct conf_deqp_list l = {0};
    if (conf_deqp_list_load(path, &l, msg, sizeof msg))
        (void)conf_deqp_list_match(&l, "Vulkan0.add.contig.ne0=7.ne1=3");
    conf_deqp_list_free(&l);
    return 0;
}
