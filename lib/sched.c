/* lib/sched.c — the scheduler (see vkgrad/sched.h for the contract).
 *
 * Design. vkg_sched_alloc_graph runs numbered passes; each leaves its result
 * in a per-tensor record (struct tinfo) that the harness can query:
 *   1. compute nodes: the first backend (in priority order) whose supports_op
 *      accepts the node; the first refusal's reason is kept, so a fallback
 *      reads "CPU: <why Vulkan0 refused>", and is logged when
 *      VKG_LOG_FALLBACK=1.
 *   2. leaves: stored on the backend of their first consumer in graph order,
 *      so inputs sit where they are used and the common case needs no copy;
 *      a leaf that a node updates in place (an optimizer step's a, m, v) is
 *      stored where that node runs, so the update lands in the leaf's own
 *      storage and persists from one compute to the next. Before placing,
 *      the graph is checked: one writer per leaf, and no node after the
 *      update reads the leaf other than through the updating node.
 *   3. views: no computation; they live wherever their storage root lives.
 *   4. splits: maximal runs of consecutive compute nodes on one backend. For
 *      each split, every source whose storage root lives on another backend
 *      gets a shadow root on the split's backend; the split runs on clones of
 *      its nodes whose sources point at the shadows, and the shadows are
 *      refreshed (copied) before the split runs on every compute.
 *   5. allocation: one buffer per storage root (and per shadow), optionally
 *      with guard bytes on both sides for the harness.
 * Backends address storage only through tensor->buffer/offset/data, never
 * through view_src, which is what makes the clone-and-redirect scheme work. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_impl.h"
#include "core_impl.h"
#include "testing.h"
#include "vkgrad/sched.h"

#define REASON_MAX 200 /* reasons longer than this are cut: backends keep theirs to one line */
#define GUARD_BYTE 0xA5u

struct tinfo {
    const struct vkg_tensor *key;
    int backend; /* index into sched->backends, -1 unplaced */
    char reason[REASON_MAX];
    double time_us; /* last compute; < 0 unknown */
    bool time_gpu;
    struct vkg_buffer *buf; /* for storage roots we allocated */
    /* storage roots updated in place: the updating node and its index in
     * sched->compute (pass 1b) */
    const struct vkg_tensor *writer;
    int writer_pos;
};

struct shadow {
    struct vkg_tensor *root; /* foreign storage root */
    int backend;             /* where the shadow lives */
    struct vkg_buffer *buf;
};

struct split {
    int backend;
    int first, n;               /* range in sched->compute[] */
    struct vkg_tensor **clones; /* n pointers into clone storage */
    int *copy_shadows;          /* indices into sched->shadows refreshed before the run */
    int n_copies;
};

struct vkg_sched {
    struct vkg_sched *next_live; /* the registry of live schedulers */
    struct vkg_backend **backends;
    int n_backends;
    bool owns_cpu; /* CPU appended by us: freed with the scheduler */
    size_t guard;
    bool profiling; /* measure per-node times (vkg_sched_set_profiling) */

    struct vkg_graph *graph;
    /* open-addressing map tensor -> tinfo */
    struct tinfo *map;
    size_t map_cap, map_n;

    struct vkg_tensor **compute; /* compute nodes (no views) in graph order */
    int n_compute;
    struct vkg_tensor **roots; /* storage roots we allocated */
    int n_roots, cap_roots;
    struct shadow *shadows;
    int n_shadows, cap_shadows;
    struct split *splits;
    int n_splits;
    struct vkg_tensor *clone_store; /* n_compute + shadow views */
    struct vkg_tensor *shadow_views;
    int n_shadow_views, cap_shadow_views;
    /* Per-compute scratch, sized at alloc so computing allocates nothing:
     * node times of the largest split, and a host copy for shadows. */
    double *split_us;
    void *copy_tmp;
    size_t copy_tmp_size;
};

/* ---- tensor map ------------------------------------------------------------ */

static size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static bool map_grow(struct vkg_sched *s) {
    size_t cap = s->map_cap ? s->map_cap * 2 : 256;
    struct tinfo *m = calloc(cap, sizeof *m);
    if (!m) return false;
    for (size_t i = 0; i < s->map_cap; i++) {
        if (!s->map[i].key) continue;
        size_t j = hash_ptr(s->map[i].key) & (cap - 1);
        while (m[j].key)
            j = (j + 1) & (cap - 1);
        m[j] = s->map[i];
    }
    free(s->map);
    s->map = m;
    s->map_cap = cap;
    return true;
}

