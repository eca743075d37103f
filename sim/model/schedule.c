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
 */
#include "schedule.h"

/* Names in PipeSchedule order: a new schedule adds its name here and its entry in `table`. */
const char *const schedule_names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", NULL};

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

static void interleaved(int pp, int stage, int m, int v, GArray *out) {
    int total = m * v;
    int warm = m == pp ? total : MIN(2 * (pp - stage - 1) + (v - 1) * pp, total);
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

static const Schedule table[SCHED_COUNT] = {
    [SCHED_GPIPE] = {gpipe, FALSE, FALSE},
    [SCHED_1F1B] = {pipedream_flush, FALSE, FALSE},
    [SCHED_INTERLEAVED] = {interleaved, TRUE, FALSE},
    [SCHED_ZB_H1] = {zb_h1, FALSE, TRUE},
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
    int fb = 0, bw = 0; /* forwards without their B; B passes without their W */
    double peak = 0;
    for (guint k = 0; k < passes->len; k++) {
        const PassRef *p = &g_array_index(passes, PassRef, k);
        if (p->fwd)
            fb++;
        else if (!p->wgrad)
            fb--, bw++;
        else
            bw--;
        peak = MAX(peak, fb * f + bw * w);
    }
    return peak;
}
