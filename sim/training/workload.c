/* workload: rank programs built from the scenario.
 *
 * Schedules, with their sources:
 * - Per-layer communication (tensor, sequence and expert parallelism): each parallelism's plug-in
 *   (par_*.c) wraps a unit's blocks, composed by blocks.c (parallelism.h has the rules).
 * - Pipelines: the order of passes is the schedule's (schedule.c: GPipe, 1F1B, interleaved 1F1B,
 *   ZB-H1, ZB-V); each pass runs one model chunk (all the stage's layers unless interleaved or in
 *   a V). Stages exchange b s h activations forward and as many gradients backward, per chunk
 *   pass (in a V chunk 1's the other way, and none at the last stage's turn).
 * - Data parallelism by framework (framework.c; grads.c): gradient buckets filled tensor by
 *   tensor as backward produces them, reduced while it runs or after it; DDP and ZeRO-1 in the
 *   last micro-batch of an accumulation, ZeRO-2 and ZeRO-3 in every one (their gradients are
 *   partitioned); ZeRO-1/2 allgather the updated parameters after the optimizer (Rajbhandari et
 *   al. 2020), except FSDP's SHARD_GRAD_OP, which gathers before each forward.
 * - ZeRO-3 and FSDP (gathers.c): each unit's parameters gathered before its forward and again
 *   before its recomputation and backward, on their own stream, in the framework's window.
 * - Host synchronisations (Task.host_sync): before the optimizer, and with GPT-NeoX's
 *   synchronize_each_layer at every checkpointed layer's entry and exit. */
#include "workload.h"

#include <math.h>
#include <string.h>

#include "bigmem.h"
#include "device.h"
#include "parallelism.h"
#include "workload_internal.h"
#include "zeropp.h"

struct Workload {
    const Scenario *sc;
    const Topology *topo;
    Layout *layout;
    Program *programs; /* one per pipeline stage */
    BigArena *arena;   /* the programs' arrays */
};

/* The arrays a stage's program builds in (Builder), kept from stage to stage: each stage writes
 * over the last one's, so only the longest stage's first touches cost page faults (bigmem.h), and
 * a finished stage is copied into the arena at its exact size. */
typedef struct {
    Buf tasks, deps, dep_of, streams[STREAM_COUNT];
} BuildBufs;

/* --- building one stage's program ----------------------------------------------------------- */

G_STATIC_ASSERT(STREAM_COUNT <= 1 << (32 - TASK_DEP_SEQ_BITS));
G_STATIC_ASSERT(sizeof(Task) == 32);

guint32 emit(Builder *b, Task t, const guint32 *deps, int ndeps) {
    t.host_sync = b->sync_next;
    b->sync_next = FALSE;
    t.dep_first = b->deps.n;
    t.dep_count = 0;
    g_assert(ndeps <= G_MAXUINT16);
    for (int i = 0; i < ndeps; i++) {
        if (deps[i] == NO_TASK)
            continue;
        *(guint32 *)buf_push(&b->deps, sizeof(guint32)) = ((const guint32 *)b->dep_of.v)[deps[i]];
        t.dep_count++;
    }
    guint32 idx = b->tasks.n;
    if (b->streams[t.stream].n >= 1u << TASK_DEP_SEQ_BITS)
        g_error("workload: more than 2^%d tasks on one stream of a stage", TASK_DEP_SEQ_BITS);
    *(guint32 *)buf_push(&b->dep_of, sizeof(guint32)) = TASK_DEP(t.stream, b->streams[t.stream].n);
    *(Task *)buf_push(&b->tasks, sizeof(Task)) = t;
    *(guint32 *)buf_push(&b->streams[t.stream], sizeof(guint32)) = idx;
    return idx;
}

