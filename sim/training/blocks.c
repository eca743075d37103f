/* blocks: the walker that emits a unit as its blocks and lets the enabled parallelisms wrap them
 * (parallelism.h has the interface and the rules).
 *
 * A transformer layer is its attention block then its MLP block. GPT-NeoX's gpt_j_residual
 * (parallel_residual: megatron/model/transformer.py ParallelTransformerLayer.forward) has both
 * read the layer's input: the attention block's row-parallel output is not reduced on its own
 * (parallel_output), one reduction sums attention + MLP, and the MLP waits for nothing but the
 * compute stream; in backward each block's column-parallel input still reduces its own
 * gradient, and the attention's backward does not wait for the MLP's.
 *
 * Selective recomputation (Korthikanti et al. 2022) redoes the attention core at the start of the
 * attention block's backward: its kernels are added to that block's. */
#include <string.h>

#include "parallelism.h"

/* The plug-ins in wrapping order: tensor parallelism (and its sequence-parallel mode) outermost,
 * so that its conjugate operators sit at a block's ends, then context parallelism, whose
 * attention body they wrap, then expert parallelism, whose MoE body they wrap. Data and pipeline
 * parallelism wrap no block: they come last, data parallelism first (its ZeRO-3 plan precedes
 * the pipeline's first batched exchange) and last to decide a gradient group. */
extern const Parallelism par_tp, par_sp, par_cp, par_ep, par_pp, par_dp;
static const Parallelism *const table[] = {&par_tp, &par_sp, &par_cp, &par_ep, &par_dp, &par_pp};
G_STATIC_ASSERT(G_N_ELEMENTS(table) <= PAR_MAX);

/* Whether the scenario enables p (no enabled hook: always, as data and pipeline parallelism,
 * which act at size 1 too) */
static gboolean on(const Parallelism *p, const Scenario *sc) {
    return !p->enabled || p->enabled(sc);
}

Dim workload_grad_dim(const Scenario *sc, ParamClass c) {
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (table[i]->grad_dim && on(table[i], sc)) {
            Dim d = table[i]->grad_dim(sc, c);
            if (d != DIM_COUNT)
                return d;
        }
    return DIM_DP;
}

StreamId blocks_stream(Dim dim) {
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++) {
        /* DIM_DP is 0 (layout.h): any other plug-in holding it left .dim unset */
        g_assert(table[i]->dim != DIM_DP || table[i] == &par_dp);
        if (table[i]->dim == dim && table[i]->stream != STREAM_COUNT)
            return table[i]->stream;
    }
    return STREAM_DP;
}

void blocks_shape(const Scenario *sc, LayoutShape *shape) {
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (table[i]->size)
            layout_shape_set(shape, table[i]->dim, table[i]->size(sc));
}

gboolean workload_class_reported(const Scenario *sc, Dim cls) {
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (cls != DIM_DP && table[i]->report_class == cls)
            return on(table[i], sc);
    return TRUE;
}

gboolean workload_dim_images(Dim cls) {
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (table[i]->dim == cls)
            return table[i]->dedup_images;
    return FALSE;
}

int workload_seq_split(const Scenario *sc) {
    int n = 1;
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (table[i]->seq_split && on(table[i], sc))
            n *= table[i]->seq_split(sc);
    return n;
}

int workload_tokens(const Scenario *sc) {
    return sc->seq_len / workload_seq_split(sc);
}

gboolean blocks_replicas_differ(const Scenario *sc) {
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (table[i]->replicas_differ && on(table[i], sc) && table[i]->replicas_differ(sc))
            return TRUE;
    return FALSE;
}

int workload_grad_ranks(const Scenario *sc, ParamClass c) {
    g_autoptr(Layout) lay = layout_new(workload_layout_shape(sc));
    return layout_group_size(lay, workload_grad_dim(sc, c));
}

double workload_first_stage_opt_params(const Scenario *sc) {
    return model_stage_params(&sc->model, sc->seq_len, sc->tp, sc->pp, 0) /
           (sc->zero >= 1 ? workload_grad_ranks(sc, PARAMS_DENSE) : 1);
}

