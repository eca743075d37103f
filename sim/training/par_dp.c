/* par_dp: data parallelism's plug-in (parallelism.h): ZeRO-3's and FSDP's parameter gathers
 * around each unit (gathers.c, with the frameworks' sources) and the reduction of the gradients
 * each backward (or W) pass produces (grads.c: DDP's and ZeRO's buckets, per-owner reduces,
 * FSDP's per-unit reduce-scatters, DeepSpeed's gradient hooks). It holds the dense parameters'
 * gradient group (workload_grad_dim: the other plug-ins come first, expert parallelism claiming
 * the experts'). The optimizer step and ZeRO-1/2's parameter allgathers after it are the stage's
 * (workload.c build_stage). */
#include "parallelism.h"

static void grads_begin(Builder *b, int chunk, gboolean last_micro, gboolean reduces) {
    b->grads_reduce = reduces;
    b->grads_overlap = reduces && grads_reduce_in_backward(b, last_micro);
    grads_begin_pass(b, chunk);
}

static void grads_after_unit(Builder *b, guint i, int micro, const guint32 *seg_task) {
    if (b->hooks && b->grads_reduce)
        grads_hooks(b, &g_array_index(b->units, ParamUnit, i), seg_task);
    if (b->grads_overlap) /* gradient hooks fire inside the unit's backward */
        grads_unit(b, i, micro, seg_task);
}

static void grads_end(Builder *b, int micro, gboolean last_pass) {
    if (b->grads_overlap) {
        grads_flush(b, micro);
        grads_flush_experts(b, micro);
    } else if (b->grads_reduce && last_pass && (b->sc->zero == 0 || grads_after_pipeline(b)) &&
               layout_group_size(b->lay, b->grad_dim) > 1)
        grads_after_backward(b, micro);
}

static guint32 unit_in(Builder *b) {
    return gathers_use(b);
}

static Dim grad_dim(const Scenario *sc, ParamClass c) {
    (void)sc;
    (void)c;
    return DIM_DP;
}

/* the data-parallel replicas (its group holds those of every other plug-in's dimension that
 * joins the gradient reduction: layout.h) */
static int dp_size(const Scenario *sc) {
    return sc->dp;
}

const Parallelism par_dp = {.name = "dp",
                            .dim = DIM_DP,
                            .stream = STREAM_DP,
                            .size = dp_size,
                            .grad_dim = grad_dim,
                            .plan = gathers_plan,
                            .unit_in = unit_in,
                            .unit_out = gathers_hooks,
                            .grads_begin = grads_begin,
                            .grads_unit = grads_after_unit,
                            .grads_end = grads_end};
