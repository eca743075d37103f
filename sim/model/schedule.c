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
 */
#include "schedule.h"

/* Names in PipeSchedule order: a new schedule adds its name here and its entry in `table`. */
const char *const schedule_names[] = {"gpipe", "1f1b", "interleaved", NULL};

static void push_ref(GArray *out, PassRef p) {
    g_array_append_val(out, p);
}

static void push(GArray *out, gboolean fwd, int micro, int chunk) {
    push_ref(out, (PassRef){fwd, micro, chunk});
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
    return (PassRef){fwd, micro, fwd ? chunk : v - 1 - chunk};
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

static const Schedule table[SCHED_COUNT] = {
    [SCHED_GPIPE] = {gpipe, FALSE},
    [SCHED_1F1B] = {pipedream_flush, FALSE},
    [SCHED_INTERLEAVED] = {interleaved, TRUE},
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
        if (chunk >= 0 && p->chunk != chunk)
            continue;
        live += p->fwd ? 1 : -1;
        peak = MAX(peak, live);
    }
    return peak;
}
