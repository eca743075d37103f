/* par_pp: pipeline parallelism's plug-in (parallelism.h): what a pass starts from and where its
 * output goes. A forward pass receives its activations from the previous virtual stage and sends
 * its output to the next; a backward pass receives the output's gradient from the next and sends
 * the input's back (pp_calls.c: each framework's calls; pp_batch.c: Megatron-LM's batched
 * exchanges between passes). The model's last virtual stage keeps its output as the loss, which
 * that micro-batch's backward starts from. Which passes a stage runs, in which order, is the
 * schedule's (sim/model/schedule.c). */
#include "parallelism.h"

/* Whether chunk `chunk` of this stage is the model's first (last) virtual stage: no activations
 * come in (go out); with several chunks the pipeline is a ring (layout_pp_next), except in a V,
 * whose last virtual stage is chunk 1 of stage 0. */
static gboolean first_virtual(const Builder *b, int chunk) {
    return b->stage == 0 && chunk == 0;
}

static gboolean last_virtual(const Builder *b, int chunk) {
    if (b->vshape)
        return b->stage == 0 && chunk == 1;
    return b->stage == b->sc->pp - 1 && chunk == b->v - 1;
}

/* In a V, the last stage's turn: chunk 0's activations go on to its chunk 1, and chunk 1's
 * gradients back to its chunk 0, on the same GPU (b->turn) rather than through a send. */
static gboolean v_turn(const Builder *b) {
    return b->vshape && b->stage == b->sc->pp - 1;
}

static guint32 receive(Builder *b, int chunk, gboolean fwd, int micro, guint32 in) {
    if (v_turn(b) && chunk == (fwd ? 1 : 0))
        return b->turn[micro];
    if (fwd)
        return pp_receive(b, chunk, TRUE, micro, !first_virtual(b, chunk));
    if (!last_virtual(b, chunk))
        return pp_receive(b, chunk, FALSE, micro, TRUE);
    pp_receive(b, chunk, FALSE, micro, FALSE); /* DeepSpeed's step may still send */
    return in;
}

static void send_on(Builder *b, int chunk, gboolean fwd, int micro, guint32 out) {
    if (v_turn(b) && chunk == (fwd ? 0 : 1))
        b->turn[micro] = out;
    else if (fwd && !last_virtual(b, chunk))
        pp_send(b, chunk, TRUE, micro, out);
    else if (fwd)
        b->loss[micro] = out;
    else if (!first_virtual(b, chunk))
        pp_send(b, chunk, FALSE, micro, out);
}

static void plan(Builder *b, const GArray *passes) {
    if (b->batched)
        pp_batch_step(b, passes, -1);
}

static void after_pass(Builder *b, const GArray *passes, int k) {
    if (b->batched)
        pp_batch_step(b, passes, k);
}

/* Its sends and receives run on streams of their own, by direction and chunk (pp_calls.c
 * pp_stream), not on one stream for its dimension: STREAM_COUNT. */
static int pp_size(const Scenario *sc) {
    return sc->pp;
}

const Parallelism par_pp = {.name = "pp",
                            .dim = DIM_PP,
                            .stream = STREAM_COUNT,
                            .size = pp_size,
                            .plan = plan,
                            .pass_in = receive,
                            .pass_out = send_on,
                            .after_pass = after_pass,
                            .finish = pp_flush};
