/* conformance/tests/example_dense_layer.c — the README's C example, built and run by the test
 * suite so that the README cannot drift from the API. Exit 0 on success. */
#include <stdio.h>
#include <stdlib.h>
#include <vkgrad/vkgrad.h>

int main(void) {
    enum { N_IN = 512, N_OUT = 256, BATCH = 64 };
    struct vkg_context *ctx = vkg_init(64u << 20);
    vkg_set_no_alloc(ctx, true); /* the scheduler places the data */

    struct vkg_tensor *w = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, N_IN, N_OUT);
    struct vkg_tensor *x = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, N_IN, BATCH);
    struct vkg_tensor *t = vkg_new_tensor_2d(ctx, VKG_TYPE_F32, N_OUT, BATCH);
    vkg_set_param(w);
    struct vkg_tensor *y = vkg_mul_mat(ctx, w, x);
    struct vkg_tensor *loss = vkg_sum(ctx, vkg_sqr(ctx, vkg_sub(ctx, y, t)));
    if (!loss) {
        fprintf(stderr, "%s\n", vkg_last_error(ctx));
        return 1;
    }
    vkg_set_loss(loss);

    struct vkg_graph *graph = vkg_graph_new(ctx, 4096);
    vkg_build_forward_expand(graph, loss);
    vkg_build_backward_expand(ctx, graph); /* dW = out_prod(x, dL/dy) */
    struct vkg_tensor *dw = vkg_graph_get_grad(graph, w);

    struct vkg_backend *gpu = vkg_vulkan_device_count() > 0 ? vkg_backend_vulkan_init(0) : NULL;
    struct vkg_sched *sched = vkg_sched_new(gpu ? &gpu : NULL, gpu ? 1 : 0); /* + CPU fallback */
    if (vkg_sched_alloc_graph(sched, graph)) {
        fprintf(stderr, "%s\n", vkg_last_error(NULL));
        return 1;
    }

    float *hw = calloc(N_IN * N_OUT, 4), *hx = calloc(N_IN * BATCH, 4),
          *ht = calloc(N_OUT * BATCH, 4);
    for (int i = 0; i < N_IN * N_OUT; i++)
        hw[i] = 0.1f * ((float)rand() / RAND_MAX * 2 - 1);
    for (int i = 0; i < N_IN * BATCH; i++)
        hx[i] = (float)rand() / RAND_MAX * 2 - 1;
    for (int i = 0; i < N_OUT * BATCH; i++)
        ht[i] = (float)rand() / RAND_MAX * 2 - 1;
    vkg_backend_tensor_set(w, hw, 0, sizeof(float) * N_IN * N_OUT);
    vkg_backend_tensor_set(x, hx, 0, sizeof(float) * N_IN * BATCH);
    vkg_backend_tensor_set(t, ht, 0, sizeof(float) * N_OUT * BATCH);
    vkg_graph_reset(graph); /* dL/dL = 1 */
    enum vkg_status st = vkg_sched_graph_compute(sched, graph);
    if (st) {
        fprintf(stderr, "%s: %s\n", vkg_status_str(st), vkg_last_error(NULL));
        return 1;
    }

    /* where the backward node ran, and why ("Vulkan0", or "CPU: <the refusal>") */
    printf("dW = %s node on %s (%s), %d split(s)\n", vkg_op_name(dw->op),
           vkg_backend_name(vkg_sched_get_tensor_backend(sched, dw)),
           vkg_sched_get_placement_reason(sched, dw), vkg_sched_get_n_splits(sched));
    vkg_backend_tensor_get(dw, hw, 0, sizeof(float) * N_IN * N_OUT);
    printf("dW[0] = %g\n", hw[0]);

    vkg_sched_free(sched);
    vkg_backend_free(gpu);
    vkg_graph_free(graph);
    vkg_free(ctx);
    free(hw);
    free(hx);
    free(ht);
    return 0;
}