guint32 compute_k(Builder *b, SimTime dur, int kernels, Phase ph, int layer, int micro,
                  guint32 dep1, guint32 dep2) {
    /* gradients accumulate into .grad from the second micro-batch on, unless ZeRO-2/3 take them
     * away each micro-batch */
    int pass = ph != PHASE_BWD ? 0 : micro > 0 && b->sc->zero < 2 ? 2 : 1;
    /* the optimizer: one multi-tensor kernel (FusedAdam), one operator */
    double ops = ph == PHASE_OPTIMIZER ? kernels : round(kernels * b->host_per_kernel[pass]);
    Task t = {.kind = TASK_COMPUTE,
              .stream = STREAM_COMPUTE,
              .phase = ph,
              .kernels = (uint16_t)MIN(kernels, G_MAXUINT16),
              .host_ops = (uint16_t)MIN(ops, G_MAXUINT16),
              .layer = layer,
              .micro = micro,
              .duration = dur};
    guint32 deps[2 + PP_BATCH_MAX] = {dep1, dep2};
    for (int k = 0; k < PP_BATCH_MAX; k++) {
        deps[2 + k] = b->p2p_block[k];
        b->p2p_block[k] = NO_TASK;
    }
    b->sync_next |= b->sync_compute;
    b->sync_compute = FALSE;
    return b->last_compute = emit(b, t, deps, 2 + PP_BATCH_MAX);
}

/* One segment's kernels in one pass (bwd FALSE: forward or its recomputation) as one compute
 * task. */
guint32 seg_compute(Builder *b, Segment seg, gboolean bwd, Phase ph, int layer, int micro,
                    guint32 dep1, guint32 dep2) {
    return compute_k(b, bwd ? b->bwd[seg] : b->fwd[seg], bwd ? b->nbwd[seg] : b->nfwd[seg], ph,
                     layer, micro, dep1, dep2);
}

/* A collective on dimension dim and stream s, after `after`. Returns NO_TASK when the group is one
 * rank. */
guint32 collective_on(Builder *b, StreamId s, CollOp op, Dim dim, double bytes, Phase ph, int layer,
                      int micro, guint32 after) {
    if (layout_group_size(b->lay, dim) <= 1)
        return NO_TASK;
    Task t = {.kind = TASK_COLL,
              .stream = s,
              .op = op,
              .dim = dim,
              .phase = ph,
              .layer = layer,
              .micro = micro,
              .bytes = bytes};
    /* DeepSpeed's comms_logger (deepspeed/comm/comm.py timed_op): once the op is issued "Need to
     * make op blocking for accurate logging": get_accelerator().synchronize() (its timer's start
     * and stop only record events, utils/timer.py). Every deepspeed.comm call is logged; the
     * tensor parallelism of Megatron's mpu (GPT-NeoX) calls torch.distributed and is not. */
    gboolean logged = b->logger && dim != DIM_TP;
    guint32 idx = emit(b, t, &after, 1);
    b->sync_next |= logged;
    if (s == STREAM_DP)
        b->last_dp = idx;
    return idx;
}

guint32 collective(Builder *b, CollOp op, Dim dim, double bytes, Phase ph, int layer, int micro,
                   guint32 after) {
    return collective_on(b, blocks_stream(dim), op, dim, bytes, ph, layer, micro, after);
}

/* ZeRO++: a chain of collectives and kernels (zeropp.h) on stream s, after `after`; returns its
 * last task. */
guint32 emit_steps(Builder *b, StreamId s, const ZppStep *steps, int n, Phase ph, int layer,
                   int micro, guint32 after) {
    for (int k = 0; k < n; k++) {
        const ZppStep *z = &steps[k];
        guint32 t = NO_TASK;
        if (z->kernel) {
            Task kt = {.kind = TASK_KERNEL,
                       .stream = s,
                       .op = z->op,
                       .dim = z->dim,
                       .phase = ph,
                       .kernels = 1,
                       .host_ops = 1,
                       .layer = layer,
                       .micro = micro,
                       .duration = z->duration};
            t = emit(b, kt, &after, 1);
            if (s == STREAM_DP)
                b->last_dp = t;
        } else {
            t = collective_on(b, s, z->op, z->dim, z->bytes, ph, layer, micro, after);
        }
        if (t != NO_TASK)
            after = t;
    }
    return after;
}

int unit_layer(const Builder *b, const ParamUnit *u) {
    return u->kind == UNIT_EMBED ? -1 : u->kind == UNIT_HEAD ? b->sc->model.layers : u->layer;
}

static void forward_pass(Builder *b, int micro, int chunk) {
    guint32 in = pass_in(b, chunk, TRUE, micro, NO_TASK);
    for (guint i = b->chunk_first[chunk]; i < b->chunk_first[chunk + 1]; i++) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        gboolean ckpt = u->kind == UNIT_LAYER && b->sync_layers;
        b->sync_next |= ckpt; /* CheckpointFunction.forward synchronises on entry */
        guint32 ag = pass_unit_in(b), from = b->tasks.n;
        in = blocks_forward(b, u, PHASE_FWD, micro, in, ag);
        pass_unit_out(b, u, from);
        b->sync_next |= ckpt; /* ... and on exit */
    }
    pass_out(b, chunk, TRUE, micro, in);
}

