/* lib/cpu/threads.c — the CPU backend's persistent thread pool.
 *
 * Workers are created once per pool and sleep on a condition variable between
 * tasks; a task is published by bumping a generation counter, so waking the
 * pool costs one broadcast and no thread creation. The caller runs share 0
 * itself and then waits for the workers that took part (a task may use fewer
 * threads than the pool has). Blocking rather than spinning keeps idle
 * workers off the cores while OpenBLAS or other processes use them.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "cpu_impl.h"
#include "vkgrad/context.h"

struct vkg_cpu_worker {
    struct vkg_cpu_pool *pool;
    pthread_t thread;
    int index; /* 1..n_threads-1 */
};

struct vkg_cpu_pool {
    int n_threads;
    int n_started; /* workers actually running */
    struct vkg_cpu_worker *workers;

    pthread_mutex_t mutex;
    pthread_cond_t wake; /* workers wait here for a new generation */
    pthread_cond_t done; /* the caller waits here for pending == 0 */
    uint64_t generation;
    bool quit;

    vkg_cpu_task_fn fn;
    void *arg;
    int nth;
    int pending; /* workers of the current task not yet finished */
};

static void *worker_main(void *p) {
    struct vkg_cpu_worker *w = p;
    struct vkg_cpu_pool *pool = w->pool;
    uint64_t seen = 0;

    pthread_mutex_lock(&pool->mutex);
    for (;;) {
        while (!pool->quit && pool->generation == seen)
            pthread_cond_wait(&pool->wake, &pool->mutex);
        if (pool->quit) break;
        seen = pool->generation;
        if (w->index >= pool->nth) continue; /* this task uses fewer threads */
        vkg_cpu_task_fn fn = pool->fn;
        void *arg = pool->arg;
        int nth = pool->nth;
        pthread_mutex_unlock(&pool->mutex);

        fn(arg, w->index, nth);

        pthread_mutex_lock(&pool->mutex);
        if (--pool->pending == 0) pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->mutex);
    return NULL;
}

struct vkg_cpu_pool *vkg_cpu_pool_new(int n_threads) {
    if (n_threads < 1) {
        vkg_error(NULL, VKG_STATUS_INVALID_ARGUMENT, "cpu thread pool: n_threads=%d < 1",
                  n_threads);
        return NULL;
    }
    struct vkg_cpu_pool *pool = calloc(1, sizeof(*pool));
    if (!pool) goto oom;
    pool->n_threads = n_threads;
    if (pthread_mutex_init(&pool->mutex, NULL) != 0) {
        free(pool);
        goto oom;
    }
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    if (n_threads > 1) {
        pool->workers = calloc((size_t)n_threads - 1, sizeof(*pool->workers));
        if (!pool->workers) goto error;
        for (int i = 1; i < n_threads; i++) {
            struct vkg_cpu_worker *w = &pool->workers[i - 1];
            w->pool = pool;
            w->index = i;
            if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
                vkg_error(NULL, VKG_STATUS_BACKEND_ERROR,
                          "cpu thread pool: could not start thread %d of %d", i + 1, n_threads);
                vkg_cpu_pool_free(pool);
                return NULL;
            }
            pool->n_started++;
        }
    }
    return pool;

error:
    vkg_cpu_pool_free(pool);
oom:
    vkg_error(NULL, VKG_STATUS_OUT_OF_MEMORY, "cpu thread pool: out of memory");
    return NULL;
}

void vkg_cpu_pool_free(struct vkg_cpu_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mutex);
    pool->quit = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    for (int i = 0; i < pool->n_started; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->wake);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->mutex);
    free(pool->workers);
    free(pool);
}

int vkg_cpu_pool_size(const struct vkg_cpu_pool *pool) {
    return pool ? pool->n_started + 1 : 1;
}

void vkg_cpu_pool_run(struct vkg_cpu_pool *pool, vkg_cpu_task_fn fn, void *arg, int nth) {
    if (nth > vkg_cpu_pool_size(pool)) nth = vkg_cpu_pool_size(pool);
    if (nth <= 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&pool->mutex);
    pool->fn = fn;
    pool->arg = arg;
    pool->nth = nth;
    pool->pending = nth - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);

    fn(arg, 0, nth);

    pthread_mutex_lock(&pool->mutex);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->done, &pool->mutex);
    pthread_mutex_unlock(&pool->mutex);
}