guint32 comm_or(Builder *b, CollOp op, Dim dim, double bytes, const Block *k, guint32 after) {
    guint32 t = collective(b, op, dim, bytes, k->ph, k->layer, k->micro, after);
    return t != NO_TASK ? t : after;
}

void blocks_prepare(Builder *b) {
    b->npar = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
        if (on(table[i], b->sc)) {
            b->par_state[b->npar] = table[i]->state_size ? g_malloc0(table[i]->state_size) : NULL;
            b->par[b->npar++] = table[i];
        }
    b->sp = par_sp.enabled(b->sc);
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->prepare)
            b->par[i]->prepare(b);
}

void blocks_release(Builder *b) {
    for (int i = 0; i < b->npar; i++)
        g_clear_pointer(&b->par_state[i], g_free);
}

void *blocks_state(const Builder *b, const Parallelism *p) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i] == p)
            return b->par_state[i];
    g_assert_not_reached(); /* only an enabled plug-in's hooks run */
}

void pass_plan(Builder *b, const GArray *passes) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->plan)
            b->par[i]->plan(b, passes);
}

guint32 pass_in(Builder *b, int chunk, gboolean fwd, int micro, guint32 in) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->pass_in)
            in = b->par[i]->pass_in(b, chunk, fwd, micro, in);
    return in;
}

void pass_out(Builder *b, int chunk, gboolean fwd, int micro, guint32 out) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->pass_out)
            b->par[i]->pass_out(b, chunk, fwd, micro, out);
}

void pass_after(Builder *b, const GArray *passes, int k) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->after_pass)
            b->par[i]->after_pass(b, passes, k);
}

void pass_finish(Builder *b) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->finish)
            b->par[i]->finish(b);
}

/* What a unit's kernels wait for besides their input: the last plug-in's that has one. */
guint32 pass_unit_in(Builder *b) {
    guint32 ag = NO_TASK;
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->unit_in)
            ag = b->par[i]->unit_in(b);
    return ag;
}

void pass_unit_out(Builder *b, const ParamUnit *u, guint32 from) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->unit_out)
            b->par[i]->unit_out(b, u, from);
}

void pass_grads_begin(Builder *b, int chunk, gboolean last_micro, gboolean reduces) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->grads_begin)
            b->par[i]->grads_begin(b, chunk, last_micro, reduces);
}

void pass_grads_unit(Builder *b, guint i, int micro, const guint32 *seg_task) {
    for (int p = 0; p < b->npar; p++)
        if (b->par[p]->grads_unit)
            b->par[p]->grads_unit(b, i, micro, seg_task);
}

void pass_grads_end(Builder *b, int micro, gboolean last_pass) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->grads_end)
            b->par[i]->grads_end(b, micro, last_pass);
}

static guint32 enter(Builder *b, const Block *k, guint32 in) {
    for (int i = 0; i < b->npar; i++) {
        const Parallelism *p = b->par[i];
        if (k->ph == PHASE_BWD ? p->enter_bwd != NULL : p->enter != NULL)
            in = k->ph == PHASE_BWD ? p->enter_bwd(b, k, in) : p->enter(b, k, in);
    }
    return in;
}

/* The leave hooks after kernel task c, reversed; returns the last task issued, NO_TASK if none. */
static guint32 leave(Builder *b, const Block *k, guint32 c, int parts) {
    guint32 out = NO_TASK;
    for (int i = b->npar - 1; i >= 0; i--) {
        const Parallelism *p = b->par[i];
        guint32 from = out != NO_TASK ? out : c, t = NO_TASK;
        if (k->ph == PHASE_BWD && p->leave_bwd)
            t = p->leave_bwd(b, k, from);
        else if (k->ph != PHASE_BWD && p->leave)
            t = p->leave(b, k, from, parts);
        if (t != NO_TASK)
            out = t;
    }
    return out;
}

static const Parallelism *body_owner(const Builder *b, const Block *k) {
    for (int i = 0; i < b->npar; i++)
        if (b->par[i]->owns && b->par[i]->owns(b, k))
            return b->par[i];
    return NULL;
}

