/* Sequence parallelism (Korthikanti et al. 2022; Megatron-LM's --sequence-parallel): the TP
 * inventory against its closed form to the byte, the activations against Table 2's
 * sbh(34/t + 5as/(ht)), the replicated ops on s/t tokens, and the emitter as one table entry. */
#include <math.h>
#include <string.h>

#include "device.h"
#include "parallelism.h"
#include "util.h"
#include "watch.h"

/* the plug-ins under test (declared with their table in blocks.c) */
extern const Parallelism par_tp, par_sp;

#define E 2.0 /* fp16 bytes */

static double volume(const SimRun *run, CollOp op) {
    return stats_rank_volume(sim_stats(run), sim_index_of(run, 0), op, DIM_TP);
}

/* Per layer per micro-batch, each of b s h (message) and (t-1)/t of it per rank: forward 2
 * allgathers + 2 reduce-scatters, the same again in full recomputation, backward 4 allgathers
 * (2 output gradients, 2 inputs gathered again for the weight gradients) + 2 reduce-scatters.
 * Embedding: 1 reduce-scatter forward, 1 allgather backward. Head: 1 allgather forward, 1
 * allgather (weight gradient) + 1 reduce-scatter backward; its cross entropy's 3 allreduces of b s
 * fp32 values stay. */
START_TEST(test_sp_inventory) {
    static const char *rc[] = {"training.recompute=full", "training.recompute=none"};
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"parallel.sequence_parallel=true", rc[k], "training.grad_accum=2",
                              NULL};
        g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        double L = sc->model.layers, t = sc->tp, m = sc->grad_accum;
        double unit = (double)sc->micro_batch * sc->seq_len * sc->model.hidden * E * (t - 1) / t;
        double again = k == 0 ? 2 : 0; /* the recomputed forward's */
        double ag = m * (L * (2 + again + 4) + 1 + 2) * unit;
        double rs = m * (L * (2 + again + 2) + 1 + 1) * unit;
        double ar = m * 3 * 2 * (double)sc->micro_batch * sc->seq_len * 4 * (t - 1) / t;
        ck_assert_msg(fabs(volume(run, COLL_ALLGATHER) - ag) < 1.0, "%s: allgather %.0f, want %.0f",
                      rc[k], volume(run, COLL_ALLGATHER), ag);
        ck_assert_msg(fabs(volume(run, COLL_REDUCE_SCATTER) - rs) < 1.0,
                      "%s: reduce-scatter %.0f, want %.0f", rc[k], volume(run, COLL_REDUCE_SCATTER),
                      rs);
        ck_assert_msg(fabs(volume(run, COLL_ALLREDUCE) - ar) < 1.0, "%s: allreduce %.0f, want %.0f",
                      rc[k], volume(run, COLL_ALLREDUCE), ar);
    }
}
END_TEST

/* Table 2 of Korthikanti et al.: with sequence parallelism and selective recomputation a layer
 * keeps sbh 34/t (its 5as/(ht) recomputed), dropout on; the embedding's dropout mask sbh/t; the
 * head's logits 4sbh/t (1 + V/h) (model_memory). With full recomputation a layer keeps its
 * sequence-split input, 2sbh/t, plus one layer rebuilt: sbh(34/t + 5as/(ht)) with both dropouts. */
START_TEST(test_sp_memory) {
    static const char *rc[] = {"training.recompute=selective", "training.recompute=full"};
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"parallel.sequence_parallel=true", rc[k], "model.hidden_dropout=0.1",
                              "model.attention_dropout=0.1", NULL};
        g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        double s = sc->seq_len, b = sc->micro_batch, h = sc->model.hidden, a = sc->model.heads;
        double t = sc->tp, L = sc->model.layers, sbh = s * b * h;
        double V = (double)model_padded_vocab(&sc->model, sc->tp);
        double ends = sbh / t + 4 * sbh / t * (1 + V / h);
        double want = k == 0 ? L * sbh * 34 / t + ends
                             : L * 2 * sbh / t + sbh * (34 / t + 5 * a * s / (h * t)) + ends;
        double got = sim_summary(run)->memory.activations_bytes;
        ck_assert_msg(fabs(got - want) < 1.0, "%s: activations %.0f, want %.0f", rc[k], got, want);
    }
}
END_TEST