/* last_micro: this chunk's last backward of the iteration; last_pass: the stage's. Under a split
 * schedule the gradients exist after W (wgrad_pass), not here. */
static void backward_pass(Builder *b, int micro, int chunk, gboolean last_micro,
                          gboolean last_pass) {
    const Scenario *sc = b->sc;
    guint32 in = pass_in(b, chunk, FALSE, micro, b->loss[micro]);
    pass_grads_begin(b, chunk, last_micro, !b->split);
    for (int i = (int)b->chunk_first[chunk + 1] - 1; i >= (int)b->chunk_first[chunk]; i--) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        gboolean ckpt = u->kind == UNIT_LAYER && b->sync_layers;
        b->sync_next |= ckpt; /* CheckpointFunction.backward synchronises on entry */
        guint32 ag = pass_unit_in(b), from = b->tasks.n;
        guint32 seg_task[SEG_COUNT] = {NO_TASK, NO_TASK, NO_TASK, NO_TASK};
        if (u->kind == UNIT_LAYER && sc->recompute == RECOMPUTE_FULL) {
            in = blocks_forward(b, u, PHASE_RECOMPUTE, micro, in, ag); /* with its comm */
            ag = NO_TASK;
            pass_unit_out(b, u, from);
            from = b->tasks.n;
        }
        in = blocks_backward(b, u, micro, in, ag, seg_task);
        pass_unit_out(b, u, from);
        pass_grads_unit(b, (guint)i, micro, seg_task);
        b->sync_next |= ckpt; /* ... and on exit */
    }
    pass_grads_end(b, micro, last_pass);
    pass_out(b, chunk, FALSE, micro, in);
}

static SimTime op_time(const Scenario *sc, const DeviceSpec *dev, ModelOp *op) {
    if (sc->sequence_parallel) /* layer norms, dropout, residual adds on s/t tokens */
        model_op_sequence_split(op, sc->tp);
    return device_op_time(dev, op, sc->precision);
}

SimTime seg_op_time(const Builder *b, ModelOp *op) {
    return op_time(b->sc, b->dev, op);
}

/* Time of one segment's kernels in one pass, picoseconds, on the rank's s / cp tokens (context
 * parallelism: par_cp.c times the attention core's steps); attn_core (when not NULL) receives the
 * time of the attention core's kernels (what selective recomputation redoes), ncore their number;
 * *kernels the number of kernels. */
static SimTime segment_time(const Scenario *sc, const DeviceSpec *dev, Segment seg, Pass pass,
                            SimTime *attn_core, int *ncore, int *kernels, SimTime *prod,
                            SimTime *chunk, SimTime *wcast, int *nwcast) {
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(&sc->model, seg, pass, sc->micro_batch, workload_tokens(sc), sc->tp,
                      sc->precision, ops);
    SimTime total = 0;
    int n = 0;
    for (guint i = 0; i < ops->len; i++) {
        ModelOp *op = &g_array_index(ops, ModelOp, i);
        SimTime t = op_time(sc, dev, op);
        if (model_op_is_weight_cast(op)) { /* the block's weight casts, apart (wcast) */
            g_assert(wcast);
            *wcast = sim_time_add(*wcast, t);
            ++*nwcast;
            continue;
        }
        n++;
        total = sim_time_add(total, t);
        if (attn_core && op->attn_core) {
            *attn_core = sim_time_add(*attn_core, t);
            ++*ncore;
        }
        const char *producer = model_segment_producer(seg);
        if (prod && producer && strcmp(op->name, producer) == 0 && sc->tp_overlap_chunks > 0) {
            ModelOp c =
                model_op_row_chunk(op, sc->tp_overlap_chunks, model_elem_bytes(sc->precision));
            *prod = t;
            *chunk = device_op_time(dev, &c, sc->precision);
        }
    }
    *kernels = n;
    return total;
}