typedef struct {
    guint32 kernels; /* the block's last kernel */
    guint32 out;     /* the last task its leave hooks issued, NO_TASK if none */
} BlockTasks;

/* Under fp8, the block's weight casts (MODEL_FP8_WEIGHT_CAST) as a compute task of their own
 * before its kernels: in every forward and recomputation, or, where the framework lets Transformer
 * Engine cache the fp8 weights (Framework.fp8_weight_cache), in the forward of the step's first
 * micro-batch only (micro-batch 0 of each model chunk: Megatron-core's
 * is_first_microbatch_for_model_chunk). A ZeRO-3 gather (ag) must have brought the weight. */
static void weight_casts(Builder *b, const Block *k, const Parallelism *own, guint32 ag) {
    gboolean moe = own == &par_ep; /* the experts' casts, not the dense MLP's */
    SimTime t = moe ? b->moe_wcast : b->wcast[k->seg];
    if (t == 0 || (b->fw->fp8_weight_cache && !(k->ph == PHASE_FWD && k->micro == 0)))
        return;
    compute_k(b, t, moe ? b->moe_nwcast : b->nwcast[k->seg], k->ph, k->layer, k->micro, NO_TASK,
              ag);
}

/* A block's forward: entered from `in`, its kernels after that and `ag`, left unless `open`
 * (a parallel residual's attention block, whose output the MLP's reduction sums).
 *
 * With parallel.tp_comm_overlap (a what-if after T3, Pati et al. 2024, arXiv 2401.16677, and
 * Megatron-LM's --tp-comm-overlap) the producer GEMM (model_segment_producer) runs in k row
 * chunks, each chunk's 1/k of the output left as soon as it is done, so its collective runs under
 * the next chunk (slowed by the interference model like any hidden communication); only the last
 * share is exposed. The chunks cost compute: k GEMMs of ceil(m/k) rows (weights read k times,
 * smaller waves) instead of one. */
static BlockTasks block_forward(Builder *b, const Block *k, guint32 in, guint32 ag, gboolean open) {
    guint32 g = enter(b, k, in);
    const Parallelism *own = body_owner(b, k);
    weight_casts(b, k, own, ag);
    BlockTasks r = {NO_TASK, NO_TASK};
    if (own) {
        r.kernels = own->body(b, k, g, ag, NULL);
    } else if (b->chunks >= 2 && b->prod[k->seg] != 0 && k->row_out && !open) {
        Segment s = k->seg;
        compute_k(b, b->fwd[s] - b->prod[s], b->nfwd[s] - 1, k->ph, k->layer, k->micro, g, ag);
        for (int c = 0; c < b->chunks; c++) {
            r.kernels = compute_k(b, b->chunk[s], 1, k->ph, k->layer, k->micro, NO_TASK, NO_TASK);
            r.out = leave(b, k, r.kernels, b->chunks);
        }
        return r;
    } else {
        r.kernels = seg_compute(b, k->seg, FALSE, k->ph, k->layer, k->micro, g, ag);
    }
    if (!open)
        r.out = leave(b, k, r.kernels, 1);
    return r;
}

/* A block's backward. With Framework.dgrad_overlap (Megatron-LM's column-parallel linear,
 * framework.c) the kernels run in three tasks: up to the input-gradient GEMM of the block's
 * column-parallel input linear; its weight-gradient GEMM, while the leave hooks' reduction of
 * the input gradient runs (and, under sequence parallelism, after the gather of the stored
 * input it reads); then the kernels after it (the norm's backward), which wait for the
 * reduction. A block whose body a plug-in owns keeps one task. */