static struct tinfo *map_find(const struct vkg_sched *s, const struct vkg_tensor *t) {
    if (!s->map_cap || !t) return NULL;
    size_t j = hash_ptr(t) & (s->map_cap - 1);
    while (s->map[j].key) {
        if (s->map[j].key == t) return &s->map[j];
        j = (j + 1) & (s->map_cap - 1);
    }
    return NULL;
}

static struct tinfo *map_get(struct vkg_sched *s, const struct vkg_tensor *t) {
    struct tinfo *e = map_find(s, t);
    if (e) return e;
    if ((s->map_n + 1) * 2 > s->map_cap && !map_grow(s)) return NULL;
    size_t j = hash_ptr(t) & (s->map_cap - 1);
    while (s->map[j].key)
        j = (j + 1) & (s->map_cap - 1);
    e = &s->map[j];
    memset(e, 0, sizeof *e);
    e->key = t;
    e->backend = -1;
    e->time_us = -1;
    s->map_n++;
    return e;
}

/* ---- lifecycle ------------------------------------------------------------- */

/* ---- lifetimes ---------------------------------------------------------------
 * A scheduler points into the tensors of the graph it allocated (its map's
 * keys, and each tensor's buffer field points at its storage). Contexts may be
 * freed before the scheduler, so live schedulers sit in a registry that
 * vkg_free consults (vkg_sched_forget_context). */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vkg_sched *live_head;

static void live_add(struct vkg_sched *s) {
    pthread_mutex_lock(&live_lock);
    s->next_live = live_head;
    live_head = s;
    pthread_mutex_unlock(&live_lock);
}

static void live_remove(struct vkg_sched *s) {
    pthread_mutex_lock(&live_lock);
    for (struct vkg_sched **p = &live_head; *p; p = &(*p)->next_live)
        if (*p == s) {
            *p = s->next_live;
            break;
        }
    pthread_mutex_unlock(&live_lock);
}

static void sched_release(struct vkg_sched *s, const struct vkg_context *dying);

void vkg_sched_forget_context(const struct vkg_context *ctx) {
    pthread_mutex_lock(&live_lock);
    for (struct vkg_sched *s = live_head; s; s = s->next_live) {
        bool holds = false;
        for (size_t i = 0; i < s->map_cap && !holds; i++)
            holds = s->map[i].key && vkg_ctx_owns_tensor(ctx, s->map[i].key);
        if (holds) sched_release(s, ctx);
    }
    pthread_mutex_unlock(&live_lock);
}

struct vkg_sched *vkg_sched_new(struct vkg_backend **backends, int n_backends) {
    if (n_backends < 0 || (n_backends > 0 && !backends)) {
        vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "sched_new: n_backends = %d with %s backends",
                  n_backends, backends ? "a list of" : "no");
        return NULL;
    }
    bool has_cpu = false;
    for (int i = 0; i < n_backends; i++) {
        if (!backends[i]) {
            vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "sched_new: backend %d is NULL", i);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (backends[j] == backends[i]) {
                vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                          "sched_new: backend %s is listed twice", vkg_backend_name(backends[i]));
                return NULL;
            }
        if (vkg_backend_is_cpu(backends[i])) has_cpu = true;
    }
    struct vkg_sched *s = calloc(1, sizeof *s);
    if (!s) goto oom;
    s->backends = calloc((size_t)n_backends + 1, sizeof *s->backends);
    if (!s->backends) goto oom;
    for (int i = 0; i < n_backends; i++)
        s->backends[i] = backends[i];
    s->n_backends = n_backends;
    if (!has_cpu) {
        struct vkg_backend *cpu = vkg_backend_cpu_init();
        if (!cpu) goto error;
        s->backends[s->n_backends++] = cpu;
        s->owns_cpu = true;
    }
    live_add(s);
    return s;
oom:
    vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "sched_new: out of memory");
error:
    vkg_sched_free(s);
    return NULL;
}

/* Drop everything alloc made and detach the graph's tensors from our buffers,
 * so that no tensor keeps a pointer to freed storage; the tensors of a dying
 * context (being freed: NULL for none) are left untouched. */