static void build_stage(Workload *wl, int stage, BuildBufs *bufs) {
    const Scenario *sc = wl->sc;
    const DeviceSpec *dev = &topo_spec(wl->topo)->device;
    Program *pg = &wl->programs[stage];
    Builder b = {.sc = sc,
                 .lay = wl->layout,
                 .v = sc->virtual_stages,
                 .chunks = sc->tp > 1 ? sc->tp_overlap_chunks : 0,
                 .fw = framework_get(sc->framework),
                 .dev = dev,
                 .pg = pg,
                 .stage = stage,
                 .last_dp = NO_TASK,
                 .last_hsdp = NO_TASK,
                 .last_compute = NO_TASK,
                 .p2p_block = {NO_TASK, NO_TASK, NO_TASK, NO_TASK},
                 .batched = pp_batch_enabled(sc),
                 .ds_steps = pp_ds_steps(sc),
                 .batch_in = {NO_TASK, NO_TASK},
                 .batch_out_micro = {-1, -1},
                 .wgrad_input = NO_TASK,
                 .bucket_ready = NO_TASK,
                 .moe_expert_ready = NO_TASK,
                 .xbucket_ready = NO_TASK,
                 .sync_layers = sc->sync_each_layer && sc->recompute == RECOMPUTE_FULL,
                 .loss = g_new(guint32, sc->grad_accum),
                 .vshape = schedule_get(sc->schedule)->vshape,
                 .turn = g_new(guint32, sc->grad_accum),
                 .tasks = bufs->tasks,
                 .deps = bufs->deps,
                 .dep_of = bufs->dep_of};
    memcpy(b.streams, bufs->streams, sizeof b.streams);
    b.tasks.n = b.deps.n = b.dep_of.n = 0;
    for (int s = 0; s < STREAM_COUNT; s++)
        b.streams[s].n = 0;
    for (int mb = 0; mb < sc->grad_accum; mb++)
        b.loss[mb] = b.turn[mb] = NO_TASK;
    /* chunk c of this stage is virtual stage c pp + stage of pp v (Narayanan et al. SC21: stage s
     * holds layers s, s + p, s + 2p, ... in units of L / (p v)), or in a V chunk 1 is 2 pp - 1 -
     * stage (schedule_virtual_stage); one chunk without interleaving */
    b.units = g_array_new(FALSE, FALSE, sizeof(ParamUnit));
    b.chunk_first = g_new(guint, b.v + 1);
    for (int c = 0; c < b.v; c++) {
        b.chunk_first[c] = b.units->len;
        g_autoptr(GArray) cu =
            model_stage_units_ep(&sc->model, sc->seq_len, sc->tp, sc->ep, sc->pp * b.v,
                                 schedule_virtual_stage(b.vshape, sc->pp, stage, c));
        g_array_append_vals(b.units, cu->data, cu->len);
    }
    b.chunk_first[b.v] = b.units->len;
    b.e = model_elem_bytes(sc->precision);
    FrameworkBytes fbytes = framework_bytes(sc->framework, sc->zero, sc->precision);
    b.ge = fbytes.reduce;
    b.pe = fbytes.gather;
    b.unit_buckets = b.fw->reduce_per_unit && sc->zero >= 2;
    b.logger = sc->comms_logger && sc->framework == FW_DEEPSPEED; /* DeepSpeed's alone */
    int tokens = workload_tokens(sc); /* of each sequence, on this rank */
    b.act_bytes = (double)sc->micro_batch * tokens * sc->model.hidden * b.e;
    b.ce_bytes = (double)sc->micro_batch * tokens * 4;
    for (int s = 0; s < SEG_COUNT; s++) {
        b.fwd[s] = segment_time(sc, dev, s, PASS_FWD, s == SEG_ATTN ? &b.attn_core : NULL, &b.ncore,
                                &b.nfwd[s], &b.prod[s], &b.chunk[s], &b.wcast[s], &b.nwcast[s]);
        b.bwd[s] =
            segment_time(sc, dev, s, PASS_BWD, NULL, NULL, &b.nbwd[s], NULL, NULL, NULL, NULL);
    }
    blocks_prepare(&b); /* the parallelisms' plug-ins, once the segments' times are known */
    /* Megatron-LM skipped its pipeline scatter-gather under sequence parallelism, whose p2p
     * already carries 1/t (p2p_communication.py: "and not args.sequence_parallel") */
    b.sg = sc->pp_scatter_gather && !b.sp && layout_group_size(b.lay, DIM_TP) > 1;
    /* the host's operators per kernel, so that a dense layer dispatches what model_host.c
     * measured */
    double kf = b.nfwd[SEG_ATTN] + b.nfwd[SEG_MLP] + b.nwcast[SEG_ATTN] + b.nwcast[SEG_MLP],
           kb = b.nbwd[SEG_ATTN] + b.nbwd[SEG_MLP];
    b.host_per_kernel[0] = model_layer_host_ops(&sc->model, FALSE, FALSE) / MAX(kf, 1.0);
    b.host_per_kernel[1] = model_layer_host_ops(&sc->model, TRUE, FALSE) / MAX(kb, 1.0);
    b.host_per_kernel[2] = model_layer_host_ops(&sc->model, TRUE, TRUE) / MAX(kb, 1.0);
    b.split = schedule_get(sc->schedule)->split;
    if (b.split) /* after the host's rates: B and W kernels dispatch alike */
        wgrad_prepare(&b, dev);
    else if (b.fw->dgrad_overlap && layout_group_size(b.lay, DIM_TP) > 1)
        wgrad_dgrad_prepare(&b, dev);
    /* gradients and the optimizer's partitions: over the group each class's parallelisms give
     * (workload_grad_dim: the dense parameters' the data-parallel group with context
     * parallelism, dp x cp ranks; the experts' the expert-data-parallel group, dp / ep) */
    b.grad_dim = workload_grad_dim(sc, PARAMS_DENSE);
    b.xgrad_dim = workload_grad_dim(sc, PARAMS_EXPERT);
    int dpc = layout_group_size(b.lay, b.grad_dim), xdp = layout_group_size(b.lay, b.xgrad_dim);
    b.hooks = b.fw->reduce_per_owner && (sc->zero == 1 || sc->zero == 2) && dpc > 1;
    pg->params = 0;
    pg->gathered_peak = 0;
    double expert_params = 0; /* of pg->params, the experts': ZeRO partitions them over dp/ep */
    for (guint i = 0; i < b.units->len; i++) {
        pg->params += g_array_index(b.units, ParamUnit, i).params;
        expert_params += model_unit_expert_params(&sc->model, &g_array_index(b.units, ParamUnit, i),
                                                  sc->tp, sc->ep);
    }
    /* DeepSpeed's partitions: the flat group split in dp equal parts (stage_1_and_2.py
     * partition_size; its alignment padding, a few elements, left out) */
    b.part_params = ceil((pg->params - expert_params) / dpc);
    b.xpart_params = ceil(expert_params / xdp);

    g_autoptr(GArray) passes =
        schedule_passes(sc->schedule, sc->pp, stage, sc->grad_accum, sc->virtual_stages);
    pass_plan(&b, passes);
    for (guint k = 0; k < passes->len; k++) {
        const PassRef *pr = &g_array_index(passes, PassRef, k);
        if (pr->wgrad)
            wgrad_pass(&b, pr->micro, pr->chunk, pr->micro == sc->grad_accum - 1,
                       k + 1 == passes->len);
        else if (pr->fwd)
            forward_pass(&b, pr->micro, pr->chunk);
        else
            backward_pass(&b, pr->micro, pr->chunk, pr->micro == sc->grad_accum - 1,
                          k + 1 == passes->len);
        pass_after(&b, passes, (int)k);
    }
    pass_finish(&b);

    /* Optimizer step over the local (ZeRO: partitioned; FSDP HYBRID_SHARD: within the shard
     * group) parameters, once gradients are reduced: FSDP's _post_backward_final_callback
     * (_runtime_utils.py) makes the compute stream wait for the post-backward stream and, with
     * HSDP, for _all_reduce_stream. The host synchronises before it (executor.c: the overflow
     * check). */
    b.sync_next = TRUE;
    int shard = sc->fsdp_shard > 0 ? sc->fsdp_shard : dpc;
    double opt_params =
        sc->zero >= 1 ? (pg->params - expert_params) / shard + expert_params / xdp : pg->params;
    guint32 opt = compute_k(&b, device_optimizer_time(dev, opt_params, sc->precision), 1,
                            PHASE_OPTIMIZER, -2, -1, b.last_dp, b.last_hsdp);
    gboolean fsdp2 = sc->zero == 2 && b.fw->zero2_gathers_in_forward; /* gathers in forward */
    if ((sc->zero == 1 || sc->zero == 2) && !fsdp2) { /* the updated parameters, in buckets */
        double open = 0;
        for (guint i = 0; i < b.units->len; i++) {
            const ParamUnit *u = &g_array_index(b.units, ParamUnit, i);
            open += u->params - model_unit_expert_params(&sc->model, u, sc->tp, sc->ep);
            if (open * b.e >= sc->bucket_bytes || i + 1 == b.units->len) {
                collective(&b, COLL_ALLGATHER, b.grad_dim, open * b.e, PHASE_PARAMS, -2, -1, opt);
                open = 0;
            }
        }
        for (guint i = 0; i < b.units->len && expert_params > 0; i++) { /* the experts' */
            open += model_unit_expert_params(&sc->model, &g_array_index(b.units, ParamUnit, i),
                                             sc->tp, sc->ep);
            if (open > 0 && (open * b.e >= sc->bucket_bytes || i + 1 == b.units->len)) {
                collective(&b, COLL_ALLGATHER, b.xgrad_dim, open * b.e, PHASE_PARAMS, -2, -1, opt);
                open = 0;
            }
        }
    }
    /* the arrays into the arena at their size; the buffers stay for the next stage */
    pg->ntasks = b.tasks.n;
    pg->tasks = bigarena_dup(wl->arena, b.tasks.v, (size_t)b.tasks.n * sizeof(Task));
    pg->deps = bigarena_dup(wl->arena, b.deps.v, (size_t)b.deps.n * sizeof(guint32));
    for (int s = 0; s < STREAM_COUNT; s++) {
        pg->nstream[s] = b.streams[s].n;
        pg->streams[s] =
            bigarena_dup(wl->arena, b.streams[s].v, (size_t)b.streams[s].n * sizeof(guint32));
    }
    bufs->tasks = b.tasks;
    bufs->deps = b.deps;
    bufs->dep_of = b.dep_of;
    memcpy(bufs->streams, b.streams, sizeof b.streams);
    if (b.uses)
        g_array_unref(b.uses);
    g_free(b.bucket_tensors.v);
    g_free(b.loss);
    g_free(b.turn);
    g_free(b.chunk_first);
    g_array_unref(b.units);
    blocks_release(&b);
}

