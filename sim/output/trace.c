/* trace: trace events written as the executor reports tasks.
 *
 * A slice is written when its task ends (its duration is known then); flow events when the
 * communication starts. Send and receive of one pipeline message are matched by order: the k-th
 * send on a rank's forward (or backward) send stream is the k-th receive on its peer's matching
 * receive stream, because streams run in order and each pair of stages has one channel per
 * direction (ZB-V: per direction and chunk). Viewers sort events by time, so the file need not be
 * in time order. */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "outfile.h"
#include "report.h"

typedef struct {
    int rank;
    SimTime start[STREAM_COUNT];
    guint32 used; /* streams that ran a task, bit per StreamId (and TRACE_HOST_TID) */
    guint32 sent[WORKLOAD_PP_CHANNELS];     /* messages sent, per workload_pp_channel */
    guint32 received[WORKLOAD_PP_CHANNELS]; /* messages received */
} RankTrace;

struct Trace {
    const Scenario *sc;
    Layout *lay;
    char *path;
    OutFile *file; /* where out goes (outfile.h); NULL once committed */
    FILE *out;     /* its stream */
    gboolean dedup;
    int *slot_of;    /* job rank -> index in ranks, -1 when not traced */
    GArray *ranks;   /* RankTrace, ascending rank */
    int unsimulated; /* chosen ranks that the run does not simulate */
    guint64 events;
    ExecObserver obs;
};

#define TRACE_HOST_TID STREAM_COUNT /* the host thread's track, after the streams */

static const char *const stream_names[STREAM_COUNT] = {"compute",
                                                       "TP",
                                                       "DP",
                                                       "DP gather",
                                                       "PP send fwd",
                                                       "PP recv fwd",
                                                       "PP send bwd",
                                                       "PP recv bwd",
                                                       "DP allreduce",
                                                       "PP send fwd (V)",
                                                       "PP recv fwd (V)",
                                                       "PP send bwd (V)",
                                                       "PP recv bwd (V)"};
static const char *const phase_names[] = {"fwd",       "recompute", "bwd",
                                          "optimizer", "grads",     "params"};

static void put_json_string(FILE *f, const char *s) {
    g_autoptr(GString) g = g_string_new(NULL);
    report_json_quote(g, s);
    fputs(g->str, f);
}

static gboolean simulated(const Trace *t, int rank) {
    return exec_rep_index(t->sc, t->lay, t->dedup, rank) >= 0;
}

/* "all" or "0-7,64,72-79" into a flag per rank. */
static gboolean parse_ranks(const char *spec, int n, guint8 *want, GError **err) {
    if (strcmp(spec, "all") == 0) {
        memset(want, 1, (size_t)n);
        return TRUE;
    }
    g_auto(GStrv) parts = g_strsplit(spec, ",", -1);
    for (char **p = parts; *p; p++) {
        char *end = NULL;
        gint64 a = g_ascii_strtoll(*p, &end, 10), b = a;
        if (end != *p && *end == '-') {
            char *e2 = NULL;
            b = g_ascii_strtoll(end + 1, &e2, 10);
            end = e2 != end + 1 ? e2 : NULL;
        }
        if (!end || end == *p || *end || a < 0 || b < a || b >= n) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE,
                        "--trace-ranks %s: '%s' is not a rank or range of ranks in 0-%d (e.g. "
                        "0-7,64 or all)",
                        spec, *p, n - 1);
            return FALSE;
        }
        for (gint64 r = a; r <= b; r++)
            want[r] = 1;
    }
    return TRUE;
}

Trace *trace_new(const Scenario *sc, int dedup, const char *path, const char *ranks, GError **err) {
    g_autoptr(Trace) t = g_new0(Trace, 1);
    t->sc = sc;
    t->lay = layout_new(workload_layout_shape(sc));
    t->path = g_strdup(path);
    /* as the run decides it: every rank where representatives cannot stand for the others */
    t->dedup = sim_dedup_mode(sc, dedup) != DEDUP_OFF;
    t->ranks = g_array_new(FALSE, TRUE, sizeof(RankTrace));
    t->slot_of = g_new(int, sc->gpus);
    g_autofree guint8 *want = g_new0(guint8, sc->gpus);
    if (ranks && !parse_ranks(ranks, sc->gpus, want, err))
        return NULL;
    for (int r = 0; r < sc->gpus; r++) {
        t->slot_of[r] = -1;
        gboolean pick = ranks ? want[r] : (int)t->ranks->len < TRACE_DEFAULT_RANKS;
        if (!pick || !simulated(t, r)) {
            t->unsimulated += pick && ranks;
            continue;
        }
        RankTrace rt = {.rank = r};
        t->slot_of[r] = (int)t->ranks->len;
        g_array_append_val(t->ranks, rt);
    }
    if (!(t->file = outfile_open(path, err)))
        return NULL;
    t->out = outfile_stream(t->file);
    fputs("{\"traceEvents\": [\n", t->out);
    return g_steal_pointer(&t);
}

