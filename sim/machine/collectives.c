/* collectives: algorithms as sets of streams over topology paths, costed by the library's model.
 *
 * Rings and channels (coll_channels.c): each node's members kept together; groups of whole nodes
 * run over the library's own channels where the topology file lists them (Frontier: RCCL's
 * rome_models.cc rings, each single xGMI link direction carrying one ring, and the NICs each ring
 * enters and leaves a node by), other groups over the ring that maximises the node's slowest edge,
 * split over `channels` rotations across nodes. Each channel carries 1/C of the data.
 *
 * Latency model (ROCm/rccl src/graph/tuning.cc):
 * base[proto] + intra-node steps x intra_hop[algo][proto] + network steps x inter_hop[algo][proto].
 * Ring allreduce: 2(n-1) steps, 2 x nodes of them network steps; allgather / reduce-scatter: n-1
 * and nodes. Tree allreduce (NCCL's tuning model): 2((n/nodes - 1) intra + log2(nodes) inter).
 * Bandwidth: a protocol reaches bw_factor of the rate the network gives the flow.
 *
 * Tree: NCCL's double binary tree (src/graph/trees.cc) over the nodes, per channel, with a chain
 * through each node's GPUs in the channel's ring order; each tree carries m/2 (m/(2C) per channel
 * and tree), reduce up and broadcast down at once. A node with two children in one tree is a leaf
 * in the other, so its NICs move 2m per direction (3m/2 interior plus m/2 as a leaf), not the 3m
 * of one binary tree carrying m. */
#include "collectives.h"
#include "machine_error.h"

#include <math.h>

#include "bigmem.h"
#include "coll_channels.h"
#include "coll_streams.h"
#include <string.h>

typedef struct {
    CollOp op;
    CollChoice choice;
    int cls;
    int phase, phases; /* hierarchical: 3 */
    int step, steps;   /* detailed ring */
    int rep_node; /* symmetric form: the only node whose local links are loaded, COLL_NODES_ALL,
                     or COLL_NODES_NONE (copies of images: COLL_IMAGES) */
    int copies, stride; /* CollCall: the group and copies - 1 shifted by stride GPUs */
    int whole;          /* CollCall: copies loading their nodes' links under COLL_IMAGES */
    int pending;        /* flows in flight of the current phase or step */
    int n;
    const CollGroup *group; /* the members, their ring and loads (coll_streams) */
    const int *ring;        /* members in ring order (the group's) */
    CollChannels ch;        /* detailed ring: its channels (owned) */
    double bytes;
    SimTime step_latency;
    NetDoneFn done;
    void *ctx;
    uint64_t arg;
} Instance;

/* A choice made for a group (by op and message size), kept: the group's id indexes them. */
typedef struct {
    int op;
    double bytes;
    CollChoice choice;
} ChoiceEntry;

/* What a phase's loads allow alone: worked out once per load set (a phase's loads live as long
 * as its group, at one address) and kept in a small table by address: a choice evaluates every
 * algorithm and protocol over loads that at 9,408 nodes are tens of thousands long. */
#define COLL_ALONE_CACHE 64 /* a power of 2 */
typedef struct {
    const NetLoad *loads;
    int nl;          /* -1: an empty entry */
    double rate;     /* per stream, alone (net_loads_alone_rate) */
    int32_t busiest; /* busiest_load's answer */
    int ties;
} AloneFacts;

struct Collectives {
    Engine *eng;
    Network *net;
    const Topology *topo;
    const CollSpec *spec;
    CollMode mode;
    int force_algo, force_proto;
    int rep_node;         /* while choosing: see COLL_SYMMETRIC; -1 = all nodes */
    gboolean bound;       /* coll_set_bound */
    CollStreams *streams; /* rings and loads per group (owned) */
    Instance *inst;       /* by slot: ninst used of cinst (bigmem_regrow) */
    guint32 ninst, cinst;
    guint *free_slots; /* instance slots free for reuse, a stack of nfree (room for cfree) */
    guint nfree, cfree;
    GPtrArray *choices;  /* by group id (coll_group_id): a GArray of ChoiceEntry, or NULL */
    uint32_t choice_gen; /* from 1, one more at each coll_force: older memos stand for nothing */
    AloneFacts alone[COLL_ALONE_CACHE]; /* by the loads' address (alone_facts) */
};