Workload *workload_new(const Scenario *sc, const Topology *topo) {
    Workload *wl = g_new0(Workload, 1);
    wl->sc = sc;
    wl->topo = topo;
    wl->layout = layout_new(workload_layout_shape(sc));
    wl->programs = g_new0(Program, sc->pp);
    wl->arena = bigarena_new();
    BuildBufs bufs = {0};
    for (int s = 0; s < sc->pp; s++)
        build_stage(wl, s, &bufs);
    g_free(bufs.tasks.v);
    g_free(bufs.deps.v);
    g_free(bufs.dep_of.v);
    for (int s = 0; s < STREAM_COUNT; s++)
        g_free(bufs.streams[s].v);
    return wl;
}

void workload_free(Workload *wl) {
    if (!wl)
        return;
    bigarena_free(wl->arena);
    g_free(wl->programs);
    layout_free(wl->layout);
    g_free(wl);
}

const Scenario *workload_scenario(const Workload *wl) {
    return wl->sc;
}

const Program *workload_program(const Workload *wl, int stage) {
    return &wl->programs[stage];
}

/* The DP replicas of a stage that must be simulated together for one block of them to stand for
 * the others under pipeline parallelism: replicas that share a node send their activations
 * through the same node links and NICs, which one replica standing for the others would leave
 * idle. So one node's worth of replicas, all of them where a node's share does not divide dp
 * (ranks fill nodes in layout order, layout.h); 1 without pipelines or where a replica's stage
 * fills a node. */