void trace_free(Trace *t) {
    if (!t)
        return;
    outfile_free(t->file);
    g_free(t->path);
    g_free(t->slot_of);
    layout_free(t->lay);
    g_array_unref(t->ranks);
    g_free(t);
}

int trace_ranks(const Trace *t) {
    return (int)t->ranks->len;
}

int trace_unsimulated(const Trace *t) {
    return t->unsimulated;
}

/* Picoseconds as microseconds, exactly: 1234567 ps -> "1.234567". */
static void put_us(FILE *f, SimTime ps) {
    fprintf(f, "%" PRId64 ".%06" PRId64, ps / 1000000, ps % 1000000);
}

static void event_start(Trace *t) {
    if (t->events++)
        fputs(",\n", t->out);
}

static void task_name(const Trace *t, const Task *k, char *buf, size_t n) {
    char where[32] = "";
    int L = t->sc->model.layers;
    if (k->layer == -1)
        g_strlcpy(where, " embed", sizeof where);
    else if (k->layer == L)
        g_strlcpy(where, " head", sizeof where);
    else if (k->layer >= 0)
        g_snprintf(where, sizeof where, " L%d", k->layer);
    char mb[16] = "";
    if (k->micro >= 0)
        g_snprintf(mb, sizeof mb, " mb%d", k->micro);
    switch (k->kind) {
    case TASK_COMPUTE:
        g_snprintf(buf, n, "%s%s%s", phase_names[k->phase], where, mb);
        break;
    case TASK_COLL:
        g_snprintf(buf, n, "%s %s %s%s%s", coll_op_name(k->op), layout_dim_name(k->dim),
                   phase_names[k->phase], where, mb);
        break;
    case TASK_KERNEL:
        g_snprintf(buf, n, "quantization (%s %s) %s%s%s", coll_op_name(k->op),
                   layout_dim_name(k->dim), phase_names[k->phase], where, mb);
        break;
    default:
        g_snprintf(buf, n, "%s %s%s", k->kind == TASK_SEND ? "send" : "recv",
                   k->phase == PHASE_FWD ? "activations" : "gradients", mb);
    }
}

/* One id per message: sender, channel (workload_pp_channel), and its number on that channel;
 * ZB-V's chunk 1 channels (2, 3) in ids of their own, above every other's. */
static guint64 flow_id(int sender, int c, guint32 k) {
    return (guint64)(c >> 1) << 62 | ((guint64)sender * 2 + (guint64)(c & 1)) << 24 | k;
}

static void flow(Trace *t, const char *ph, int rank, const Task *k, SimTime now, guint64 id) {
    event_start(t);
    fprintf(t->out,
            "{\"ph\": \"%s\", %s\"name\": \"%s\", \"cat\": \"pp\", \"id\": %" G_GUINT64_FORMAT
            ", \"pid\": %d, \"tid\": %d, \"ts\": ",
            ph, ph[0] == 'f' ? "\"bp\": \"e\", " : "",
            workload_pp_channel(k->stream) & 1 ? "gradients" : "activations", id, rank, k->stream);
    put_us(t->out, now);
    fputc('}', t->out);
}

static void on_begin(void *ctx, int rank, const Task *k, SimTime now) {
    Trace *t = ctx;
    int slot = t->slot_of[rank];
    if (slot < 0)
        return;
    RankTrace *rt = &g_array_index(t->ranks, RankTrace, slot);
    rt->start[k->stream] = now;
    if (k->kind != TASK_SEND && k->kind != TASK_RECV)
        return;
    int dir = workload_pp_channel(k->stream);
    gboolean down = workload_pp_from_prev(dir); /* the channel runs to the next stage */
    if (k->kind == TASK_SEND) {
        int peer = down ? layout_pp_next(t->lay, rank) : layout_pp_prev(t->lay, rank);
        guint32 n = rt->sent[dir]++;
        if (t->slot_of[peer] >= 0)
            flow(t, "s", rank, k, now, flow_id(rank, dir, n));
    } else {
        int sender = down ? layout_pp_prev(t->lay, rank) : layout_pp_next(t->lay, rank);
        guint32 n = rt->received[dir]++;
        if (t->slot_of[sender] >= 0)
            flow(t, "f", rank, k, now, flow_id(sender, dir, n));
    }
}

