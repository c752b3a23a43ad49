/* conformance/harness/case.h — the case model of the conformance harness.
 *
 * A case is one family (an op, or a training graph), an optional variant (an
 * input layout or a scan form) and integer parameters. Its name spells all of
 * them, hierarchically, in the family's declared parameter order:
 *
 *     ssm_scan_back.mamba2.d_state=128.head_dim=64.n_head=16.n_group=1.n_tok=64.n_seqs=1
 *
 * Names parse back into cases (conf_case_parse), so any case, including one
 * that no table lists, can be rerun by name; missing parameters take the
 * family's defaults and every value is range-checked with a clear message.
 * Options (word-valued parameters such as the scans' ids=shared and dt=high)
 * appear in a name only when they differ from their default:
 *
 *     ssm_scan.mamba2.d_state=16.head_dim=4.n_head=2.n_group=1.n_tok=5.n_seqs=3.n_slots=2.ids=shared
 *
 * Families are described once (struct conf_family, case.c); the sweeps that
 * instantiate them are tables in cases_table.c. Inputs are seeded with a
 * documented PRNG (splitmix64 over seed ^ FNV-1a(case name, input name)).
 */
#ifndef VKGRAD_CONF_CASE_H
#define VKGRAD_CONF_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONF_MAX_PARAMS 10
#define CONF_NAME_MAX   256
#define CONF_MSG_MAX    512

struct vkg_vulkan_device_info;

/* One parameter of a family: name, default, accepted range. A parameter with
 * words is an option: its value is an index into the NULL-terminated words
 * (range [0, number of words)), written and parsed as the word ("ids=shared"),
 * and left out of the canonical name at its default, so the names of cases
 * that predate the option do not change. */
struct conf_param_spec {
    const char *key;
    int64_t def, min, max;
    const char *const *words; /* NULL: an integer parameter */
};

struct conf_case;

struct conf_family {
    const char *name;                     /* first name segment: "ssm_scan_back", "train_dense" */
    const char *const *variants;          /* NULL-terminated; NULL -> the family has none */
    const struct conf_param_spec *params; /* terminated by key == NULL */
    int op;                               /* enum vkg_op of the node under test */
    bool graph; /* a training graph (reference composed of several kernels) */
    /* Cross-parameter checks beyond the ranges; false + message on error. */
    bool (*check)(const struct conf_case *c, char *msg, size_t msg_size);
    /* Driver canaries (canary.h): their enum conf_canary_kind, and the
     * pitfall each guards in a line; 0 and NULL for op and graph cases. */
    int canary;
    const char *guards;
};

struct conf_case {
    const struct conf_family *family;
    int variant;                /* index into family->variants, or -1 */
    int64_t p[CONF_MAX_PARAMS]; /* values in the family's parameter order */
    char name[CONF_NAME_MAX];
};

/* The registry of every family (case.c). */
extern const struct conf_family *const conf_families[];
const struct conf_family *conf_family_find(const char *name);
int conf_family_n_params(const struct conf_family *f);

/* Value of parameter key (must exist in the family; asserts otherwise —
 * keys are program constants, never user input). For an option, the index
 * of its word. */
int64_t conf_case_get(const struct conf_case *c, const char *key);
/* The word of option key (asserts it is one). */
const char *conf_case_word(const struct conf_case *c, const char *key);
const char *conf_case_variant(const struct conf_case *c); /* "" when none */

/* Build a case from family, variant (NULL/"" for none) and a list of
 * "key=value" settings over the defaults; validates and names it. */
bool conf_case_make(struct conf_case *c, const char *family, const char *variant,
                    const char *const *settings, int n_settings, char *msg, size_t msg_size);
/* Parse a name (parameters in any order, missing ones defaulted). On error
 * returns false with a message naming the bad segment. */
bool conf_case_parse(struct conf_case *c, const char *name, char *msg, size_t msg_size);
/* Override one parameter ("key=value") and re-validate/rename. */
bool conf_case_set(struct conf_case *c, const char *setting, char *msg, size_t msg_size);

/* Shell-style glob: '*' any run, '?' one char. */
bool conf_glob_match(const char *pattern, const char *s);

/* ---- seeded inputs ------------------------------------------------------- */
struct conf_rng {
    uint64_t state;
};
uint64_t conf_hash_str(uint64_t h, const char *s); /* FNV-1a 64 */
/* State = seed ^ FNV-1a(case name) ^ FNV-1a(stream) mixed once. */
void conf_rng_init(struct conf_rng *r, uint64_t seed, const char *case_name, const char *stream);
uint64_t conf_rng_next(struct conf_rng *r); /* splitmix64 */
/* Uniform in [lo, hi): 53 random bits rounded once to fp32. */
float conf_rng_uniform(struct conf_rng *r, float lo, float hi);

/* ---- expected placement --------------------------------------------------
 * Whether the node under test must run on a Vulkan device with this info.
 * Computed from the device limits alone (never from supports_op), so that a
 * backend refusing what it should take, or taking what it cannot, is caught.
 * On false, reason names the limit. */
bool conf_expect_on_vulkan(const struct conf_case *c, const struct vkg_vulkan_device_info *info,
                           char *reason, size_t reason_size);

#endif
