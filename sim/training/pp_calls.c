/* pp_calls: a pass's pipeline send and receive, as each framework's code posts them.
 *
 * - Megatron-LM, non-interleaved schedules: a receive before the pass that reads it, a send after
 *   the pass that produced it (its batched interleaved calls are pp_batch.c's).
 * - DeepSpeed's pipeline engine (deepspeed/runtime/pipe/schedule.py TrainSchedule, engine.py;
 *   EleutherAI's DeeperSpeed, which GPT-NeoX runs, the same): the schedule is a list of steps,
 *   each a forward or a backward slot of one micro-batch (1F1B's order: forward k at step
 *   2k + s, backward j at 2j + 2p - 1 - s on stage s), and each step first exchanges, then
 *   computes. A forward step runs RecvActivation (its own input) then SendGrad (the gradient the
 *   step before produced); a backward step SendActivation (the output the step before produced)
 *   then RecvGrad (its own). A step whose micro-batch does not exist still makes its send. Every
 *   one is a blocking p2p.send / p2p.recv (dist.send / dist.recv, whose work the compute stream
 *   waits for), so a step's two transfers run one after the other, each after the compute before
 *   it, and the step's compute after both: a send is held (Builder.ds_pend) until the next pass
 *   starts and goes out in that order (pp_receive), or at the end (pp_flush). The partitioned
 *   tensors' gathers (framework.c) run in the pass, after its step's exchange.
 * Not for: ZB-V's and the interleaved schedule's per-chunk calls (several chunks: no wait). */
#include "workload_internal.h"

/* A pipeline send or receive of one micro-batch's activations (or their gradients). Both
 * frameworks block the compute stream on it: DeepSpeed's pipeline engine (GPT-NeoX) calls the
 * synchronous dist.send / dist.recv (deepspeed/runtime/pipe/p2p.py), whose work the current stream
 * waits for; Megatron-LM's p2p_communication._communicate waits on every batch_isend_irecv
 * request and then, with batch_p2p_sync (its default), calls torch.cuda.synchronize() "to protect
 * against race condition". A receive already precedes the compute that reads it; a send makes the
 * next compute task wait (Builder.p2p_block). The host's synchronisations after these calls
 * (Megatron-LM's after each batch, DeepSpeed's comms_logger after each call) wait before the next
 * compute task: both frameworks post a send and the receive paired with it
 * before waiting (Megatron's send_forward_recv_backward is one batch; DeepSpeed orders them by
 * stage parity), which a synchronisation between them would deadlock here.
 * What moves: the stage's output on this rank's tokens, b s/cp h, and under sequence parallelism
 * its 1/t of the sequence (megatron/core/pipeline_parallel/schedules.py get_tensor_shapes:
 * "if config.sequence_parallel: seq_length = seq_length // tensor_model_parallel_world_size"),
 * the split the sequence-parallel regions already hold between layers; with the 2021-2022
 * scatter-gather (Builder.sg) its 1/t of the flat tensor, gathered at the receiver. */
guint32 p2p_task(Builder *b, TaskKind kind, StreamId stream, Phase ph, int micro, guint32 after) {
    Task t = {.kind = kind,
              .stream = stream,
              .op = kind == TASK_SEND ? COLL_SEND : COLL_RECV,
              .dim = DIM_PP,
              .phase = ph,
              .layer = -2,
              .micro = micro,
              .bytes = b->sp || b->sg ? b->act_bytes / b->sc->tp : b->act_bytes};
    return emit(b, t, &after, 1);
}

static guint32 p2p(Builder *b, TaskKind kind, StreamId stream, Phase ph, int micro, guint32 after) {
    guint32 idx = p2p_task(b, kind, stream, ph, micro, after);
    /* With several chunks neither here: Megatron-LM's interleaved schedule posts its calls per
     * step, not per pass (pp_batch.c, unless overlap_p2p_comm leaves them unwaited), and ZB-V's
     * sends do not block. Posting them per chunk pass and waiting would deadlock (a receive
     * stream in chunk order behind a send not yet made). */
    if (b->v > 1)
        return idx;
    /* DeepSpeed's pipe/p2p.py calls deepspeed.comm: logged */
    b->sync_compute |= b->logger || b->sc->framework == FW_MEGATRON;
    if (kind == TASK_SEND)
        b->p2p_block[0] = idx;
    return idx;
}

/* The streams a chunk's forward (fwd) or backward sends and receives on: in a V, chunk 1's go the
 * other way, on their own streams (workload_pp_channel). */
static StreamId pp_stream(const Builder *b, int chunk, gboolean fwd, gboolean send) {
    gboolean back = b->vshape && chunk == 1;
    if (fwd)
        return send ? (back ? STREAM_PP_SEND_FWD_V : STREAM_PP_SEND_FWD)
                    : (back ? STREAM_PP_RECV_FWD_V : STREAM_PP_RECV_FWD);
    return send ? (back ? STREAM_PP_SEND_BWD_V : STREAM_PP_SEND_BWD)
                : (back ? STREAM_PP_RECV_BWD_V : STREAM_PP_RECV_BWD);
}