static void on_end(void *ctx, int rank, const Task *k, SimTime now) {
    Trace *t = ctx;
    int slot = t->slot_of[rank];
    if (slot < 0)
        return;
    RankTrace *rt = &g_array_index(t->ranks, RankTrace, slot);
    rt->used |= 1u << k->stream;
    char name[96], bytes[32];
    task_name(t, k, name, sizeof name);
    event_start(t);
    fprintf(t->out, "{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"%s\", \"pid\": %d, \"tid\": %d",
            name, k->kind == TASK_COMPUTE ? "compute" : layout_dim_name(k->dim), rank, k->stream);
    fputs(", \"ts\": ", t->out);
    put_us(t->out, rt->start[k->stream]);
    fputs(", \"dur\": ", t->out);
    put_us(t->out, now - rt->start[k->stream]);
    fprintf(t->out, ", \"args\": {\"layer\": %d, \"micro\": %d, \"phase\": \"%s\", \"bytes\": %s",
            k->layer, k->micro, phase_names[k->phase],
            report_format_number(k->kind == TASK_COMPUTE || k->kind == TASK_KERNEL ? 0 : k->bytes,
                                 bytes));
    if (k->kind == TASK_COMPUTE && now - rt->start[k->stream] > k->duration) {
        /* slowed by communication under it: the time it would have taken alone */
        fputs(", \"slowed\": true, \"alone_us\": ", t->out);
        put_us(t->out, k->duration);
    }
    if (k->kind != TASK_COMPUTE)
        fprintf(t->out, ", \"op\": \"%s\", \"dim\": \"%s\"", coll_op_name(k->op),
                layout_dim_name(k->dim));
    fputs("}}", t->out);
}

/* A host span: launching task k, or (k NULL) the optimizer step's framework code. */
static void on_host(void *ctx, int rank, const Task *k, SimTime start, SimTime end) {
    Trace *t = ctx;
    int slot = t->slot_of[rank];
    if (slot < 0 || end <= start)
        return;
    RankTrace *rt = &g_array_index(t->ranks, RankTrace, slot);
    rt->used |= 1u << TRACE_HOST_TID;
    char name[104] = "optimizer step (host, after sync)";
    if (k) {
        char what[96];
        task_name(t, k, what, sizeof what);
        g_snprintf(name, sizeof name, "launch %s", what);
    }
    event_start(t);
    fprintf(t->out, "{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"host\", \"pid\": %d, \"tid\": %d",
            name, rank, TRACE_HOST_TID);
    fputs(", \"ts\": ", t->out);
    put_us(t->out, start);
    fputs(", \"dur\": ", t->out);
    put_us(t->out, end - start);
    if (k && k->kind == TASK_COMPUTE)
        fprintf(t->out, ", \"args\": {\"kernels\": %u}", k->kernels);
    fputs("}", t->out);
}

const ExecObserver *trace_observer(Trace *t) {
    t->obs = (ExecObserver){on_begin, on_end, t, on_host};
    return &t->obs;
}

static void metadata(Trace *t, const char *what, int pid, int tid, const char *key, const char *str,
                     int num) {
    event_start(t);
    fprintf(t->out, "{\"ph\": \"M\", \"name\": \"%s\", \"pid\": %d", what, pid);
    if (tid >= 0)
        fprintf(t->out, ", \"tid\": %d", tid);
    if (str)
        fprintf(t->out, ", \"args\": {\"%s\": \"%s\"}}", key, str);
    else
        fprintf(t->out, ", \"args\": {\"%s\": %d}}", key, num);
}

gboolean trace_finish(Trace *t, const SimRun *run, GError **err) {
    const Scenario *sc = t->sc;
    for (guint i = 0; i < t->ranks->len; i++) {
        const RankTrace *rt = &g_array_index(t->ranks, RankTrace, i);
        int r = rt->rank;
        LayoutCoord c = layout_coord(t->lay, r);
        g_autofree char *name =
            g_strdup_printf("rank %d: stage %d, tp %d, dp %d%s", r, c.pp, c.tp, c.dp,
                            !t->dedup                             ? ""
                            : exec_tp_interchangeable(sc, t->lay) ? " (stands for its TP group)"
                            : sc->dp > 1                          ? " (stands for every DP replica)"
                                                                  : "");
        metadata(t, "process_name", r, -1, "name", name, 0);
        metadata(t, "process_sort_index", r, -1, "sort_index", NULL, r);
        for (int s = 0; s <= TRACE_HOST_TID; s++) {
            if (!(rt->used & (1u << s)))
                continue;
            metadata(t, "thread_name", r, s, "name", s == TRACE_HOST_TID ? "host" : stream_names[s],
                     0);
            metadata(t, "thread_sort_index", r, s, "sort_index", NULL, s);
        }
    }
    const SimSummary *sum = sim_summary(run);
    char it[32];
    fputs("\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"scenario\": ", t->out);
    put_json_string(t->out, sc->path);
    fputs(", \"model\": ", t->out);
    put_json_string(t->out, sc->model.name);
    fprintf(t->out,
            ", \"gpus\": %d, \"ranks_simulated\": %d, \"ranks_traced\": %u, "
            "\"iteration_time_s\": %s}\n}\n",
            sc->gpus, sum->ranks_simulated, t->ranks->len,
            report_format_number(sim_time_s(sum->iteration), it));
    OutFile *f = g_steal_pointer(&t->file);
    t->out = NULL;
    return outfile_commit(f, err);
}
