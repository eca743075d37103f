/* schedule: the pipeline schedules and their table.
 *
 * - GPipe (Huang et al. 2019): every forward, then every backward.
 * - 1F1B (Narayanan et al. 2021, PipeDream-Flush): stage s of p runs p - s - 1 warm-up forwards,
 *   then one forward and one backward alternately, then the cool-down backwards.
 * - Interleaved 1F1B (Narayanan et al. SC21, Sec. 2.2; Megatron-LM's
 *   forward_backward_pipelining_with_interleaving, megatron/schedules.py, 2022, and
 *   megatron/core/pipeline_parallel/schedules.py since): each stage holds v model chunks; the m v
 *   chunk passes run in groups of p micro-batches per chunk (get_model_chunk_id: virtual
 *   micro-batch k runs chunk (k mod pv) / p forward, v - 1 minus that backward); stage s warms up
 *   with 2 (p - s - 1) + (v - 1) p forwards (all of them when m = p), then alternates forward
 *   k + warm-up and backward k, then cools down. Its bubble is (p - 1) / (v m) of the ideal time.
 * - ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv 2401.10241, Sec. 3.1,
 *   Fig. 3 top; the "ZB1P" of sail-sg/zero-bubble-pipeline-parallelism's README): the backward
 *   split into B, the input gradient the previous stage waits for, and W, the weight gradient
 *   nothing waits for. F and B run in 1F1B's order (p - s - 1 warm-up forwards); stage s runs
 *   micro-batch k's W after the B of micro-batch k + s, so that the W passes the later stages
 *   put off fill the cool-down, and the rest after the last B. On uniform stages with no
 *   communication and m >= p the bubble is (p - 1)(T_F + T_B - T_W) against 1F1B's
 *   (p - 1)(T_F + T_B + T_W) (ibid., Sec. 3.1), and no stage holds more than 1F1B's first stage:
 *   stage s has at most p - s forwards without B and s B passes without W, p M_B at most with
 *   M_W <= M_B (ibid., Sec. 3.1 and Table 1).
 * - ZB-V (Qi et al., arXiv 2401.10241 v2, Sec. 6; sail-sg/zero-bubble-pipeline-parallelism,
 *   megatron/core/pipeline_parallel/handcrafted_zb_v, get_zb_v_schedule): the backward split as
 *   in ZB-H1, the stage's layers in two chunks placed in a V (schedule_virtual_stage), so that the
 *   first stage runs both the embedding and the loss. Stage s warms up with 2 (p - s) - 1
 *   forwards of chunk 0, then s pairs F1 F0, then p - s triples F1 B1 W1; the steady state
 *   repeats F0 B0 W0 F1 B1 W1; the cool-down runs s pairs B0 B1, then p - s pairs B0 W0, then the
 *   W passes left (chunk 1's first). The pattern is written for n = max(m, 2p - 1) micro-batches
 *   and the passes of micro-batches m..n-1 left out, as get_zb_v_schedule does. With T_F, T_B,
 *   T_W a chunk's pass times (half a stage's layers) and T_F = T_B = T_W, every stage runs
 *   without a gap from its first pass to its last when m >= 2p - 1 (the repository README's
 *   table: bubble rate 0 against 1F1B's (p - 1)/m, activation memory 1x 1F1B's, pipeline
 *   communication 2x): the iteration is 2m(T_F + T_B + T_W) + (p - 1) T_F, the last stage's
 *   start. Derived here for this order on the idealised pipeline (tests/test_zerobubble.c holds
 *   it for m >= 2p - 1): with T_F <= T_B and T_W <= T_B the iteration is
 *   2m(T_F + T_B + T_W) + (p - 1) max(T_B, 2(T_B - T_W)). Every stage holds at most 2p chunk
 *   forwards without their B (p M_B, 1F1B's first stage's peak, on every stage) and, W following
 *   B in the steady state, no more than that with M_W <= M_B.
 */
#include "schedule.h"

/* Names in PipeSchedule order: a new schedule adds its name here and its entry in `table`. */
const char *const schedule_names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-v", NULL};