/* 2021-2022 Megatron-LM's scatter_gather_tensors_in_pipeline (Builder.sg): each TP rank sent
 * its 1/t of the stage's output (p2p_task), and _communicate gathered the received chunks back
 * over the TP group before returning them (mpu.gather_split_1d_tensor, an all-gather of b s h):
 * the compute that reads the input waits for that gather. */
static guint32 sg_gather(Builder *b, guint32 recv, Phase ph, int micro) {
    if (!b->sg)
        return recv;
    return collective(b, COLL_ALLGATHER, DIM_TP, b->act_bytes, ph, -2, micro, recv);
}

/* DeepSpeed's engine: the send held from the pass before, after `after` (its output). */
static guint32 ds_send(Builder *b, guint32 after) {
    b->ds_pend.set = FALSE;
    return p2p(b, TASK_SEND, pp_stream(b, 0, b->ds_pend.fwd, TRUE),
               b->ds_pend.fwd ? PHASE_FWD : PHASE_BWD, b->ds_pend.micro, after);
}

/* DeepSpeed's engine: the exchange that opens a pass's step (TrainSchedule order, above): the
 * send held from the step before (its slot: a forward step sends the previous backward's
 * gradient after its receive, a backward step the previous forward's output before it; a send
 * of the same direction as this pass came from an empty step between, so first), and the
 * receive `recv` (FALSE at the pipeline's ends), each after the one before. Returns the receive,
 * or the send after it, NO_TASK when no receive. */
static guint32 ds_exchange(Builder *b, int chunk, gboolean fwd, int micro, gboolean recv) {
    Phase ph = fwd ? PHASE_FWD : PHASE_BWD;
    gboolean pend = b->ds_pend.set, after_recv = pend && fwd && !b->ds_pend.fwd;
    guint32 last = b->last_compute;
    if (pend && !after_recv)
        last = ds_send(b, b->ds_pend.after);
    guint32 r = NO_TASK;
    if (recv)
        r = last = p2p(b, TASK_RECV, pp_stream(b, chunk, fwd, FALSE), ph, micro, last);
    if (after_recv)
        last = ds_send(b, recv ? r : b->ds_pend.after);
    return recv ? last : NO_TASK;
}

/* A pass's input from the neighbouring stage (fwd: activations, else gradients; recv FALSE at
 * the pipeline's ends, NO_TASK then): the receive the step before posted (pp_batch.c), DeepSpeed's
 * step exchange, or its own, then the scatter-gather's gather. Before a backward, DeepSpeed's
 * engine first gathers back the stage's own output, of which it kept its 1/t after sending it
 * (Framework.pipe_regathers_output; framework.c). */
guint32 pp_receive(Builder *b, int chunk, gboolean fwd, int micro, gboolean recv) {
    Phase ph = fwd ? PHASE_FWD : PHASE_BWD;
    guint32 r;
    if (b->ds_steps)
        r = ds_exchange(b, chunk, fwd, micro, recv);
    else if (!recv)
        return NO_TASK;
    else
        r = b->batched ? pp_batch_take(b, fwd ? 0 : 1)
                       : p2p(b, TASK_RECV, pp_stream(b, chunk, fwd, FALSE), ph, micro, NO_TASK);
    if (!recv)
        return NO_TASK;
    if (!fwd && framework_get(b->sc->framework)->pipe_regathers_output)
        r = sg_gather(b, r, ph, micro);
    return sg_gather(b, r, ph, micro);
}

/* A pass's output to the neighbouring stage, after task `after`: left to the step's batch
 * (pp_batch.c), held for the next step (DeepSpeed's engine) or sent now. */
void pp_send(Builder *b, int chunk, gboolean fwd, int micro, guint32 after) {
    if (b->batched) {
        pp_batch_put(b, fwd ? 0 : 1, micro);
    } else if (b->ds_steps) {
        g_assert(!b->ds_pend.set); /* every pass's step sends what the one before held */
        b->ds_pend = (DsPending){TRUE, fwd, micro, after};
    } else {
        p2p(b, TASK_SEND, pp_stream(b, chunk, fwd, TRUE), fwd ? PHASE_FWD : PHASE_BWD, micro,
            after);
    }
}

/* After the stage's last pass: the send still held (DeepSpeed's engine makes it in the next step,
 * before the batch's ReduceTiedGrads, ReduceGrads and OptimizerStep). */
void pp_flush(Builder *b) {
    if (b->ds_steps && b->ds_pend.set)
        ds_send(b, b->ds_pend.after);
}

gboolean pp_ds_steps(const Scenario *sc) {
    return sc->framework == FW_DEEPSPEED && sc->schedule == SCHED_1F1B && sc->pp > 1;
}