static BlockTasks block_backward(Builder *b, const Block *k, guint32 in, guint32 ag,
                                 guint32 *seg_task) {
    b->wgrad_input = NO_TASK;
    guint32 g = enter(b, k, in);
    const Parallelism *own = body_owner(b, k);
    BlockTasks r = {NO_TASK, NO_TASK};
    if (own) {
        r.kernels = own->body(b, k, g, ag, seg_task);
    } else {
        SimTime dur = b->bwd[k->seg];
        int kernels = b->nbwd[k->seg];
        if (k->kind == BLOCK_ATTN && b->sc->recompute == RECOMPUTE_SELECTIVE) {
            dur = sim_time_add(dur, b->attn_core);
            kernels += b->ncore;
        }
        SimTime w = b->colw[k->seg], tail = b->tail[k->seg];
        if (w > 0 && k->column_in) {
            int nw = b->ncolw[k->seg], nt = b->ntail[k->seg];
            guint32 d = compute_k(b, dur - w - tail, kernels - nw - nt, PHASE_BWD, k->layer,
                                  k->micro, g, ag);
            guint32 red = leave(b, k, d, 1);
            compute_k(b, w, nw, PHASE_BWD, k->layer, k->micro, b->wgrad_input, NO_TASK);
            r.kernels = seg_task[k->seg] =
                compute_k(b, tail, nt, PHASE_BWD, k->layer, k->micro, red, NO_TASK);
            return r; /* the last kernels waited for the reduction: they are the block's end */
        }
        r.kernels = seg_task[k->seg] =
            compute_k(b, dur, kernels, PHASE_BWD, k->layer, k->micro, g, ag);
    }
    r.out = leave(b, k, r.kernels, 1);
    return r;
}

static Block block_of(const Builder *b, const ParamUnit *u, BlockKind kind, Phase ph, int micro) {
    static const Segment seg[] = {[BLOCK_EMBED] = SEG_EMBED,
                                  [BLOCK_ATTN] = SEG_ATTN,
                                  [BLOCK_MLP] = SEG_MLP,
                                  [BLOCK_HEAD] = SEG_HEAD};
    return (Block){.kind = kind,
                   .seg = seg[kind],
                   .u = u,
                   .layer = unit_layer(b, u),
                   .micro = micro,
                   .ph = ph,
                   /* the vocabulary-parallel embedding's input is token ids; the head's output
                      is the loss, its vocabulary-parallel cross entropy the TP plug-in's */
                   .column_in = kind != BLOCK_EMBED,
                   .row_out = kind != BLOCK_HEAD};
}

static guint32 unit_out(BlockTasks r) {
    return r.out != NO_TASK ? r.out : r.kernels;
}

guint32 blocks_forward(Builder *b, const ParamUnit *u, Phase ph, int micro, guint32 in,
                       guint32 ag) {
    if (u->kind != UNIT_LAYER) {
        Block k = block_of(b, u, u->kind == UNIT_EMBED ? BLOCK_EMBED : BLOCK_HEAD, ph, micro);
        return unit_out(block_forward(b, &k, in, ag, FALSE));
    }
    gboolean par_res = b->sc->model.parallel_residual;
    Block attn = block_of(b, u, BLOCK_ATTN, ph, micro), mlp = block_of(b, u, BLOCK_MLP, ph, micro);
    BlockTasks a = block_forward(b, &attn, in, ag, par_res);
    /* the MLP reads the attention's reduced output, or with a parallel residual the layer's
       input, which the attention's kernels ahead of it on the stream waited for */
    return unit_out(block_forward(b, &mlp, a.out, NO_TASK, FALSE));
}

guint32 blocks_backward(Builder *b, const ParamUnit *u, int micro, guint32 in, guint32 ag,
                        guint32 *seg_task) {
    if (u->kind != UNIT_LAYER) {
        Block k =
            block_of(b, u, u->kind == UNIT_EMBED ? BLOCK_EMBED : BLOCK_HEAD, PHASE_BWD, micro);
        return unit_out(block_backward(b, &k, in, ag, seg_task));
    }
    Block attn = block_of(b, u, BLOCK_ATTN, PHASE_BWD, micro),
          mlp = block_of(b, u, BLOCK_MLP, PHASE_BWD, micro);
    BlockTasks m = block_backward(b, &mlp, in, ag, seg_task);
    guint32 attn_in = b->sc->model.parallel_residual ? in : m.out;
    return unit_out(block_backward(b, &attn, attn_in, NO_TASK, seg_task));
}