static void sched_release(struct vkg_sched *s, const struct vkg_context *dying) {
    for (size_t i = 0; i < s->map_cap; i++) {
        struct tinfo *e = &s->map[i];
        if (!e->key) continue;
        struct vkg_tensor *t = (struct vkg_tensor *)e->key;
        if (t->buffer && !(dying && vkg_ctx_owns_tensor(dying, t))) {
            t->buffer = NULL;
            t->offset = 0;
            t->data = NULL;
        }
        if (e->buf) e->buf->backend->iface->buffer_free(e->buf);
    }
    for (int i = 0; i < s->n_shadows; i++)
        if (s->shadows[i].buf) s->shadows[i].buf->backend->iface->buffer_free(s->shadows[i].buf);
    for (int i = 0; i < s->n_splits; i++) {
        free(s->splits[i].clones);
        free(s->splits[i].copy_shadows);
    }
    free(s->map);
    free(s->compute);
    free(s->roots);
    free(s->shadows);
    free(s->splits);
    free(s->clone_store);
    free(s->shadow_views);
    free(s->split_us);
    free(s->copy_tmp);
    s->split_us = NULL;
    s->copy_tmp = NULL;
    s->copy_tmp_size = 0;
    s->map = NULL;
    s->map_cap = s->map_n = 0;
    s->compute = NULL;
    s->roots = NULL;
    s->shadows = NULL;
    s->splits = NULL;
    s->clone_store = NULL;
    s->shadow_views = NULL;
    s->n_compute = s->n_roots = s->cap_roots = s->n_shadows = s->cap_shadows = 0;
    s->n_splits = s->n_shadow_views = s->cap_shadow_views = 0;
    s->graph = NULL;
}

void vkg_sched_free(struct vkg_sched *s) {
    if (!s) return;
    live_remove(s);
    sched_release(s, NULL);
    if (s->owns_cpu && s->n_backends > 0) vkg_backend_free(s->backends[s->n_backends - 1]);
    free(s->backends);
    free(s);
}

enum vkg_status vkg_sched_set_guard_bytes(struct vkg_sched *s, size_t bytes) {
    if (!s) return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "sched_set_guard_bytes: NULL");
    if (bytes % 4 || bytes > (1u << 20))
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                         "sched_set_guard_bytes: %zu is not a multiple of 4 up to 1 MiB", bytes);
    s->guard = bytes;
    return VKG_STATUS_OK;
}

enum vkg_status vkg_sched_set_profiling(struct vkg_sched *s, bool on) {
    if (!s) return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "sched_set_profiling: NULL");
    s->profiling = on;
    return VKG_STATUS_OK;
}

/* ---- alloc ------------------------------------------------------------------ */

static bool push_root(struct vkg_sched *s, struct vkg_tensor *r) {
    if (s->n_roots == s->cap_roots) {
        int cap = s->cap_roots ? s->cap_roots * 2 : 64;
        void *p = realloc(s->roots, (size_t)cap * sizeof *s->roots);
        if (!p) return false;
        s->roots = p;
        s->cap_roots = cap;
    }
    s->roots[s->n_roots++] = r;
    return true;
}

static size_t align_up(size_t x, size_t a) {
    return (x + a - 1) / a * a;
}

static struct vkg_buffer *alloc_storage(struct vkg_sched *s, int b, size_t bytes) {
    struct vkg_backend *be = s->backends[b];
    return be->iface->buffer_alloc(be, align_up(bytes, 4) + 2 * s->guard);
}

/* Fill guard regions of a buffer with the sentinel pattern. */
static enum vkg_status write_guards(struct vkg_sched *s, struct vkg_buffer *buf) {
    if (!s->guard) return VKG_STATUS_OK;
    unsigned char *pat = malloc(s->guard);
    if (!pat) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "sched: out of memory");
    memset(pat, GUARD_BYTE, s->guard);
    enum vkg_status st = VKG_STATUS_OK;
    const struct vkg_backend_iface *ifc = buf->backend->iface;
    size_t tail = buf->size - s->guard;
    if (ifc->buffer_set) {
        st = ifc->buffer_set(buf, 0, pat, s->guard);
        if (!st) st = ifc->buffer_set(buf, tail, pat, s->guard);
    } else if (buf->host) {
        memcpy(buf->host, pat, s->guard);
        memcpy((char *)buf->host + tail, pat, s->guard);
    }
    free(pat);
    return st;
}

static void attach(struct vkg_tensor *t, struct vkg_buffer *buf, size_t offset) {
    t->buffer = buf;
    t->offset = offset;
    t->data = buf->host ? (char *)buf->host + offset : NULL;
}

static bool consumer_backend(struct vkg_sched *s, const struct vkg_tensor *root, int *b) {
    /* First compute node (graph order) reading root directly or through views. */
    for (int i = 0; i < s->n_compute; i++) {
        struct vkg_tensor *n = s->compute[i];
        for (int k = 0; k < VKG_MAX_SRC; k++) {
            if (n->src[k] && vkg_storage_root(n->src[k]) == root) {
                *b = map_find(s, n)->backend;
                return true;
            }
        }
    }
    return false;
}

