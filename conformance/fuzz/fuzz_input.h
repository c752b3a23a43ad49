/* conformance/fuzz/fuzz_input.h — what the fuzz targets share: the input as
 * a NUL-terminated string, or as the contents of a scratch file for the
 * readers that take a path. */
#ifndef VKGRAD_FUZZ_INPUT_H
#define VKGRAD_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* A malloc'd copy of data with a NUL appended (free it). */
char *fuzz_string(const uint8_t *data, size_t size);
/* The path of a scratch file now holding exactly data (one per process). */
const char *fuzz_file(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
