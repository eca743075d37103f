/* pp_batch: Megatron-LM's pipeline sends and receives under its interleaved schedule, posted and
 * waited for where its code posts and waits for them.
 *
 * Megatron-LM's forward_backward_pipelining_with_interleaving (megatron/core/pipeline_parallel/
 * schedules.py; megatron/schedules.py in 2021-2022) runs a stage's passes in steps: a warm-up
 * step is one forward, a steady step a forward then a backward, a cool-down step one backward.
 * After each step it makes one call of p2p_communication.py: send_forward_recv_forward in the
 * warm-up, send_forward_backward_recv_forward_backward in the steady state and after the last
 * warm-up forward, send_backward_recv_backward in the cool-down, recv_forward before the first
 * step, and recv_backward after the warm-up when every forward is a warm-up one (m = p). Each
 * goes through _communicate: one torch.distributed.batch_isend_irecv (_batched_p2p_ops, in its
 * order send_prev, recv_prev, send_next, recv_next) of the step's outputs (the forward's
 * activations to the next stage unless its chunk is the last virtual stage, the backward's input
 * gradient to the previous unless the first) and the receives the next step reads (recv_prev: the
 * next forward's activations unless the first virtual stage; recv_next: the next backward's
 * gradients unless the last); it waits on every request and then, with batch_p2p_comm and
 * batch_p2p_sync (ModelParallelConfig's defaults when overlap_p2p_comm is off; in the 2021-2022
 * megatron/p2p_communication.py always), calls torch.cuda.synchronize() "to protect against race
 * condition", with or without operations. recv_forward on the first stage and recv_backward on
 * the last return without a call.
 *
 * Here each batch's tasks follow the step's last compute task (PyTorch's ProcessGroupNCCL
 * pointToPoint makes the NCCL stream wait for the current stream, syncStream), the next compute
 * task waits for all of them (Builder.p2p_block) and the host synchronises before it
 * (Builder.sync_compute). Megatron's recv_prev and recv_next flags, the first stage's "ahead of
 * last stage by (pipeline_parallel_size - 1)" rule among them, come to exactly the inputs of the
 * next step's passes for its order (schedule.c's virtual_pass: the chunk of virtual micro-batch
 * k + 1 is that of k + 1 - p plus one), so they are read off the pass list.
 *
 * Not for: ZB-V (sail-sg's calls), or Megatron's overlap_p2p_comm (calls posted without waiting
 * for them: workload.c's p2p under several chunks). */
#include "workload_internal.h"

gboolean pp_batch_enabled(const Scenario *sc) {
    return sc->schedule == SCHED_INTERLEAVED && sc->virtual_stages > 1 &&
           sc->framework == FW_MEGATRON && !sc->overlap_p2p_comm;
}

guint32 pp_batch_take(Builder *b, int dir) {
    guint32 t = b->batch_in[dir];
    g_assert(t != NO_TASK); /* the step before posted it */
    b->batch_in[dir] = NO_TASK;
    return t;
}

void pp_batch_put(Builder *b, int dir, int micro) {
    g_assert(b->batch_out_micro[dir] < 0); /* one pass of each direction per step */
    b->batch_out_micro[dir] = micro;
}

/* Whether a step ends after pass k: warm-up forwards and cool-down backwards are steps of their
 * own, the steady state's forward and backward one step together. */
static gboolean step_ends(int warm, int total, int k) {
    return k < warm || k >= 2 * total - warm || (k - warm) % 2 == 1;
}

/* One batch: the pending sends and the receives `recv` (by direction; micro-batch recv_micro)
 * as _batched_p2p_ops orders them, then the wait and the synchronisation (sync: a
 * _communicate call, which synchronises even with nothing to move). */
static void post(Builder *b, const gboolean *recv, const int *recv_micro, gboolean sync) {
    static const StreamId send_s[2] = {STREAM_PP_SEND_FWD, STREAM_PP_SEND_BWD};
    static const StreamId recv_s[2] = {STREAM_PP_RECV_FWD, STREAM_PP_RECV_BWD};
    static const Phase ph[2] = {PHASE_FWD, PHASE_BWD};
    /* a batch right after another (m = p's recv_backward) is posted once the host has waited for
     * that one: after its task (one at most), else after the step's compute */
    guint32 after = b->last_compute;
    int n = 0;
    while (n < PP_BATCH_MAX && b->p2p_block[n] != NO_TASK)
        after = b->p2p_block[n++];
    g_assert(n <= 1);
    if (n == 1) /* the host issues this batch after the synchronisation */
        b->sync_next = TRUE;
    /* send_prev (gradients), recv_prev (activations), send_next (activations), recv_next */
    static const int order[4][2] = {{1, TRUE}, {0, FALSE}, {0, TRUE}, {1, FALSE}};
    for (int i = 0; i < 4; i++) {
        int dir = order[i][0];
        guint32 t = NO_TASK;
        if (order[i][1] && b->batch_out_micro[dir] >= 0) {
            t = p2p_task(b, TASK_SEND, send_s[dir], ph[dir], b->batch_out_micro[dir], after);
            b->batch_out_micro[dir] = -1;
        } else if (!order[i][1] && recv[dir]) {
            g_assert(b->batch_in[dir] == NO_TASK); /* each read by the step after */
            t = b->batch_in[dir] =
                p2p_task(b, TASK_RECV, recv_s[dir], ph[dir], recv_micro[dir], after);
        }
        if (t != NO_TASK) {
            g_assert(n < PP_BATCH_MAX);
            b->p2p_block[n++] = t;
        }
    }
    b->sync_compute |= sync;
}

void pp_batch_step(Builder *b, const GArray *passes, int k) {
    const Scenario *sc = b->sc;
    int pp = sc->pp, total = (int)passes->len / 2;
    int warm = schedule_interleaved_warmup(pp, b->stage, sc->grad_accum, b->v);
    g_assert((int)passes->len == 2 * total && total == sc->grad_accum * b->v);
    if (k >= 0 && !step_ends(warm, total, k))
        return;
    /* the inputs the next step's passes read */
    gboolean recv[2] = {FALSE, FALSE};
    int micro[2] = {-1, -1}, next = k + 1;
    gboolean pair = next >= warm && next < 2 * total - warm && (next - warm) % 2 == 0;
    for (int j = next; j < (int)passes->len && j <= next + pair; j++) {
        const PassRef *p = &g_array_index(passes, PassRef, j);
        gboolean edge =
            p->fwd ? b->stage == 0 && p->chunk == 0 : b->stage == pp - 1 && p->chunk == b->v - 1;
        if (!edge) {
            recv[p->fwd ? 0 : 1] = TRUE;
            micro[p->fwd ? 0 : 1] = p->micro;
        }
    }
    if (k < 0) { /* recv_forward: a call where there is something to receive */
        post(b, recv, micro, recv[0]);
        return;
    }
    if (k == warm - 1 && warm == total) { /* send_forward_recv_forward, then recv_backward */
        const gboolean none[2] = {FALSE, FALSE};
        post(b, none, micro, TRUE);
        if (recv[1])
            post(b, recv, micro, TRUE);
        return;
    }
    post(b, recv, micro, TRUE);
}