static const char *const op_names[COLL_OP_COUNT] = {
    "allreduce",  "allgather", "reduce_scatter", "reduce",   "broadcast",
    "all_to_all", "send",      "recv",           "sendrecv",
};

gboolean coll_op_keeps_order(CollOp op) {
    return op == COLL_SEND || op == COLL_SENDRECV;
}

const char *coll_op_name(CollOp op) {
    g_assert(op < COLL_OP_COUNT);
    return op_names[op];
}

int coll_op_parse(const char *name) {
    for (int i = 0; i < COLL_OP_COUNT; i++)
        if (strcmp(name, op_names[i]) == 0)
            return i;
    return -1;
}

int coll_algo_parse(const char *name) {
    for (int a = 0; name && a < ALGO_COUNT; a++)
        if (!strcmp(name, coll_algo_name(a)))
            return a;
    return -1;
}

int coll_proto_parse(const char *name) {
    for (int p = 0; name && p < PROTO_COUNT; p++)
        if (!strcmp(name, coll_proto_name(p)))
            return p;
    return -1;
}

const char *coll_proto_name(CollProto p) {
    static const char *const names[PROTO_COUNT] = {"LL", "Simple"};
    return names[p];
}

double coll_volume(CollOp op, double m, int n) {
    switch (op) {
    case COLL_ALLREDUCE:
        return 2.0 * m * (n - 1) / n;
    case COLL_ALLGATHER:
    case COLL_REDUCE_SCATTER:
    case COLL_REDUCE:
    case COLL_BROADCAST:
    case COLL_ALL_TO_ALL:
        return m * (n - 1) / n;
    case COLL_SEND:
    case COLL_RECV:
    case COLL_SENDRECV:
        return m;
    default:
        g_assert_not_reached();
    }
}

int coll_ring_steps(CollOp op, int n) {
    switch (op) {
    case COLL_ALLREDUCE:
        return 2 * (n - 1);
    case COLL_ALLGATHER:
    case COLL_REDUCE_SCATTER:
    case COLL_BROADCAST:
    case COLL_REDUCE:
        return n - 1;
    default:
        return 1;
    }
}

