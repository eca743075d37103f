/* collectives: rings built from the node's link graph, costed edge by edge.
 *
 * Ring choice: RCCL builds rings that follow the fastest links inside a node and cross between
 * nodes once per node (ROCm/rccl src/graph). We keep each node's members together and order them to
 * maximise the bottleneck bandwidth of the node's ring (then fewest hops, then most total
 * bandwidth), found by exhaustive search over at most 9 members, greedily beyond; the result is
 * cached per set of local GPUs. */
#include "collectives.h"

#include <string.h>

typedef struct {
    int remaining; /* edge transfers still in flight */
    NetDoneFn done;
    void *ctx;
    uint64_t arg;
} Instance;

struct Collectives {
    Engine *eng;
    Network *net;
    const Topology *topo;
    GArray *instances;       /* Instance, by slot */
    GArray *free_slots;      /* guint */
    GHashTable *local_rings; /* GUINT_TO_POINTER(mask + 1) -> int[] local ring order */
    GArray *scratch;         /* int: members sorted by GPU */
};

static const char *const op_names[COLL_OP_COUNT] = {
    "allreduce", "allgather", "reduce_scatter", "reduce", "broadcast", "all_to_all", "send", "recv",
};

const char *coll_op_name(CollOp op) {
    g_assert(op < COLL_OP_COUNT);
    return op_names[op];
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
        return n - 1;
    case COLL_SEND:
        return 1;
    default:
        g_error("collective %s has no ring algorithm yet", coll_op_name(op));
    }
}

Collectives *coll_new(Engine *eng, Network *net, const Topology *topo) {
    Collectives *c = g_new0(Collectives, 1);
    c->eng = eng;
    c->net = net;
    c->topo = topo;
    c->instances = g_array_new(FALSE, FALSE, sizeof(Instance));
    c->free_slots = g_array_new(FALSE, FALSE, sizeof(guint));
    c->local_rings = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    c->scratch = g_array_new(FALSE, FALSE, sizeof(int));
    return c;
}

void coll_free(Collectives *c) {
    if (!c)
        return;
    g_array_unref(c->instances);
    g_array_unref(c->free_slots);
    g_hash_table_unref(c->local_rings);
    g_array_unref(c->scratch);
    g_free(c);
}

/* --- ring order ---------------------------------------------------------------------------- */

typedef struct {
    double min_bw; /* slowest edge, bytes/s */
    int hops;      /* links crossed in all */
    double sum_bw; /* bytes/s */
} RingScore;

static gboolean score_better(const RingScore *a, const RingScore *b) {
    if (a->min_bw != b->min_bw)
        return a->min_bw > b->min_bw;
    if (a->hops != b->hops)
        return a->hops < b->hops;
    return a->sum_bw > b->sum_bw;
}

static RingScore score_ring(const Topology *t, const int *ring, int k) {
    RingScore s = {G_MAXDOUBLE, 0, 0.0};
    for (int i = 0; i < k; i++) {
        TopoRoute r = topo_route(t, ring[i], ring[(i + 1) % k]);
        s.min_bw = MIN(s.min_bw, r.bandwidth);
        s.hops += r.hops;
        s.sum_bw += r.bandwidth;
    }
    return s;
}

/* Permute perm[pos..k-1] in lexicographic order, keeping the best ring in best. */
static void search_rings(const Topology *t, int *perm, int pos, int k, int *best,
                         RingScore *best_score) {
    if (pos == k) {
        RingScore s = score_ring(t, perm, k);
        if (score_better(&s, best_score)) {
            *best_score = s;
            memcpy(best, perm, sizeof(int) * k);
        }
        return;
    }
    for (int i = pos; i < k; i++) {
        int tmp = perm[i];
        memmove(perm + pos + 1, perm + pos, sizeof(int) * (i - pos));
        perm[pos] = tmp;
        search_rings(t, perm, pos + 1, k, best, best_score);
        memmove(perm + pos, perm + pos + 1, sizeof(int) * (i - pos));
        perm[i] = tmp;
    }
}