static int shadow_for(struct vkg_sched *s, struct vkg_tensor *root, int b) {
    for (int i = 0; i < s->n_shadows; i++)
        if (s->shadows[i].root == root && s->shadows[i].backend == b) return i;
    if (s->n_shadows == s->cap_shadows) {
        int cap = s->cap_shadows ? s->cap_shadows * 2 : 16;
        void *p = realloc(s->shadows, (size_t)cap * sizeof *s->shadows);
        if (!p) return -1;
        s->shadows = p;
        s->cap_shadows = cap;
    }
    s->shadows[s->n_shadows] = (struct shadow){.root = root, .backend = b};
    return s->n_shadows++;
}

static struct vkg_tensor *new_shadow_view(struct vkg_sched *s) {
    if (s->n_shadow_views == s->cap_shadow_views) return NULL; /* sized in advance */
    return &s->shadow_views[s->n_shadow_views++];
}

static bool is_compute(const struct vkg_tensor *t) {
    return t->op != VKG_OP_NONE && !vkg_op_is_view(t->op);
}

static enum vkg_status oom(void) {
    return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "sched_alloc_graph: out of memory");
}

/* Pass 0: every tensor of the graph, and its storage root, gets a record;
 * compute nodes are listed in graph order. Storage already owned by a
 * context (normal mode) cannot be moved onto a device. */
static enum vkg_status pass_records(struct vkg_sched *s, struct vkg_graph *graph) {
    const int n_nodes = vkg_graph_n_nodes(graph), n_leafs = vkg_graph_n_leafs(graph);
    s->compute = calloc((size_t)n_nodes + 1, sizeof *s->compute);
    if (!s->compute) return oom();
    for (int pass = 0; pass < 2; pass++) {
        const int n = pass ? n_leafs : n_nodes;
        for (int i = 0; i < n; i++) {
            struct vkg_tensor *t = pass ? vkg_graph_leaf(graph, i) : vkg_graph_node(graph, i);
            if (!map_get(s, t)) return oom();
            struct vkg_tensor *r = vkg_storage_root(t);
            if (r->data && !r->buffer)
                return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                                 "sched_alloc_graph: tensor '%s' already has storage from its "
                                 "context; create graph tensors in a no-alloc context",
                                 r->name);
            if (!map_get(s, r)) return oom();
            if (!pass && is_compute(t)) s->compute[s->n_compute++] = t;
        }
    }
    return VKG_STATUS_OK;
}

/* Pass 1: each compute node goes to the first backend that accepts it; the
 * first refusal is its reason (and logged with VKG_LOG_FALLBACK=1). */
static enum vkg_status pass_place_nodes(struct vkg_sched *s) {
    const char *log_env = getenv("VKG_LOG_FALLBACK");
    const bool log_fallback = log_env && log_env[0] && strcmp(log_env, "0") != 0;
    for (int i = 0; i < s->n_compute; i++) {
        struct vkg_tensor *n = s->compute[i];
        struct tinfo *e = map_find(s, n);
        char first_refusal[REASON_MAX] = "";
        int first_refuser = -1;
        for (int b = 0; b < s->n_backends; b++) {
            char why[REASON_MAX] = "";
            if (vkg_backend_supports_op(s->backends[b], n, why, sizeof why)) {
                e->backend = b;
                break;
            }
            if (first_refuser < 0) {
                first_refuser = b;
                snprintf(first_refusal, sizeof first_refusal, "%s", why[0] ? why : "refused");
            }
        }
        if (e->backend < 0)
            return vkg_error(NULL, VKG_STATUS_UNSUPPORTED,
                             "sched_alloc_graph: no backend runs node '%s' (%s): %s: %s", n->name,
                             vkg_op_name(n->op), vkg_backend_name(s->backends[first_refuser]),
                             first_refusal);
        const char *where = vkg_backend_name(s->backends[e->backend]);
        if (first_refuser >= 0 && first_refuser < e->backend) {
            snprintf(e->reason, sizeof e->reason, "%.40s: %.150s", where, first_refusal);
            if (log_fallback)
                fprintf(stderr, "vkgrad: fallback: node '%s' (%s) runs on %s: %s refused it: %s\n",
                        n->name, vkg_op_name(n->op), where,
                        vkg_backend_name(s->backends[first_refuser]), first_refusal);
        } else {
            snprintf(e->reason, sizeof e->reason, "%s", where);
        }
    }
    return VKG_STATUS_OK;
}

/* True when src reaches its storage through writer (writer itself, or views
 * made from it): a read of the updated value, ordered after the update. */