static void push_ref(GArray *out, PassRef p) {
    g_array_append_val(out, p);
}

static void push(GArray *out, gboolean fwd, int micro, int chunk) {
    push_ref(out, (PassRef){fwd, micro, chunk, FALSE});
}

static void push_w(GArray *out, int micro, int chunk) {
    push_ref(out, (PassRef){FALSE, micro, chunk, TRUE});
}

/* Forwards and backwards of one chunk with `warm` forwards first. */
static void one_f_one_b(int m, int warm, GArray *out) {
    for (int mb = 0; mb < warm; mb++)
        push(out, TRUE, mb, 0);
    for (int i = 0; i < m - warm; i++) {
        push(out, TRUE, warm + i, 0);
        push(out, FALSE, i, 0);
    }
    for (int mb = m - warm; mb < m; mb++)
        push(out, FALSE, mb, 0);
}

static void gpipe(int pp, int stage, int m, int v, GArray *out) {
    (void)pp, (void)stage, (void)v;
    one_f_one_b(m, m, out);
}

static void pipedream_flush(int pp, int stage, int m, int v, GArray *out) {
    (void)v;
    one_f_one_b(m, MIN(pp - stage - 1, m), out);
}

/* Virtual micro-batch k of the interleaved order: its model chunk and its micro-batch. Chunks
 * take turns in groups of pp micro-batches (Megatron's get_model_chunk_id); a chunk's k-th use is
 * micro-batch k, so the micro-batch is the group's base plus the position in it. */
static PassRef virtual_pass(int pp, int v, int k, gboolean fwd) {
    int in_group = k % (pp * v), chunk = in_group / pp;
    int micro = k / (pp * v) * pp + k % pp;
    return (PassRef){fwd, micro, fwd ? chunk : v - 1 - chunk, FALSE};
}

int schedule_interleaved_warmup(int pp, int stage, int m, int v) {
    int total = m * v;
    return m == pp ? total : MIN(2 * (pp - stage - 1) + (v - 1) * pp, total);
}

static void interleaved(int pp, int stage, int m, int v, GArray *out) {
    int total = m * v, warm = schedule_interleaved_warmup(pp, stage, m, v);
    for (int k = 0; k < warm; k++)
        push_ref(out, virtual_pass(pp, v, k, TRUE));
    for (int k = 0; k < total - warm; k++) {
        push_ref(out, virtual_pass(pp, v, warm + k, TRUE));
        push_ref(out, virtual_pass(pp, v, k, FALSE));
    }
    for (int k = total - warm; k < total; k++)
        push_ref(out, virtual_pass(pp, v, k, FALSE));
}

/* ZB-H1: 1F1B's F and B, W of micro-batch k after the B of k + stage, the rest at the end. */
static void zb_h1(int pp, int stage, int m, int v, GArray *out) {
    (void)v;
    int warm = MIN(pp - stage - 1, m), w = 0;
    for (int mb = 0; mb < warm; mb++)
        push(out, TRUE, mb, 0);
    for (int k = 0; k < m; k++) {
        if (warm + k < m)
            push(out, TRUE, warm + k, 0);
        push(out, FALSE, k, 0);
        if (k >= stage)
            push_w(out, w++, 0);
    }
    while (w < m)
        push_w(out, w++, 0);
}

/* ZB-V's passes: each kind (0 F, 1 B, 2 W) and chunk counts its micro-batches; a pass of a
 * micro-batch at or past m is the pattern's padding and left out. */
typedef struct {
    GArray *out;
    int m;
    int next[3][2]; /* [kind][chunk]: the next micro-batch */
} VOrder;

static void v_put(VOrder *o, int kind, int chunk) {
    int micro = o->next[kind][chunk]++;
    if (micro < o->m)
        push_ref(o->out, (PassRef){kind == 0, micro, chunk, kind == 2});
}

