/* conformance/fuzz/fuzz_result_record.c — one JSON Lines record (a result, a
 * header or a trailer), as the strict readers parse it. */
#include <stdlib.h>

#include "fuzz_input.h"
#include "run_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *line = fuzz_string(data, size);
    char msg[256];
    if (conf_run_is_frame(line)) {
        struct conf_run_meta m = {0};
        if (conf_run_frame_from_json(line, true, &m, msg, sizeof msg))
            conf_run_check_whole(&m, m.trailer_records, msg, sizeof msg);
    } else {
        struct conf_result r;
        if (conf_result_from_json(line, &r, msg, sizeof msg)) {
            char *again = conf_result_to_json(&r); /* what was read writes back */
            if (!again) abort();
            free(again);
        }
    }
    free(line);
    return 0;
}