double coll_busbw_factor(CollOp op, int n) {
    switch (op) {
    case COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case COLL_ALLGATHER:
    case COLL_REDUCE_SCATTER:
    case COLL_ALL_TO_ALL: /* rccl-tests src/alltoall.cu AlltoAllGetBw: factor (nranks-1)/nranks */
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

/* A group's list of choices; NULL for a group that never chose (a copy of another's, made for
 * its loads alone: coll_streams_loads_copies). */
static void choices_free(gpointer a) {
    if (a)
        g_array_unref(a);
}

Collectives *coll_new(Engine *eng, Network *net, const Topology *topo) {
    Collectives *c = g_new0(Collectives, 1);
    c->eng = eng;
    c->net = net;
    c->topo = topo;
    c->spec = &topo_spec(topo)->coll;
    c->force_algo = c->force_proto = -1;
    for (int k = 0; k < COLL_ALONE_CACHE; k++) /* empty: no load set has nl -1 */
        c->alone[k].nl = -1;
    c->rep_node = -1;
    c->streams = coll_streams_new(topo, net);
    c->choices = g_ptr_array_new_with_free_func(choices_free);
    c->choice_gen = 1;
    return c;
}

void coll_set_bound(Collectives *c) {
    c->bound = TRUE;
    coll_streams_set_drop_only(c->streams);
}

void coll_free(Collectives *c) {
    if (!c)
        return;
    for (guint i = 0; i < c->ninst; i++) {
        coll_channels_clear(&c->inst[i].ch);
    }
    bigmem_free(c->inst);
    g_free(c->free_slots);
    coll_streams_free(c->streams);
    g_ptr_array_unref(c->choices);
    g_free(c);
}

void coll_set_mode(Collectives *c, CollMode mode) {
    c->mode = mode;
}

void coll_force(Collectives *c, int algo, int proto) {
    c->force_algo = algo;
    c->force_proto = proto;
    g_ptr_array_set_size(c->choices, 0);
    c->choice_gen++;
}

void coll_ring_order(Collectives *c, const int *members, int n, int *ring) {
    memcpy(ring, coll_group_ring(coll_streams_group(c->streams, members, n, FALSE)),
           sizeof(int) * n);
}

static gboolean ring_applies(CollOp op, int n, int nodes) {
    (void)op, (void)n, (void)nodes;
    return TRUE;
}

static gboolean tree_applies(CollOp op, int n, int nodes) {
    return op == COLL_ALLREDUCE && nodes > 1 && n > 2; /* NCCL/RCCL use it across nodes only */
}

static gboolean hier_applies(CollOp op, int n, int nodes) {
    return op == COLL_ALLREDUCE && nodes > 1 && n > nodes && n % nodes == 0;
}

/* The algorithms, in CollAlgo order: a new one is an applies function and an entry here
 * (coll_spec.h), and its streams function in coll_streams.c (build_streams). */
static const struct {
    const char *name;  /* as topology files and `sim collective --algo` spell it */
    int phases;        /* network phases one call runs in sequence */
    CollAlgo steps_as; /* whose per-step latencies (CollSpec.intra_hop, inter_hop) it pays */
    gboolean (*applies)(CollOp op, int n, int nodes);
} algos[ALGO_COUNT] = {
    [ALGO_RING] = {"ring", 1, ALGO_RING, ring_applies},
    [ALGO_TREE] = {"tree", 1, ALGO_TREE, tree_applies},
    [ALGO_HIER] = {"hierarchical", 3, ALGO_RING, hier_applies},
};

static SimTime shape_latency(const CollSpec *sp, CollAlgo algo, CollProto proto,
                             const CollShape *s) {
    CollAlgo a = algos[algo].steps_as;
    return s->intra_steps * sp->intra_hop[a][proto] + s->inter_steps * sp->inter_hop[a][proto];
}

const char *coll_algo_name(CollAlgo a) {
    return algos[a].name;
}

static const CollBackend *backend_for(const CollSpec *sp, CollOp op, double bytes, int *idx) {
    for (guint i = 0; sp->backends && i < sp->backends->len; i++) {
        const CollBackend *b = &g_array_index(sp->backends, CollBackend, i);
        if ((b->ops & (1u << op)) && bytes >= b->min_bytes && bytes <= b->max_bytes) {
            *idx = (int)i;
            return b;
        }
    }
    *idx = -1;
    return NULL;
}

/* Uncontended time of one phase of stream bytes sb over loads. */
static int32_t busiest_load(Collectives *c, const NetLoad *loads, int nl, int *ties);

static const AloneFacts *alone_facts(Collectives *c, const NetLoad *loads, int nl) {
    uintptr_t a = (uintptr_t)loads;
    AloneFacts *f = &c->alone[((a >> 4) ^ (a >> 12)) & (COLL_ALONE_CACHE - 1)];
    if (f->loads != loads || f->nl != nl) {
        f->loads = loads;
        f->nl = nl;
        f->rate = net_loads_alone_rate(c->net, loads, nl);
        f->busiest = busiest_load(c, loads, nl, &f->ties);
    }
    return f;
}

/* net_flow_time_alone over a phase's loads, the rate kept (alone_facts). */
static SimTime phase_time(Collectives *c, const NetLoad *loads, int nl, double sb, double factor,
                          SimTime latency) {
    return net_time_at_rate(sb / factor, alone_facts(c, loads, nl)->rate, latency);
}

/* The busiest of loads (largest weight / capacity, lowest id first) and how many tie with it
 * (relative 1e-9); the flow's streams move at capacity / weight there. */
static int32_t busiest_load(Collectives *c, const NetLoad *loads, int nl, int *ties) {
    int32_t best = COLL_LIMIT_LATENCY;
    double best_r = G_MAXDOUBLE;
    *ties = 0;
    for (int i = 0; i < nl; i++) {
        double r = topo_link_capacity(c->topo, loads[i].link) / loads[i].weight;
        if (r < best_r * (1 - 1e-9) || best < 0) {
            best = loads[i].link;
            best_r = r;
            *ties = 1;
        } else if (r <= best_r * (1 + 1e-9)) {
            *ties += 1;
            best = MIN(best, loads[i].link);
        }
    }
    return best;
}

void coll_limit_describe(const Collectives *c, const CollChoice *ch, char *buf, size_t size) {
    if (ch->limit == COLL_LIMIT_LATENCY || ch->limit == COLL_LIMIT_BACKEND) {
        g_strlcpy(buf, ch->limit == COLL_LIMIT_LATENCY ? "latency" : "backend", size);
        return;
    }
    char link[96];
    topo_link_describe(c->topo, ch->limit, link, sizeof link);
    if (ch->limit_ties > 1)
        g_snprintf(buf, size, "%s (1 of %d)", link, ch->limit_ties);
    else
        g_strlcpy(buf, link, size);
}

/* Evaluate one (algo, proto) on the ring; fills choice. */
static void evaluate(Collectives *c, CollAlgo algo, CollProto proto, CollOp op, const CollGroup *g,
                     double bytes, CollChoice *out) {
    const CollSpec *sp = c->spec;
    out->algo = algo;
    out->proto = proto;
    out->predicted = 0;
    out->latency = sp->base[proto];
    int phases = algos[algo].phases;
    const CollBackend *b = backend_for(sp, op, bytes, &out->backend);
    SimTime slowest = -1; /* bandwidth part of the slowest phase */
    out->limit = COLL_LIMIT_LATENCY;
    out->limit_ties = 0;
    for (int ph = 0; ph < phases; ph++) {
        CollShape s;
        int nl;
        const NetLoad *loads =
            coll_streams_loads(c->streams, g, algo, op, ph, c->rep_node, &s, &nl);
        double sb = coll_shape_bytes(&s, bytes);
        SimTime lat = b ? (SimTime)(s.intra_steps + s.inter_steps) * b->step_latency
                        : shape_latency(sp, algo, proto, &s);
        double factor = b ? 1.0 : sp->bw_factor[proto];
        SimTime t = phase_time(c, loads, nl, sb, factor, lat);
        const AloneFacts *af = alone_facts(c, loads, nl);
        int ties = af->ties;
        int32_t busiest = af->busiest;
        if (b) { /* the backend's own bandwidth caps what a rank moves (it has no channels) */
            SimTime capped =
                sim_time_add(lat, sim_time_from_ps(sb * s.streams / b->bandwidth * 1e12));
            if (capped > t)
                busiest = COLL_LIMIT_BACKEND;
            t = MAX(t, capped);
        }
        if (t - lat > slowest) {
            slowest = t - lat;
            out->limit = busiest;
            out->limit_ties = ties;
        }
        out->predicted = sim_time_add(out->predicted, t);
        out->latency += lat;
    }
    if (b)
        out->latency = out->latency - sp->base[proto] + b->latency;
    out->predicted = sim_time_add(out->predicted, b ? b->latency : sp->base[proto]);
    if (out->latency >= out->predicted - out->latency) { /* latency is the larger part */
        out->limit = COLL_LIMIT_LATENCY;
        out->limit_ties = 0;
    }
}

/* The library's own estimate of a candidate's time (RCCL tuning.cc ncclTopoTuneModel and
 * ncclTopoGetAlgoTime), in seconds: its latency (the same terms the flows are timed with) plus
 * bytes / algBw, where busBw = channels x per-channel bandwidth of the graph (the intra-node one on
 * up to 2 nodes, the inter-node one beyond) x bw_ratio[nodes > 2][algo][proto], and algBw = busBw
 * x 1/2 for the tree, x n / steps for the ring (n / (2(n-1)) for allreduce). This chooses; the
 * chosen algorithm is then timed on the modelled links. RCCL's size-dependent correction tables
 * (treeCorrectionFactor, ringCorrectionFactor) are not modelled. */
static double model_time(const CollSpec *sp, const CollChoice *cand, CollOp op, int n, int nodes,
                         double bytes) {
    int more = nodes > 2;
    double bus =
        sp->model_channels * sp->model_bw[more] * sp->model_ratio[more][cand->algo][cand->proto];
    int steps = op == COLL_ALLREDUCE                                ? 2 * (n - 1)
                : op == COLL_ALLGATHER || op == COLL_REDUCE_SCATTER ? n - 1
                                                                    : n;
    double alg = bus * (cand->algo == ALGO_TREE ? 0.5 : (double)n / steps);
    return cand->latency / 1e12 + bytes / alg;
}

void coll_copies_evenness(const Collectives *c, int *sends, int *uneven, double *pace_ratio) {
    coll_streams_copies_evenness(c->streams, sends, uneven, pace_ratio);
}

const CollGroup *coll_group(Collectives *c, CollOp op, const int *members, int n) {
    return coll_streams_group(c->streams, members, n, coll_op_keeps_order(op));
}

gboolean coll_group_spans_nodes(const CollGroup *g) {
    return coll_group_nodes(g) > 1; /* the ring's node changes, counted once per node */
}

CollChoice coll_choose(Collectives *c, CollOp op, const int *members, int n, double bytes) {
    if (n <= 1)
        return (CollChoice){ALGO_RING, PROTO_SIMPLE, -1, 0, 0, COLL_LIMIT_LATENCY, 0};
    return coll_choose_group(c, op, coll_group(c, op, members, n), bytes);
}

/* coll_choose_group past its memo: the group's list of choices, or a new one. */
static CollChoice choose_group(Collectives *c, CollOp op, const CollGroup *g, double bytes) {
    int id = coll_group_id(g);
    if ((guint)id >= c->choices->len)
        g_ptr_array_set_size(c->choices, id + 1);
    GArray *made = g_ptr_array_index(c->choices, id);
    if (!made)
        made = g_ptr_array_index(c->choices, id) = g_array_new(FALSE, FALSE, sizeof(ChoiceEntry));
    for (guint k = 0; k < made->len; k++) {
        const ChoiceEntry *e = &g_array_index(made, ChoiceEntry, k);
        if (e->op == (int)op && e->bytes == bytes)
            return e->choice;
    }
    int n;
    coll_group_members(g, &n);
    CollChoice best = {ALGO_RING, PROTO_SIMPLE, -1, 0, 0, COLL_LIMIT_LATENCY, 0};
    int nodes = coll_group_nodes(g);
    gboolean found = FALSE;
    double best_model = G_MAXDOUBLE;
    for (int a = 0; a < ALGO_COUNT; a++) {
        if ((c->force_algo >= 0 && a != c->force_algo) ||
            (c->force_algo < 0 && !c->spec->algo_allowed[a]) || !algos[a].applies(op, n, nodes))
            continue;
        for (int p = 0; p < PROTO_COUNT; p++) {
            if ((c->force_proto >= 0 && p != c->force_proto) ||
                (c->force_proto < 0 && !c->spec->proto_allowed[p]))
                continue;
            CollChoice cand;
            evaluate(c, a, p, op, g, bytes, &cand);
            /* the library's model chooses where the topology gives one; a backend (not the
               library) and topologies without a model: the time on the links */
            double mt = c->spec->model_channels > 0 && cand.backend < 0
                            ? model_time(c->spec, &cand, op, n, nodes, bytes)
                            : (double)cand.predicted;
            if (!found || mt < best_model) {
                best = cand;
                best_model = mt;
                found = TRUE;
            }
        }
    }
    if (!found) /* nothing allowed applies: ring, Simple */
        evaluate(c, ALGO_RING, PROTO_SIMPLE, op, g, bytes, &best);
    ChoiceEntry e = {op, bytes, best};
    g_array_append_val(made, e);
    return best;
}

gboolean coll_algo_applies(CollAlgo a, CollOp op, int n, int nodes) {
    return a >= 0 && a < ALGO_COUNT && algos[a].applies(op, n, nodes);
}

/* O(choices made for the group): a group meets a few message sizes (its layers' tensors, its
 * buckets), each choice is made once. */
CollChoice coll_choose_group(Collectives *c, CollOp op, const CollGroup *g, double bytes) {
    CollChoiceMemo *memo = coll_group_memo(g);
    if (memo->gen == c->choice_gen && memo->op == (int)op && memo->bytes == bytes)
        return memo->choice;
    CollChoice made_choice = choose_group(c, op, g, bytes);
    *memo = (CollChoiceMemo){c->choice_gen, op, bytes, made_choice};
    return made_choice;
}

/* --- running ------------------------------------------------------------------------------- */

static void start_phase(Collectives *c, guint slot);

static void finish(Collectives *c, guint slot) {
    Instance *in = &c->inst[slot];
    NetDoneFn done = in->done;
    void *ctx = in->ctx;
    uint64_t arg = in->arg;
    coll_channels_clear(&in->ch);
    if (c->nfree == c->cfree) {
        c->cfree = c->cfree ? 2 * c->cfree : 64;
        c->free_slots = g_renew(guint, c->free_slots, c->cfree);
    }
    c->free_slots[c->nfree++] = slot;
    done(ctx, arg);
}

static void on_flow_done(void *ctx, uint64_t slot) {
    Collectives *c = ctx;
    Instance *in = &c->inst[slot];
    if (--in->pending > 0)
        return;
    if (in->steps > 0 && ++in->step < in->steps) { /* detailed ring: next step */
        start_phase(c, (guint)slot);
        return;
    }
    if (++in->phase < in->phases) {
        start_phase(c, (guint)slot);
        return;
    }
    finish(c, (guint)slot);
}

static void start_phase(Collectives *c, guint slot) {
    Instance *in = &c->inst[slot];
    const CollSpec *sp = c->spec;
    int bi;
    const CollBackend *b = backend_for(sp, in->op, in->bytes, &bi);
    double factor = b ? 1.0 : sp->bw_factor[in->choice.proto];
    if (in->steps > 0) { /* detailed ring step: one flow per edge per channel, one chunk each */
        int n = in->n, C = in->ch.C;
        double chunk = in->bytes / n / C / factor;
        in->pending = n * C;
        for (int e = 0; e < n * C; e++) {
            const int *r = coll_channel_ring(&in->ch, e / n), *nic = in->ch.nic + e / n * 2;
            int i = e % n;
            net_loads_reset(c->net);
            for (int j = 0; j < in->copies; j++)
                coll_streams_edge(c->streams, r[i] + j * in->stride,
                                  r[(i + 1) % n] + j * in->stride, nic[0], nic[1],
                                  coll_streams_copy_nodes(in->rep_node, j, in->whole));
            int nl;
            const NetLoad *loads = net_loads_get(c->net, &nl);
            SimTime lat = in->step_latency +
                          (in->step == 0 ? (b ? b->latency : sp->base[in->choice.proto]) : 0);
            net_flow(c->net, loads, nl, chunk, lat, in->cls, on_flow_done, c, slot);
        }
        return;
    }
    CollShape s;
    int nl;
    NetLoadSet *facts;
    const NetLoad *loads =
        coll_streams_loads_copies(c->streams, in->group, in->choice.algo, in->op, in->phase,
                                  in->rep_node, in->copies, in->stride, in->whole, &s, &nl, &facts);
    double sb = coll_shape_bytes(&s, in->bytes);
    SimTime lat = b ? (SimTime)(s.intra_steps + s.inter_steps) * b->step_latency
                    : shape_latency(sp, in->choice.algo, in->choice.proto, &s);
    if (in->phase == 0)
        lat += b ? b->latency : sp->base[in->choice.proto];
    double bytes = sb / factor;
    if (b) { /* cap the stream at the backend's bandwidth, uncontended */
        double alone = net_flow_time_alone(c->net, loads, nl, bytes, 0) / 1e12;
        double capped = sb * s.streams / b->bandwidth;
        if (alone > 0 && capped > alone)
            bytes *= capped / alone;
    }
    in->pending = 1;
    net_flow_borrowed(c->net, loads, nl, facts, bytes, lat, in->cls, on_flow_done, c, slot);
}

/* A free instance slot (its contents to be set). */
static guint instance_new(Collectives *c) {
    if (c->nfree)
        return c->free_slots[--c->nfree];
    if (c->ninst == c->cinst)
        c->inst = bigmem_double(c->inst, &c->cinst, sizeof(Instance), "collectives");
    return c->ninst++;
}

static void on_trivial(Engine *eng, void *ctx, uint64_t slot) {
    (void)eng;
    finish(ctx, (guint)slot);
}

void coll_start(Collectives *c, const CollCall *call, NetDoneFn done, void *ctx, uint64_t arg) {
    CollOp op = call->op;
    double bytes = call->bytes;
    int copies = call->copies > 0 ? call->copies : 1;
    const CollGroup *g = call->group;
    if (!g && call->n == 1) { /* nothing to move: done at the end of this instant */
        guint slot = instance_new(c);
        c->inst[slot] =
            (Instance){.op = op, .n = 1, .bytes = bytes, .done = done, .ctx = ctx, .arg = arg};
        engine_schedule(c->eng, 0, on_trivial, c, slot);
        return;
    }
    if (!g)
        g = coll_group(c, op, call->members, call->n);
    int n;
    coll_group_members(g, &n);
    g_assert(n >= 2 && coll_group_keeps_order(g) == coll_op_keeps_order(op));
    Instance in = {0};
    in.copies = copies;
    in.stride = copies > 1 ? call->stride : 0;
    in.whole = MAX(call->whole, 1);
    in.rep_node = call->form == COLL_SYMMETRIC ? call->rep / topo_gpus_per_node(c->topo)
                  : call->form == COLL_IMAGES && copies > 1 ? COLL_NODES_NONE
                                                            : COLL_NODES_ALL;
    in.op = op;
    in.cls = call->cls;
    in.n = n;
    in.bytes = bytes;
    in.done = done;
    in.ctx = ctx;
    in.arg = arg;
    guint slot = instance_new(c);
    /* copy 0: every node; the bound's run chooses as the full form does (coll_set_bound) */
    c->rep_node = in.rep_node >= 0 && !c->bound ? in.rep_node : COLL_NODES_ALL;
    in.choice = coll_choose_group(c, op, g, bytes);
    c->rep_node = -1;
    in.group = g;
    in.ring = coll_group_ring(g);
    in.phases = algos[in.choice.algo].phases;
    if (c->mode == COLL_MODE_DETAILED && in.choice.algo == ALGO_RING &&
        (op == COLL_ALLREDUCE || op == COLL_ALLGATHER || op == COLL_REDUCE_SCATTER)) {
        in.steps = coll_ring_steps(op, n);
        int bi;
        const CollBackend *b = backend_for(c->spec, op, bytes, &bi);
        SimTime base = b ? b->latency : c->spec->base[in.choice.proto];
        in.step_latency = (in.choice.latency - base) / in.steps;
        coll_channels_build(c->topo, in.ring, n, &in.ch);
    }
    c->inst[slot] = in;
    start_phase(c, slot);
}

static void on_alone_done(void *ctx, uint64_t arg) {
    (void)arg;
    *(int *)ctx = 1;
}

SimTime coll_run_alone(const TopologySpec *spec, CollOp op, int n, double bytes, gboolean detailed,
                       int algo, int proto, CollChoice *choice, char *limit, size_t limit_size,
                       GError **err) {
    int nodes = (n + spec->gpus_per_node - 1) / spec->gpus_per_node;
    g_autoptr(Topology) topo = topo_new(spec, nodes, err);
    if (!topo)
        return -1;
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    g_autoptr(Collectives) coll = coll_new(eng, net, topo);
    coll_set_mode(coll, detailed ? COLL_MODE_DETAILED : COLL_MODE_AGGREGATED);
    coll_force(coll, algo, proto);
    g_autofree int *members = g_new(int, n);
    for (int i = 0; i < n; i++)
        members[i] = op == COLL_SEND && i == 1 ? n - 1 : i; /* send: first to last GPU */
    int m = op == COLL_SEND ? 2 : n;
    CollChoice c = coll_choose(coll, op, members, m, bytes);
    if (choice)
        *choice = c;
    if (limit)
        coll_limit_describe(coll, &c, limit, limit_size);
    int done = 0;
    coll_start(coll, &(CollCall){.op = op, .members = members, .n = m, .bytes = bytes},
               on_alone_done, &done, 0);
    SimTime end = engine_run(eng);
    if (engine_overflowed(eng)) {
        g_set_error(err, MACHINE_ERROR, MACHINE_ERROR_RANGE,
                    "a %s of %.0f bytes over %d GPUs would last past %.0f days, beyond what "
                    "64-bit picoseconds hold: a smaller size or a larger bandwidth",
                    coll_op_name(op), bytes, n,
                    (double)SIM_TIME_MAX / (double)SIM_PS_PER_S / 86400.0);
        return -1;
    }
    g_assert(done);
    return end;
}