static void zb_v(int pp, int stage, int m, int v, GArray *out) {
    g_assert(v == 2);
    VOrder o = {.out = out, .m = m};
    int n = MAX(m, 2 * pp - 1), (*next)[2] = o.next;
    for (int k = 0; k < 2 * (pp - stage) - 1; k++) /* warm-up */
        v_put(&o, 0, 0);
    for (int k = 0; k < stage; k++) {
        v_put(&o, 0, 1);
        v_put(&o, 0, 0);
    }
    for (int k = 0; k < pp - stage; k++) {
        v_put(&o, 0, 1);
        v_put(&o, 1, 1);
        v_put(&o, 2, 1);
    }
    while (next[0][0] < n || next[0][1] < next[0][0]) { /* steady state */
        if (next[0][0] < n)
            v_put(&o, 0, 0);
        v_put(&o, 1, 0);
        v_put(&o, 2, 0);
        v_put(&o, 0, 1);
        v_put(&o, 1, 1);
        v_put(&o, 2, 1);
    }
    for (int k = 0; k < stage; k++) { /* cool-down */
        v_put(&o, 1, 0);
        v_put(&o, 1, 1);
    }
    for (int k = 0; k < pp - stage; k++) {
        v_put(&o, 1, 0);
        v_put(&o, 2, 0);
    }
    for (int c = 1; c >= 0; c--)
        while (next[2][c] < n)
            v_put(&o, 2, c);
}

static const Schedule table[SCHED_COUNT] = {
    [SCHED_GPIPE] = {gpipe, FALSE, FALSE, FALSE},
    [SCHED_1F1B] = {pipedream_flush, FALSE, FALSE, FALSE},
    [SCHED_INTERLEAVED] = {interleaved, TRUE, FALSE, FALSE},
    [SCHED_ZB_H1] = {zb_h1, FALSE, TRUE, FALSE},
    [SCHED_ZB_V] = {zb_v, TRUE, TRUE, TRUE},
};
G_STATIC_ASSERT(G_N_ELEMENTS(schedule_names) == SCHED_COUNT + 1);

const Schedule *schedule_get(PipeSchedule id) {
    g_assert(id < SCHED_COUNT);
    return &table[id];
}

const char *schedule_name(PipeSchedule id) {
    g_assert(id < SCHED_COUNT);
    return schedule_names[id];
}

int schedule_virtual_stage(gboolean vshape, int pp, int stage, int chunk) {
    return vshape && chunk == 1 ? 2 * pp - 1 - stage : chunk * pp + stage;
}

GArray *schedule_passes(PipeSchedule id, int pp, int stage, int m, int v) {
    GArray *out = g_array_new(FALSE, FALSE, sizeof(PassRef));
    schedule_get(id)->passes(pp, stage, m, schedule_get(id)->chunked ? v : 1, out);
    return out;
}

int schedule_peak_inflight(const GArray *passes, int chunk) {
    int live = 0, peak = 0;
    for (guint k = 0; k < passes->len; k++) {
        const PassRef *p = &g_array_index(passes, PassRef, k);
        if (p->wgrad || (chunk >= 0 && p->chunk != chunk))
            continue;
        live += p->fwd ? 1 : -1;
        peak = MAX(peak, live);
    }
    return peak;
}

double schedule_peak_held(const GArray *passes, double f, double w) {
    for (guint k = 0; k < passes->len; k++)
        g_assert(g_array_index(passes, PassRef, k).chunk == 0);
    return schedule_peak_held_chunks(passes, &f, &w);
}

double schedule_peak_held_chunks(const GArray *passes, const double *f, const double *w) {
    int fb[2] = {0}, bw[2] = {0}; /* per chunk: forwards without their B; B passes without W */
    double peak = 0, held = 0;
    for (guint k = 0; k < passes->len; k++) {
        const PassRef *p = &g_array_index(passes, PassRef, k);
        int c = p->chunk;
        g_assert(c >= 0 && c < 2);
        if (p->fwd)
            fb[c]++;
        else if (!p->wgrad)
            fb[c]--, bw[c]++;
        else
            bw[c]--;
        held = fb[0] * f[0] + bw[0] * w[0];
        if (fb[1] || bw[1])
            held += fb[1] * f[1] + bw[1] * w[1];
        peak = MAX(peak, held);
    }
    return peak;
}