static int pipeline_span(const Scenario *sc) {
    int width = sc->gpus / sc->pp / sc->dp; /* a replica's ranks of a stage (tp x cp: layout.h) */
    if (sc->pp == 1 || sc->topo.gpus_per_node <= width)
        return 1;
    int per_node = sc->topo.gpus_per_node / width; /* replicas of a stage a node can hold */
    if (sc->topo.gpus_per_node % width != 0 || per_node >= sc->dp || sc->dp % per_node != 0)
        return sc->dp;
    return per_node;
}

/* The DIM_DP_INTRA block a scheme names for itself: FSDP's HYBRID_SHARD its shard group,
 * ZeRO++ its hpZ partition (zeropp_replica_span); 1 where neither does. */
static int scheme_span(const Scenario *sc) {
    return sc->fsdp_shard > 1 ? sc->fsdp_shard : zeropp_replica_span(sc);
}

/* The DP replicas simulated together when replicas are deduplicated (one DIM_DP_INTRA block):
 * the scheme's own block (which workload_replicas_exact checks against pipeline_span), else
 * pipeline_span. */
static int replica_span(const Scenario *sc) {
    int z = scheme_span(sc);
    return z > 1 ? z : pipeline_span(sc);
}

gboolean workload_replicas_exact(const Scenario *sc) {
    if (blocks_replicas_differ(sc)) /* a parallelism's own claim (parallelism.h) */
        return FALSE;
    int z = scheme_span(sc);
    return z <= 1 || z % pipeline_span(sc) == 0;
}