/* Layer norms, dropout and residual adds run on s/t tokens; GEMMs and the attention core do not
 * change. */
START_TEST(test_sp_split_ops) {
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", NULL);
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(&sc->model, SEG_MLP, PASS_FWD, 4, 2048, 8, PREC_FP16, ops);
    int split = 0;
    for (guint i = 0; i < ops->len; i++) {
        ModelOp op = g_array_index(ops, ModelOp, i), was = op;
        model_op_sequence_split(&op, 8);
        gboolean norm = !strcmp(op.name, "layernorm") || !strcmp(op.name, "bias_residual");
        ck_assert_double_eq_tol(op.bytes, norm ? was.bytes / 8 : was.bytes, 1e-9);
        ck_assert_double_eq(op.flops, norm ? was.flops / 8 : was.flops);
        split += norm;
    }
    ck_assert_int_eq(split, 2);
}
END_TEST

/* Sequence parallelism is a plug-in of its own, enabled by the scenario only where TP splits the
 * sequence: at TP 1 the plain tensor-parallel one runs (nothing to split). */
START_TEST(test_sp_emitter) {
    ck_assert_str_eq(par_sp.name, "sp");
    ck_assert_str_eq(par_tp.name, "tp");
    const char *one[] = {"parallel.sequence_parallel=true", "parallel.tp=1", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_tp.yaml", one);
    ck_assert(!par_sp.enabled(a));
    const char *two[] = {"parallel.sequence_parallel=true", "parallel.tp=2", NULL};
    g_autoptr(Scenario) a2 = load_ok("1.3B_tp.yaml", two);
    ck_assert(par_sp.enabled(a2) && par_tp.enabled(a2));
    g_autoptr(SimRun) ra = run_ok(a, -1);
    const char *off[] = {"parallel.tp=1", NULL};
    g_autoptr(Scenario) b = load_ok("1.3B_tp.yaml", off);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    ck_assert_int_eq(sim_summary(ra)->iteration, sim_summary(rb)->iteration);
}
END_TEST

/* --- tensor-parallel communication overlap (parallel.tp_comm_overlap, a T3-style what-if) --- */

static double tp_row(const SimRun *run, CollOp op, double *calls) {
    GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
    double vol = 0;
    for (guint k = 0; k < rows->len; k++) {
        const CommRow *c = &g_array_index(rows, CommRow, k);
        if (c->op == op && c->dim == DIM_TP) {
            vol = c->volume_bytes;
            *calls = c->calls;
        }
    }
    stats_rows_free(rows);
    return vol;
}

/* The producer GEMM of seg on 1.3B_tp's shapes: its time whole (*whole) and k chunks' (returned).
 */
static SimTime chunks_time(const Scenario *sc, Segment seg, int k, SimTime *whole) {
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(&sc->model, seg, PASS_FWD, sc->micro_batch, sc->seq_len, sc->tp,
                      sc->precision, ops);
    for (guint i = 0; i < ops->len; i++) {
        const ModelOp *op = &g_array_index(ops, ModelOp, i);
        if (strcmp(op->name, model_segment_producer(seg)) == 0) {
            *whole = device_op_time(&sc->topo.device, op, sc->precision);
            ModelOp c = model_op_row_chunk(op, k, model_elem_bytes(sc->precision));
            return k * device_op_time(&sc->topo.device, &c, sc->precision);
        }
    }
    ck_abort_msg("no producer GEMM");
    return 0;
}

/* Splitting the producer GEMMs into k chunks moves the same bytes in k times the calls (each
 * overlapped allreduce in k shares: 2 blocks x L layers x (forward + recomputation) per
 * micro-batch, k - 1 more calls each), and costs exactly the chunks' extra compute: per block
 * k x time(ceil(m/k) rows) - time(m rows), to the picosecond (interference off, so hidden
 * communication slows nothing). */
START_TEST(test_tp_overlap_inventory_and_cost) {
    const char *off[] = {"sim.interference=false", NULL};
    const char *on[] = {"sim.interference=false", "parallel.tp_comm_overlap=4", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_tp.yaml", off);
    g_autoptr(Scenario) b = load_ok("1.3B_tp.yaml", on);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    double ca = 0, cb = 0, va = tp_row(ra, COLL_ALLREDUCE, &ca),
           vb = tp_row(rb, COLL_ALLREDUCE, &cb);
    double L = a->model.layers, m = a->grad_accum, k = 4;
    ck_assert_double_eq_tol(vb, va, 1.0);
    ck_assert_double_eq_tol(cb - ca, 2 * L * 2 * m * (k - 1), 1e-9);
    SimTime pa, pm;
    SimTime qa = chunks_time(a, SEG_ATTN, 4, &pa), qm = chunks_time(a, SEG_MLP, 4, &pm);
    SimTime want = (SimTime)(2 * L * m) * ((qa - pa) + (qm - pm));
    SimTime got = sim_summary(rb)->critical.compute - sim_summary(ra)->critical.compute;
    ck_assert_msg(got == want, "extra compute %" G_GINT64_FORMAT " ps, want %" G_GINT64_FORMAT, got,
                  want);
    ck_assert_int_gt(want, 0); /* smaller GEMMs are less efficient */
    /* Whether it pays is the what-if's question: at 4 chunks the shares' per-call latencies
     * (RCCL's base and hop latencies, 4x the calls) outweigh what hides; at 2 some of the
     * allreduce time hides under the second chunk and less is exposed than without (where all
     * of it is). The balance depends on how fast the GEMMs are: pinned to the MI250X's
     * uncalibrated rates this was written for (ceiling 0.72, compute_scale 1); with the
     * calibrated, slower GEMMs 4 chunks hide more than their latencies cost. */
    const char *fast[] = {"topology.device.gemm.ceiling=0.72",
                          "topology.device.calibration.compute_scale=1", NULL};
    const char *off2[] = {"sim.interference=false", fast[0], fast[1], NULL};
    const char *four[] = {"sim.interference=false", "parallel.tp_comm_overlap=4", fast[0], fast[1],
                          NULL};
    const char *two[] = {"sim.interference=false", "parallel.tp_comm_overlap=2", fast[0], fast[1],
                         NULL};
    g_autoptr(Scenario) a2 = load_ok("1.3B_tp.yaml", off2);
    g_autoptr(Scenario) b2 = load_ok("1.3B_tp.yaml", four);
    g_autoptr(Scenario) c = load_ok("1.3B_tp.yaml", two);
    g_autoptr(SimRun) ra2 = run_ok(a2, -1);
    g_autoptr(SimRun) rb2 = run_ok(b2, -1);
    g_autoptr(SimRun) rc = run_ok(c, -1);
    ck_assert_int_gt(sim_summary(rb2)->critical.exposed, sim_summary(ra2)->critical.exposed);
    ck_assert_int_lt(sim_summary(rc)->critical.exposed, sim_summary(ra2)->critical.exposed);
}
END_TEST

/* The time of op `name` in segment seg's backward, as the device runs it. */
static SimTime bwd_op_time(const Scenario *sc, Segment seg, const char *name) {
    g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(&sc->model, seg, PASS_BWD, sc->micro_batch, sc->seq_len, sc->tp,
                      sc->precision, ops);
    for (guint i = 0; i < ops->len; i++) {
        ModelOp *op = &g_array_index(ops, ModelOp, i);
        if (strcmp(op->name, name) == 0) {
            if (sc->sequence_parallel)
                model_op_sequence_split(op, sc->tp);
            return device_op_time(&sc->topo.device, op, sc->precision);
        }
    }
    ck_abort_msg("no %s", name);
    return 0;
}

/* Megatron-LM's column-parallel backward (framework.c dgrad_overlap, blocks.c block_backward;
 * megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication):
 * each block's backward is three compute tasks on rank 0, the input gradient's reduction
 * (allreduce; reduce-scatter under sequence parallelism) starts as the first ends, beside the
 * second (the qkv or mlp_fc1 weight-gradient GEMM, which under sequence parallelism also waits
 * for the gather of its stored input), and the third (the norm's backward) starts at the later
 * of the two ends, to the picosecond. Under DeepSpeed (GPT-NeoX's mpu) one task a block and the
 * reduction after it. Host and interference off, 1.3B, TP 8 on one node, no recomputation. */
START_TEST(test_dgrad_overlap) {
    static const char *const sp[] = {"parallel.sequence_parallel=false",
                                     "parallel.sequence_parallel=true"};
    static const char *const fw[] = {"training.framework=megatron", "training.framework=deepspeed"};
    for (int f = 0; f < 2; f++)
        for (int q = 0; q < (f == 0 ? 2 : 1); q++) {
            const char *sets[] = {fw[f],
                                  sp[q],
                                  "training.recompute=none",
                                  "sim.host=false",
                                  "sim.interference=false",
                                  "training.comms_logger=false",
                                  "training.synchronize_each_layer=false",
                                  NULL};
            g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
            Watch w;
            g_autoptr(SimRun) run = watched(sc, &w);
            CollOp red_op = q ? COLL_REDUCE_SCATTER : COLL_ALLREDUCE;
            int blocks = 0;
            for (int layer = 0; layer < sc->model.layers; layer++) {
                const Ran *c[8], *red[4], *ag[8];
                int nc = 0, nred = 0, nag = 0;
                for (guint i = 0; i < w.ran->len; i++) {
                    const Ran *r = &g_array_index(w.ran, Ran, i);
                    if (r->t.phase != PHASE_BWD || r->t.layer != layer)
                        continue;
                    if (r->t.kind == TASK_COMPUTE && nc < 8)
                        c[nc++] = r;
                    else if (r->t.kind == TASK_COLL && r->t.op == red_op && nred < 4)
                        red[nred++] = r;
                    else if (r->t.kind == TASK_COLL && r->t.op == COLL_ALLGATHER && nag < 8)
                        ag[nag++] = r;
                }
                ck_assert_int_eq(nred, 2); /* the MLP's, then the attention's */
                if (f == 1) {              /* after each block's one task */
                    ck_assert_int_eq(nc, 2);
                    for (int j = 0; j < 2; j++)
                        ck_assert_int_eq(red[j]->begin, c[j]->end);
                    continue;
                }
                ck_assert_int_eq(nc, 6);
                for (int j = 0; j < 2; j++) {
                    const Ran *d = c[3 * j], *wg = c[3 * j + 1], *tail = c[3 * j + 2];
                    Segment seg = j == 0 ? SEG_MLP : SEG_ATTN;
                    SimTime want_w = bwd_op_time(sc, seg, j == 0 ? "mlp_fc1_wgrad" : "qkv_wgrad");
                    ck_assert_int_eq(wg->end - wg->begin, want_w);
                    ck_assert_int_eq(red[j]->begin, d->end);
                    SimTime ready = d->end;
                    if (q) { /* the block's gathers: its output gradient's, its stored input's */
                        ck_assert_int_eq(nag, 4);
                        ready = MAX(ready, ag[2 * j + 1]->end);
                    }
                    ck_assert_int_eq(wg->begin, ready);
                    ck_assert_int_eq(tail->begin, MAX(wg->end, red[j]->end));
                    blocks++;
                }
            }
            ck_assert_int_eq(blocks, f == 0 ? 2 * sc->model.layers : 0);
            g_array_unref(w.ran);
        }
}
END_TEST

/* Pipeline sends carry the stage's output as the sequence-parallel region holds it: b s h / t
 * per rank with sequence parallelism (Megatron-core schedules.py get_tensor_shapes), b s h
 * without. Stage 0 of TP 4 x PP 2 sends one activation per micro-batch. */
START_TEST(test_sp_pipeline_bytes) {
    for (int q = 0; q < 2; q++) {
        const char *sets[] = {q ? "parallel.sequence_parallel=true"
                                : "parallel.sequence_parallel=false",
                              "parallel.tp=4",
                              "parallel.pp=2",
                              "training.grad_accum=4",
                              "training.framework=megatron",
                              NULL};
        g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        double act = (double)sc->micro_batch * sc->seq_len * sc->model.hidden * E;
        double want = sc->grad_accum * act / (q ? sc->tp : 1);
        double got = stats_rank_volume(sim_stats(run), sim_index_of(run, 0), COLL_SEND, DIM_PP);
        ck_assert_msg(fabs(got - want) < 1.0, "sp %d: sent %.0f, want %.0f", q, got, want);
    }
}
END_TEST

/* Rank 0's pipeline sends over the run, bytes. */
static double sent_pp(const SimRun *run) {
    return stats_rank_volume(sim_stats(run), sim_index_of(run, 0), COLL_SEND, DIM_PP);
}

/* Every backward receive of rank 0 in w is followed by `gathers` TP allgathers of its micro-batch
 * (layer -2), the first starting as the receive ends and each next as the one before ends, and the
 * micro-batch's first backward kernel starts once the last has ended and the compute stream (and
 * the sends waited for before it: workload.c p2p) is free. Returns the receives checked; *gated
 * counts those whose last gather, not the stream, set the kernel's start. */
static int check_backward_gathers(const Watch *w, int gathers, int *gated) {
    int checked = 0;
    *gated = 0;
    for (guint i = 0; i < w->ran->len; i++) {
        const Ran *r = &g_array_index(w->ran, Ran, i);
        if (r->t.kind != TASK_RECV || r->t.phase != PHASE_BWD)
            continue;
        const Ran *g[2] = {NULL, NULL}, *c = NULL;
        int ng = 0;
        for (guint j = 0; j < w->ran->len; j++) {
            const Ran *q = &g_array_index(w->ran, Ran, j);
            if (q->t.micro != r->t.micro || q->t.phase != PHASE_BWD)
                continue;
            if (ng < gathers && q->t.kind == TASK_COLL && q->t.op == COLL_ALLGATHER &&
                q->t.layer == -2)
                g[ng++] = q;
            if (!c && q->t.kind == TASK_COMPUTE)
                c = q;
        }
        ck_assert_int_eq(ng, gathers);
        ck_assert_ptr_nonnull(c);
        SimTime prev = 0;
        for (guint j = 0; j < w->ran->len; j++) {
            const Ran *q = &g_array_index(w->ran, Ran, j);
            if ((q->t.kind == TASK_COMPUTE || q->t.kind == TASK_SEND) && q->begin < c->begin)
                prev = MAX(prev, q->end);
        }
        ck_assert_int_eq(g[0]->begin, r->end);
        for (int k = 1; k < gathers; k++)
            ck_assert_int_eq(g[k]->begin, g[k - 1]->end);
        ck_assert_int_eq(c->begin, MAX(g[gathers - 1]->end, prev));
        *gated += g[gathers - 1]->end > prev;
        checked++;
    }
    return checked;
}

/* 2021-2022 Megatron-LM's pipeline scatter-gather (parallel.pipeline_scatter_gather; workload.c
 * sg_gather): stage 0 of TP 4 x PP 2 without sequence parallelism sends 1/t of each activation,
 * and each gradient it receives is all-gathered over TP (b s h, (t-1)/t of it per rank) before
 * the backward reads it: on rank 0, host and interference off, every backward receive's gather
 * starts as the receive ends and the micro-batch's first backward kernel as the gather ends. */
START_TEST(test_pipeline_scatter_gather) {
#define SG_SETS                                                                                    \
    "parallel.sequence_parallel=false", "parallel.tp=4", "parallel.pp=2", "training.grad_accum=4", \
        "training.framework=megatron", "training.recompute=none", "sim.host=false",                \
        "sim.interference=false"
    const char *base[] = {SG_SETS, NULL};
    const char *sg[] = {SG_SETS, "parallel.pipeline_scatter_gather=true", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_tp.yaml", base);
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", sg);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    Watch w;
    g_autoptr(SimRun) run = watched(sc, &w);
    double t = sc->tp, m = sc->grad_accum;
    double act = (double)sc->micro_batch * sc->seq_len * sc->model.hidden * E;
    double sent = sent_pp(run);
    ck_assert_msg(fabs(sent - m * act / t) < 1.0, "sent %.0f, want %.0f", sent, m * act / t);
    double ag = volume(run, COLL_ALLGATHER) - volume(ra, COLL_ALLGATHER);
    ck_assert_msg(fabs(ag - m * act * (t - 1) / t) < 1.0, "gathered %.0f more, want %.0f", ag,
                  m * act * (t - 1) / t);
    int gated, checked = check_backward_gathers(&w, 1, &gated);
    ck_assert_int_eq(checked, sc->grad_accum);
    ck_assert_int_gt(gated, 0); /* the gather, not the stream, set some start */
    g_array_unref(w.ran);
    const char *pt[] = {"parallel.pipeline_scatter_gather=true", "training.framework=pytorch",
                        NULL};
    load_fails("1.3B_tp.yaml", pt, "it needs training.framework: megatron or deepspeed");
}
END_TEST

/* DeepSpeed's pipeline engine partitions its pipeline tensors at TP > 1 (framework.c: the
 * default of parallel.pipeline_scatter_gather there): stage 0 of TP 4 x PP 2 sends 1/t of each
 * activation, and before each backward all-gathers over TP first its own output, of which it kept
 * 1/t, then the received gradient (_exec_backward_pass): 2 m b s h (t-1)/t gathered per rank more
 * than with pipeline.pipe_partitioned off. On rank 0, host and interference off, the first gather
 * starts as the gradient's receive ends, the second as the first ends, and the micro-batch's
 * first backward kernel once the second has ended and the stream is free. */
START_TEST(test_deepspeed_pipe_partitioned) {
#define DS_SETS                                                                                    \
    "parallel.tp=4", "parallel.pp=2", "training.grad_accum=4", "training.framework=deepspeed",     \
        "training.recompute=none", "training.comms_logger=false",                                  \
        "training.synchronize_each_layer=false", "sim.host=false", "sim.interference=false"
    const char *off[] = {DS_SETS, "parallel.pipeline_scatter_gather=false", NULL};
    const char *on[] = {DS_SETS, NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_tp.yaml", off);
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", on);
    ck_assert(sc->pp_scatter_gather && !a->pp_scatter_gather);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    Watch w;
    g_autoptr(SimRun) run = watched(sc, &w);
    double t = sc->tp, m = sc->grad_accum;
    double act = (double)sc->micro_batch * sc->seq_len * sc->model.hidden * E;
    double sent = sent_pp(run), sent_off = sent_pp(ra);
    ck_assert_msg(fabs(sent - m * act / t) < 1.0, "sent %.0f, want %.0f", sent, m * act / t);
    ck_assert_msg(fabs(sent_off - m * act) < 1.0, "sent %.0f unpartitioned, want %.0f", sent_off,
                  m * act);
    double ag = volume(run, COLL_ALLGATHER) - volume(ra, COLL_ALLGATHER);
    ck_assert_msg(fabs(ag - 2 * m * act * (t - 1) / t) < 1.0, "gathered %.0f more, want %.0f", ag,
                  2 * m * act * (t - 1) / t);
    int gated, checked = check_backward_gathers(&w, 2, &gated);
    ck_assert_int_eq(checked, sc->grad_accum);
    ck_assert_int_gt(gated, 0); /* the gathers, not the stream, set some start */
    g_array_unref(w.ran);
}
END_TEST

int main(void) {
    Suite *s = suite_create("sequence");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_sp_inventory);
    tcase_add_test(tc, test_sp_memory);
    tcase_add_test(tc, test_sp_split_ops);
    tcase_add_test(tc, test_sp_emitter);
    tcase_add_test(tc, test_tp_overlap_inventory_and_cost);
    tcase_add_test(tc, test_dgrad_overlap);
    tcase_add_test(tc, test_sp_pipeline_bytes);
    tcase_add_test(tc, test_deepspeed_pipe_partitioned);
    tcase_add_test(tc, test_pipeline_scatter_gather);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