static bool reads_through(const struct vkg_tensor *src, const struct vkg_tensor *writer) {
    for (; src; src = vkg_op_is_view(src->op) ? src->src[0] : NULL)
        if (src == writer) return true;
    return false;
}

/* Pass 1b: in-place updates are safe to run in graph order. Each updated
 * root records its one writer; then no compute node after the writer may
 * read the root's storage except through the writer (it would see the
 * updated value without depending on the update: a read meant for the old
 * value must come first, one meant for the new value must read the
 * writer's node). Linear in nodes × sources. */
static enum vkg_status pass_check_in_place(struct vkg_sched *s) {
    for (int w = 0; w < s->n_compute; w++) {
        struct vkg_tensor *wn = s->compute[w];
        for (int k = 0; k < VKG_MAX_SRC; k++) {
            if (!wn->src[k] || !vkg_op_writes_src(wn->op, k)) continue;
            struct tinfo *re = map_find(s, vkg_storage_root(wn->src[k]));
            if (re->writer && re->writer != wn)
                return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                                 "sched_alloc_graph: '%s' is updated in place by two nodes "
                                 "('%s' and '%s'); one step per tensor and graph",
                                 re->key->name, re->writer->name, wn->name);
            re->writer = wn;
            re->writer_pos = w;
        }
    }
    for (int j = 0; j < s->n_compute; j++) {
        const struct vkg_tensor *rn = s->compute[j];
        for (int q = 0; q < VKG_MAX_SRC; q++) {
            const struct vkg_tensor *src = rn->src[q];
            if (!src) continue;
            const struct tinfo *re = map_find(s, vkg_storage_root((struct vkg_tensor *)src));
            if (!re->writer || re->writer_pos >= j || reads_through(src, re->writer)) continue;
            return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT,
                             "sched_alloc_graph: node '%s' (%s) reads '%s' after '%s' (%s) "
                             "updated it in place; compute it before the update, or read the "
                             "updating node",
                             rn->name, vkg_op_slug(rn->op), re->key->name, re->writer->name,
                             vkg_op_slug(re->writer->op));
        }
    }
    return VKG_STATUS_OK;
}

/* Pass 2: storage roots that are not computed (leaves) live where their
 * first consumer runs, or where the node that updates them in place runs;
 * unused leaves on the first backend. */
static void pass_place_leaves(struct vkg_sched *s) {
    for (size_t i = 0; i < s->map_cap; i++) {
        struct tinfo *e = &s->map[i];
        if (!e->key) continue;
        struct vkg_tensor *t = (struct vkg_tensor *)e->key;
        if (vkg_storage_root(t) != t || is_compute(t)) continue;
        const struct vkg_tensor *writer = e->writer;
        if (writer) {
            e->backend = map_find(s, writer)->backend;
            snprintf(e->reason, sizeof e->reason, "%s (leaf, updated in place by '%.60s')",
                     vkg_backend_name(s->backends[e->backend]), writer->name);
            continue;
        }
        int b = 0;
        const bool used = consumer_backend(s, t, &b);
        e->backend = b;
        snprintf(e->reason, sizeof e->reason, "%s (%s)", vkg_backend_name(s->backends[b]),
                 used ? "leaf, stored where its first consumer runs" : "leaf, unused");
    }
}

/* Pass 3: views live with their storage root, and give its reason (a node
 * computing in place keeps its own: pass 2 put its root where it runs). */
static void pass_place_views(struct vkg_sched *s) {
    for (size_t i = 0; i < s->map_cap; i++) {
        struct tinfo *e = &s->map[i];
        if (!e->key) continue;
        struct vkg_tensor *t = (struct vkg_tensor *)e->key;
        struct vkg_tensor *r = vkg_storage_root(t);
        if (r == t || is_compute(t)) continue;
        struct tinfo *re = map_find(s, r);
        e->backend = re->backend;
        /* a view answers for its root node (a packed backward result, say) */
        snprintf(e->reason, sizeof e->reason, "%.110s [of its root '%.40s', this being a view]",
                 re->reason, r->name);
    }
}

/* A clone's sources stored on another backend than b read a shadow copy on
 * b instead (listed once per split in its copy list). */
static enum vkg_status redirect_sources(struct vkg_sched *s, struct split *sp,
                                        struct vkg_tensor *c, int b) {
    for (int q = 0; q < VKG_MAX_SRC; q++) {
        struct vkg_tensor *src = c->src[q];
        if (!src) continue;
        struct vkg_tensor *r = vkg_storage_root(src);
        if (map_find(s, r)->backend == b) continue;
        const int sh = shadow_for(s, r, b);
        if (sh < 0) return oom();
        bool listed = false;
        for (int z = 0; z < sp->n_copies; z++)
            listed |= sp->copy_shadows[z] == sh;
        if (!listed) sp->copy_shadows[sp->n_copies++] = sh;
        struct vkg_tensor *v = new_shadow_view(s);
        if (!v) return oom();
        *v = *src;
        v->extra = (void *)(intptr_t)(sh + 1); /* resolved after allocation */
        c->src[q] = v;
    }
    return VKG_STATUS_OK;
}

