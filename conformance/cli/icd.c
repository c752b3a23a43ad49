/* conformance/cli/icd.c — see icd.h. The manifest is read with json-c, as
 * strictly as the loader needs it: an object with "ICD": {"library_path":
 * string}. A relative path with a '/' is resolved against the manifest's
 * folder, as the loader does. */
#include "icd.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool vkg_cli_icd_select(const char *path, char *msg, size_t msg_size) {
    if (!is_file(path) || access(path, R_OK) != 0) {
        snprintf(msg, msg_size, "%s: not a readable file", path);
        return false;
    }
    json_object *o = json_object_from_file(path);
    json_object *icd = NULL, *lib = NULL;
    if (!o || !json_object_object_get_ex(o, "ICD", &icd) ||
        !json_object_is_type(icd, json_type_object) ||
        !json_object_object_get_ex(icd, "library_path", &lib) ||
        !json_object_is_type(lib, json_type_string)) {
        snprintf(msg, msg_size, "%s: not a Vulkan ICD manifest (no \"ICD\": {\"library_path\": ...})",
                 path);
        json_object_put(o);
        return false;
    }
    const char *lp = json_object_get_string(lib);
    char full[4096];
    bool ok = true;
    if (!strchr(lp, '/')) {
        snprintf(msg, msg_size,
                 "%s: library_path \"%s\" is a bare name: the loader would search the system's "
                 "library path and could load the installed driver; give it as a path",
                 path, lp);
        ok = false;
    } else {
        if (lp[0] == '/') {
            snprintf(full, sizeof full, "%s", lp);
        } else {
            const char *slash = strrchr(path, '/');
            const int dir_len = slash ? (int)(slash - path) : 1;
            snprintf(full, sizeof full, "%.*s/%s", dir_len, slash ? path : ".", lp);
        }
        if (!is_file(full)) {
            snprintf(msg, msg_size, "%s: its library %s does not exist", path, full);
            ok = false;
        }
    }
    json_object_put(o);
    if (!ok) return false;
    if (setenv("VK_DRIVER_FILES", path, 1) != 0 || setenv("VK_ICD_FILENAMES", path, 1) != 0) {
        snprintf(msg, msg_size, "setenv: %s", strerror(errno));
        return false;
    }
    return true;
}

int vkg_cli_icd_take(const char *cmd, int argc, char **argv) {
    int k = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--icd")) {
            argv[k++] = argv[i];
            continue;
        }
        char msg[4600];
        if (i + 1 >= argc) {
            fprintf(stderr, "vkgrad %s: --icd needs a file (a Vulkan ICD manifest)\n", cmd);
            return -1;
        }
        if (!vkg_cli_icd_select(argv[++i], msg, sizeof msg)) {
            fprintf(stderr, "vkgrad %s: --icd %s\n", cmd, msg);
            return -1;
        }
    }
    argv[k] = NULL;
    return k;
}