LayoutShape workload_layout_shape(const Scenario *sc) {
    LayoutShape shape = {.vpp = sc->virtual_stages, .dp_local = replica_span(sc)};
    blocks_shape(sc, &shape); /* the plug-ins' dimensions */
    return shape;
}

const Layout *workload_layout(const Workload *wl) {
    return wl->layout;
}

double workload_model_flops(const Scenario *sc) {
    /* forward + backward (2x forward), no recomputation: the MFU convention of Chowdhery et al.
     * 2022 and Narayanan et al. 2021 */
    return 3.0 * model_forward_flops(&sc->model, 1, sc->seq_len, sc->tp) * (double)sc->global_batch;
}

double workload_neox_flops(const Scenario *sc) {
    return model_neox_flops(&sc->model, sc->global_batch, sc->seq_len, sc->tp,
                            sc->recompute == RECOMPUTE_FULL);
}

/* Where a data-parallel reduction keeps gradients beside the .grad tensors, bytes, for `grads`
 * bytes of the stage's gradients:
 * - DeepSpeed ZeRO-1/2 (stage_1_and_2.py backward()): the IPG buffer buf_0 of reduce_bucket_size
 *   elements, and buf_1 as well with overlap_comm ("Use double buffers to avoid data access
 *   conflict when overlap_comm is enabled"), which the modelled overlap is (GPT-NeoX sets it);
 *   ZeRO-3 (stage3.py) one flat IPG buffer; stage 0 buffered_allreduce_fallback's flat copy of a
 *   bucket. At most the gradients themselves each.
 * - Megatron-LM: its buckets are views into the grad buffer (param_and_grad_buffer.py), which
 *   is the gradients counted already: nothing more.
 * - PyTorch DDP (reducer.cpp, gradient_as_bucket_view=False, the default): every bucket's flat
 *   gradients tensor is allocated when DDP is built, a second copy of all gradients (the DDP
 *   documentation: the saving of gradient_as_bucket_view "will be equal to the total gradients
 *   size"). */
static double grad_buffers_bytes(const Scenario *sc, double grads) {
    switch (sc->framework) {
    case FW_MEGATRON:
        return 0;
    case FW_PYTORCH: /* FSDP (zero 2, 3) has no buckets: the flat gradient is the unit's */
        return sc->zero >= 2 ? 0 : grads;
    case FW_DEEPSPEED:
    default:
        return (sc->zero == 1 || sc->zero == 2 ? 2 : 1) * MIN(sc->bucket_bytes, grads);
    }
}

/* Activations under a split backward (Qi et al. 2024, Sec. 3 and Table 1): a micro-batch holds
 * M_B from its F until its B (what model_memory counts per micro-batch in flight, the
 * ends' included) and M_W from its B until its W (workload_wgrad_held_bytes), so the stage's peak
 * is the working set plus the peak over its passes of M_B (F without B) + M_W (B without W),
 * counted per chunk: each holds its share of the layers, and the chunk with an end its
 * embedding's or logits' activations (ZB-V's stage 0: the embedding in chunk 0, the logits in
 * chunk 1). */