/* Pass 4: splits (runs of consecutive nodes on one backend), each running
 * on clones of its nodes whose foreign sources are shadows. */
static enum vkg_status pass_splits(struct vkg_sched *s) {
    s->splits = calloc((size_t)s->n_compute + 1, sizeof *s->splits);
    s->clone_store = calloc((size_t)s->n_compute + 1, sizeof *s->clone_store);
    s->cap_shadow_views = s->n_compute * VKG_MAX_SRC + 1;
    s->shadow_views = calloc((size_t)s->cap_shadow_views, sizeof *s->shadow_views);
    if (!s->splits || !s->clone_store || !s->shadow_views) return oom();
    int max_split = 1;
    for (int i = 0; i < s->n_compute;) {
        const int b = map_find(s, s->compute[i])->backend;
        int j = i;
        while (j < s->n_compute && map_find(s, s->compute[j])->backend == b)
            j++;
        struct split *sp = &s->splits[s->n_splits++];
        sp->backend = b;
        sp->first = i;
        sp->n = j - i;
        sp->clones = calloc((size_t)sp->n, sizeof *sp->clones);
        sp->copy_shadows = calloc((size_t)sp->n * VKG_MAX_SRC + 1, sizeof *sp->copy_shadows);
        if (!sp->clones || !sp->copy_shadows) return oom();
        for (int k = i; k < j; k++) {
            struct vkg_tensor *c = &s->clone_store[k];
            *c = *s->compute[k];
            sp->clones[k - i] = c;
            const enum vkg_status st = redirect_sources(s, sp, c, b);
            if (st) return st;
        }
        if (sp->n > max_split) max_split = sp->n;
        i = j;
    }
    s->split_us = calloc((size_t)max_split, sizeof *s->split_us);
    return s->split_us ? VKG_STATUS_OK : oom();
}

/* Pass 5: storage. One buffer per root (with guards), then views, shadows
 * and clones attached to theirs. */
static enum vkg_status pass_storage(struct vkg_sched *s) {
    enum vkg_status st;
    for (size_t i = 0; i < s->map_cap; i++) {
        struct tinfo *e = &s->map[i];
        if (!e->key) continue;
        struct vkg_tensor *t = (struct vkg_tensor *)e->key;
        if (vkg_storage_root(t) != t) continue;
        e->buf = alloc_storage(s, e->backend, vkg_nbytes(t));
        if (!e->buf)
            return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY,
                             "sched_alloc_graph: %s could not allocate %zu bytes for '%s': %s",
                             vkg_backend_name(s->backends[e->backend]), vkg_nbytes(t), t->name,
                             vkg_last_error(NULL));
        attach(t, e->buf, s->guard);
        if ((st = write_guards(s, e->buf))) return st;
        if (!push_root(s, t)) return oom();
    }
    for (size_t i = 0; i < s->map_cap; i++) {
        struct tinfo *e = &s->map[i];
        if (!e->key) continue;
        struct vkg_tensor *t = (struct vkg_tensor *)e->key;
        struct vkg_tensor *r = vkg_storage_root(t);
        if (r != t) attach(t, r->buffer, r->offset + t->view_offs);
    }
    for (int i = 0; i < s->n_shadows; i++) {
        struct shadow *sh = &s->shadows[i];
        sh->buf = alloc_storage(s, sh->backend, vkg_nbytes(sh->root));
        if (!sh->buf)
            return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY,
                             "sched_alloc_graph: %s could not allocate a %zu-byte copy of '%s'",
                             vkg_backend_name(s->backends[sh->backend]), vkg_nbytes(sh->root),
                             sh->root->name);
        if ((st = write_guards(s, sh->buf))) return st;
    }
    for (int i = 0; i < s->n_shadow_views; i++) {
        struct vkg_tensor *v = &s->shadow_views[i];
        struct shadow *sh = &s->shadows[(intptr_t)v->extra - 1];
        /* v was copied from its source before storage existed (pass 4), so
         * its offset is stale; a view's place in its root is view_offs */
        attach(v, sh->buf, s->guard + (v->view_src ? v->view_offs : 0));
        v->extra = NULL;
    }
    for (int k = 0; k < s->n_compute; k++) {
        struct vkg_tensor *c = &s->clone_store[k], *o = s->compute[k];
        c->buffer = o->buffer;
        c->offset = o->offset;
        c->data = o->data;
    }
    return VKG_STATUS_OK;
}