/* Best ring over the local GPUs in mask; returns k local indices (cached). */
static const int *local_ring(Collectives *c, guint mask, int *k_out) {
    int *ring = g_hash_table_lookup(c->local_rings, GUINT_TO_POINTER(mask + 1));
    int k = __builtin_popcount(mask);
    *k_out = k;
    if (ring)
        return ring;
    int members[TOPO_MAX_GPUS], n = 0;
    for (int i = 0; i < TOPO_MAX_GPUS; i++)
        if (mask & (1u << i))
            members[n++] = i;
    ring = g_new(int, k);
    memcpy(ring, members, sizeof(int) * k);
    if (k > 2 && k <= 9) {
        RingScore best = {-1.0, 0, 0.0};
        search_rings(c->topo, members, 1, k, ring, &best);
    } else if (k > 9) { /* greedy: widest next hop from the current GPU */
        guint left = mask;
        int cur = members[0];
        left &= ~(1u << cur);
        for (int i = 1; i < k; i++) {
            int best = -1;
            double best_bw = -1;
            for (int j = 0; j < TOPO_MAX_GPUS; j++) {
                if (!(left & (1u << j)))
                    continue;
                double bw = topo_route(c->topo, cur, j).bandwidth;
                if (bw > best_bw) {
                    best_bw = bw;
                    best = j;
                }
            }
            ring[i] = cur = best;
            left &= ~(1u << best);
        }
    }
    g_hash_table_insert(c->local_rings, GUINT_TO_POINTER(mask + 1), ring);
    return ring;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void coll_ring_order(Collectives *c, const int *members, int n, int *ring) {
    int g = topo_gpus_per_node(c->topo);
    g_array_set_size(c->scratch, n);
    int *sorted = (int *)c->scratch->data;
    memcpy(sorted, members, sizeof(int) * n);
    qsort(sorted, n, sizeof(int), cmp_int);
    int out = 0;
    for (int i = 0; i < n;) {
        int node = sorted[i] / g;
        guint mask = 0;
        int j = i;
        for (; j < n && sorted[j] / g == node; j++)
            mask |= 1u << (sorted[j] % g);
        int k;
        const int *lr = local_ring(c, mask, &k);
        for (int x = 0; x < k; x++)
            ring[out++] = node * g + lr[x];
        i = j;
    }
}

/* --- running ------------------------------------------------------------------------------- */

static void on_edge_done(void *ctx, uint64_t slot) {
    Collectives *c = ctx;
    Instance *in = &g_array_index(c->instances, Instance, slot);
    if (--in->remaining > 0)
        return;
    Instance done = *in;
    guint s = (guint)slot;
    g_array_append_val(c->free_slots, s);
    done.done(done.ctx, done.arg);
}

static void on_trivial(Engine *eng, void *ctx, uint64_t slot) {
    (void)eng;
    on_edge_done(ctx, slot);
}

void coll_start(Collectives *c, CollOp op, const int *members, int n, double bytes, NetDoneFn done,
                void *ctx, uint64_t arg) {
    g_assert(n >= 1);
    Instance in = {n == 1 ? 1 : (op == COLL_SEND ? 1 : n), done, ctx, arg};
    guint slot;
    if (c->free_slots->len) {
        slot = g_array_index(c->free_slots, guint, c->free_slots->len - 1);
        g_array_set_size(c->free_slots, c->free_slots->len - 1);
        g_array_index(c->instances, Instance, slot) = in;
    } else {
        slot = c->instances->len;
        g_array_append_val(c->instances, in);
    }
    if (n == 1) {
        engine_schedule(c->eng, 0, on_trivial, c, slot);
        return;
    }
    if (op == COLL_SEND) {
        g_assert(n == 2);
        net_transfer(c->net, members[0], members[1], bytes, 1, on_edge_done, c, slot);
        return;
    }
    int steps = coll_ring_steps(op, n);
    g_autofree int *ring = g_new(int, n);
    coll_ring_order(c, members, n, ring);
    double edge_bytes = bytes / n * steps; /* one chunk of m/n per round */
    for (int i = 0; i < n; i++)
        net_transfer(c->net, ring[i], ring[(i + 1) % n], edge_bytes, steps, on_edge_done, c, slot);
}