static ModelMemory split_memory(const Scenario *sc, MemoryCase *mc, ModelMemory m,
                                const GArray *passes) {
    int v = sc->virtual_stages, s = mc->stage;
    g_assert(v <= 2);
    mc->inflight = mc->ends_inflight = mc->head_inflight = 0;
    double base = model_memory(&sc->model, mc).activations_bytes;
    mc->inflight = 1;
    double layers = model_memory(&sc->model, mc).activations_bytes - base;
    mc->inflight = 0;
    mc->ends_inflight = 1;
    double ends = model_memory(&sc->model, mc).activations_bytes - base;
    mc->ends_inflight = 0;
    mc->head_inflight = 1;
    double head = model_memory(&sc->model, mc).activations_bytes - base;
    double f[2], w[2];
    for (int c = 0; c < v; c++) {
        /* the end the ends term counts: without a V the embedding's (chunk 0 of stage 0) or the
         * logits' (last chunk of the last stage); in a V the embedding's, the logits' apart */
        gboolean end = mc->vshape ? c == 0 : c == (s == 0 ? 0 : v - 1);
        f[c] = layers / v + (end ? ends : 0) + (mc->vshape && c == 1 ? head : 0);
        w[c] = workload_wgrad_chunk_bytes(sc, s, c);
    }
    double act = base + schedule_peak_held_chunks(passes, f, w);
    m.total_bytes += act - m.activations_bytes;
    m.activations_bytes = act;
    return m;
}

ModelMemory workload_memory(const Workload *wl) {
    const Scenario *sc = wl->sc;
    ModelMemory best = {0};
    int dense_ranks = layout_group_size(wl->layout, workload_grad_dim(sc, PARAMS_DENSE));
    for (int s = 0; s < sc->pp; s++) {
        /* Activations held at the schedule's peak, counted on the pass list itself: GPipe every
         * micro-batch (pp = 1 included), 1F1B p - stage (1 at pp 1), interleaved 1F1B
         * 2 (p - s - 1) + (v - 1) p + 1 chunk passes of L / (p v) layers each, which on the first
         * stage is the p micro-batches of 1F1B times 1 + (p - 1) / (p v) (Korthikanti et al. 2022,
         * Sec. 4.2.3). */
        const Program *pg = &wl->programs[s];
        int v = sc->virtual_stages;
        g_autoptr(GArray) passes = schedule_passes(sc->schedule, sc->pp, s, sc->grad_accum, v);
        /* the embedding's activations live in chunk 0 of stage 0, the logits in chunk v - 1 of
         * the last stage (in a V, chunk 1 of stage 0): those chunks' own micro-batches in
         * flight */
        int end_chunk = s == 0 ? 0 : v - 1;
        gboolean vshape = schedule_get(sc->schedule)->vshape;
        MemoryCase mc = {.seq_len = sc->seq_len,
                         .micro_batch = sc->micro_batch,
                         .tp = sc->tp,
                         .pp = sc->pp,
                         .vpp = sc->virtual_stages,
                         .stage = s,
                         /* ZeRO's partitions (workload_grad_dim); FSDP HYBRID_SHARD's shard
                            group (refused with MoE) */
                         .dp = sc->fsdp_shard > 0 ? sc->fsdp_shard : dense_ranks,
                         .edp = layout_group_size(wl->layout, workload_grad_dim(sc, PARAMS_EXPERT)),
                         .seq_split = workload_seq_split(sc),
                         /* FSDP SHARD_GRAD_OP shards the parameters at rest too; their whole
                            copy is in the gathered buffers */
                         .zero =
                             sc->zero == 2 && framework_get(sc->framework)->zero2_gathers_in_forward
                                 ? 3
                                 : sc->zero,
                         .prec = sc->precision,
                         .rc = sc->recompute,
                         .ep = sc->ep,
                         .inflight = (double)schedule_peak_inflight(passes, -1) / v,
                         .ends_inflight = schedule_peak_inflight(passes, end_chunk),
                         .vshape = vshape,
                         .head_inflight = vshape ? schedule_peak_inflight(passes, 1) : 0,
                         .sp = sc->sequence_parallel};
        FrameworkBytes fb = framework_bytes(sc->framework, sc->zero, sc->precision);
        mc.param_bytes = fb.param;
        mc.grad_bytes = fb.grad;
        mc.opt_bytes = fb.optimizer;
        ModelMemory m = model_memory(&sc->model, &mc);
        if (schedule_get(sc->schedule)->split)
            m = split_memory(sc, &mc, m, passes);
        if (dense_ranks > 1)
            m.buffers_bytes =
                grad_buffers_bytes(sc, pg->params * fb.reduce) + pg->gathered_peak * fb.gather;
        m.hpz_bytes =
            zeropp_secondary_bytes(sc, pg->params, fb.gather); /* ZeRO++ hpZ's second shard */
        m.total_bytes += m.buffers_bytes + m.hpz_bytes;
        if (m.total_bytes > best.total_bytes)
            best = m;
    }
    return best;
}