enum vkg_status vkg_sched_alloc_graph(struct vkg_sched *s, struct vkg_graph *graph) {
    if (!s || !graph)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "sched_alloc_graph: NULL");
    sched_release(s, NULL);
    s->graph = graph;
    enum vkg_status st = pass_records(s, graph);
    if (!st) st = pass_place_nodes(s);
    if (!st) st = pass_check_in_place(s);
    if (!st) {
        pass_place_leaves(s);
        pass_place_views(s);
        st = pass_splits(s);
    }
    if (!st) st = pass_storage(s);
    if (st) sched_release(s, NULL);
    return st;
}

/* ---- compute ------------------------------------------------------------------ */

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static enum vkg_status copy_root_to_shadow(struct vkg_sched *s, struct shadow *sh) {
    size_t n = vkg_nbytes(sh->root);
    struct vkg_buffer *src = sh->root->buffer, *dst = sh->buf;
    const struct vkg_backend_iface *di = dst->backend->iface, *si = src->backend->iface;
    if (src->host && !si->buffer_get) {
        if (di->buffer_set)
            return di->buffer_set(dst, s->guard, (char *)src->host + sh->root->offset, n);
        memcpy((char *)dst->host + s->guard, (char *)src->host + sh->root->offset, n);
        return VKG_STATUS_OK;
    }
    if (n > s->copy_tmp_size) { /* kept: the next compute copies the same sizes */
        void *p = realloc(s->copy_tmp, n);
        if (!p) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "sched: out of memory for a copy");
        s->copy_tmp = p;
        s->copy_tmp_size = n;
    }
    void *tmp = s->copy_tmp;
    enum vkg_status st = vkg_backend_tensor_get(sh->root, tmp, 0, n);
    if (!st) {
        if (di->buffer_set)
            st = di->buffer_set(dst, s->guard, tmp, n);
        else
            memcpy((char *)dst->host + s->guard, tmp, n);
    }
    return st;
}

/* NaN-fill the outputs of every compute node so unwritten elements show
 * (not those computing in place: their output is an input's storage). */
static enum vkg_status fill_outputs_nan(struct vkg_sched *s) {
    for (int i = 0; i < s->n_compute; i++) {
        struct vkg_tensor *t = s->compute[i];
        if (vkg_storage_root(t) != t) continue;
        size_t n = vkg_nbytes(t);
        uint32_t *tmp = malloc(n + 4);
        if (!tmp) return vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "sched: out of memory");
        for (size_t k = 0; k < n / 4 + 1; k++)
            tmp[k] = 0x7fc00000u;
        enum vkg_status st = vkg_backend_tensor_set(t, tmp, 0, n);
        free(tmp);
        if (st) return st;
    }
    return VKG_STATUS_OK;
}

enum vkg_status vkg_sched_graph_compute(struct vkg_sched *s, struct vkg_graph *graph) {
    if (!s || !graph)
        return vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "sched_graph_compute: NULL");
    if (graph != s->graph)
        return vkg_error(NULL, VKG_STATUS_NOT_ALLOCATED,
                         "sched_graph_compute: this graph was not allocated by this scheduler "
                         "(call vkg_sched_alloc_graph first)");
    enum vkg_status st;
    if (s->guard && (st = fill_outputs_nan(s))) return st;
    for (int i = 0; i < s->n_splits; i++) {
        struct split *sp = &s->splits[i];
        for (int c = 0; c < sp->n_copies; c++)
            if ((st = copy_root_to_shadow(s, &s->shadows[sp->copy_shadows[c]]))) return st;
        struct vkg_backend *be = s->backends[sp->backend];
        if (be->iface->set_profiling) be->iface->set_profiling(be, s->profiling);
        if (!s->profiling) {
            st = be->iface->graph_compute(be, sp->clones, sp->n);
            if (st) return st;
            for (int k = 0; k < sp->n; k++) {
                struct tinfo *e = map_find(s, s->compute[sp->first + k]);
                e->time_us = -1;
                e->time_gpu = false;
            }
        } else if (be->iface->get_node_times_us) {
            st = be->iface->graph_compute(be, sp->clones, sp->n);
            if (st) return st;
            double *us = s->split_us;
            bool ok = be->iface->get_node_times_us(be, us, sp->n);
            for (int k = 0; k < sp->n; k++) {
                struct tinfo *e = map_find(s, s->compute[sp->first + k]);
                e->time_us = ok ? us[k] : -1;
                e->time_gpu = ok;
            }
        } else {
            /* No device timers: run node by node and time each on the host. */
            for (int k = 0; k < sp->n; k++) {
                double t0 = now_us();
                st = be->iface->graph_compute(be, &sp->clones[k], 1);
                if (st) return st;
                struct tinfo *e = map_find(s, s->compute[sp->first + k]);
                e->time_us = now_us() - t0;
                e->time_gpu = false;
            }
        }
    }
    return VKG_STATUS_OK;
}

/* ---- queries ------------------------------------------------------------------ */

struct vkg_backend *vkg_sched_get_tensor_backend(struct vkg_sched *s, const struct vkg_tensor *t) {
    if (!s) return NULL;
    struct tinfo *e = map_find(s, t);
    return e && e->backend >= 0 ? s->backends[e->backend] : NULL;
}

const char *vkg_sched_get_placement_reason(struct vkg_sched *s, const struct vkg_tensor *node) {
    if (!s) return "";
    struct tinfo *e = map_find(s, node);
    return e ? e->reason : "";
}

int vkg_sched_get_n_splits(struct vkg_sched *s) {
    return s ? s->n_splits : 0;
}

static const struct split *split_at(struct vkg_sched *s, int i) {
    return s && i >= 0 && i < s->n_splits ? &s->splits[i] : NULL;
}

struct vkg_backend *vkg_sched_get_split_backend(struct vkg_sched *s, int i) {
    const struct split *sp = split_at(s, i);
    return sp ? s->backends[sp->backend] : NULL;
}

int vkg_sched_get_split_n_nodes(struct vkg_sched *s, int i) {
    const struct split *sp = split_at(s, i);
    return sp ? sp->n : 0;
}

int vkg_sched_get_split_n_copies(struct vkg_sched *s, int i) {
    const struct split *sp = split_at(s, i);
    return sp ? sp->n_copies : 0;
}

int vkg_sched_get_n_backends(struct vkg_sched *s) {
    return s ? s->n_backends : 0;
}

struct vkg_backend *vkg_sched_get_backend(struct vkg_sched *s, int i) {
    return s && i >= 0 && i < s->n_backends ? s->backends[i] : NULL;
}

double vkg_sched_get_node_time_us(struct vkg_sched *s, const struct vkg_tensor *node) {
    if (!s) return -1;
    struct tinfo *e = map_find(s, node);
    return e ? e->time_us : -1;
}

bool vkg_sched_node_time_is_gpu(struct vkg_sched *s, const struct vkg_tensor *node) {
    if (!s) return false;
    struct tinfo *e = map_find(s, node);
    return e && e->time_gpu;
}

/* ---- guards ------------------------------------------------------------------- */

static int check_one(struct vkg_sched *s, struct vkg_buffer *buf, const char *name, char *report,
                     size_t report_size, int found) {
    unsigned char *tmp = malloc(s->guard);
    if (!tmp) return found;
    int bad = 0;
    size_t offs[2] = {0, buf->size - s->guard};
    for (int side = 0; side < 2; side++) {
        struct vkg_tensor view = {.type = VKG_TYPE_F32,
                                  .buffer = buf,
                                  .offset = offs[side],
                                  .ne = {(int64_t)(s->guard / 4), 1, 1, 1},
                                  .nb = {4, s->guard, s->guard, s->guard}};
        view.data = buf->host ? (char *)buf->host + offs[side] : NULL;
        if (vkg_backend_tensor_get(&view, tmp, 0, s->guard)) continue;
        for (size_t k = 0; k < s->guard; k++) {
            if (tmp[k] != GUARD_BYTE) {
                if (!found && !bad && report && report_size)
                    snprintf(report, report_size,
                             "'%s': guard %s the data damaged at byte %zu %s (0x%02x)", name,
                             side ? "after" : "before", side ? k : s->guard - k,
                             side ? "past the end" : "before the start", tmp[k]);
                bad = 1;
                break;
            }
        }
    }
    free(tmp);
    return found + bad;
}

int vkg_sched_check_guards(struct vkg_sched *s, char *report, size_t report_size) {
    if (report && report_size) report[0] = '\0';
    if (!s || !s->guard) return 0;
    int found = 0;
    for (int i = 0; i < s->n_roots; i++)
        found = check_one(s, s->roots[i]->buffer, s->roots[i]->name, report, report_size, found);
    for (int i = 0; i < s->n_shadows; i++)
        found =
            check_one(s, s->shadows[i].buf, s->shadows[i].root->name, report, report_size, found);
    return found;
}
