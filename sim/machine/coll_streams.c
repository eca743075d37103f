/* coll_streams: rings and per-phase loads of collectives, cached per group (see coll_streams.h).
 *
 * A group is its member list as the caller gives it (hashed, FNV-1a, and compared whole); it
 * keeps its ring order and a short list of the phases built for it. Building a phase costs
 * O(edges x hops) paths (at 9,408 nodes a data-parallel ring is 37,632 channel edges); a lookup
 * O(n) to hash and compare the members. */
#include "coll_streams.h"

#include <string.h>

#include "bigmem.h"
#include "coll_channels.h"

typedef struct {
    CollAlgo algo;
    CollOp op;
    int phase, rep_node;
    int copies, stride; /* coll_streams_loads_copies; 1, 0 for one group */
    int whole;          /* ... copies loading their nodes' links under COLL_NODES_NONE; 1 else */
    CollShape shape;
    NetLoad *loads; /* its own (in the arena) unless borrowed from another phase set of the group */
    int nl;
    gboolean owned;   /* loads are its own, not a twin's */
    NetLoadSet facts; /* the network's handle for loads (net_flow_borrowed), NULL before use */
} PhaseSet;

struct CollGroup {
    uint64_t hash;
    int n;
    int id;              /* 0, 1, ... in the order made (coll_group_id) */
    gboolean keep_order; /* send: the members are the ring as given */
    int *members;        /* n, as given (after the struct, in its piece) */
    int *ring;           /* n, ring order (after the members) */
    int nodes;           /* nodes the ring crosses (coll_count_nodes) */
    PhaseSet *phases;    /* nphases of cphases (in the arena, doubling) */
    int nphases, cphases;
    CollChoiceMemo memo; /* coll_group_memo */
};
typedef struct CollGroup Group;

/* ARENA PIECES. Groups, their phase lists and their loads live until the streams go: carved from
 * one arena (bigmem.h), a group with its members and ring in one piece, so that all of Frontier
 * with every rank (a send pair per GPU and stage boundary, each a group with its loads) has them
 * on huge pages, not one small page each in the C heap (docs/speed.md, "Memory"). A phase list that
 * grows leaves its old piece behind (it doubles: at most as many bytes again as its final size). */
struct CollStreams {
    const Topology *topo;
    Network *net;
    BigArena *arena;
    GHashTable *groups;      /* Group * (key and value), in the arena */
    GHashTable *local_rings; /* GUINT_TO_POINTER(mask + 1) -> int[] local ring order */
    GArray *scratch;         /* int */
    int ngroups;             /* groups made */
    int rep_node;            /* while building: the symmetric form's node, -1 = all */
    gboolean shape_only;     /* while building: the shape, not the loads */
    gboolean drop_only;      /* coll_streams_set_drop_only: the symmetric form never folds */
    /* sends run as copies (coll_streams_copies_evenness): built, those whose copies' paces
       differ, and the largest ratio of a send's fastest copy's pace to its slowest's */
    int copy_sends, uneven_sends;
    double pace_ratio;
};

static guint group_hash(gconstpointer k) {
    const Group *g = k;
    return (guint)(g->hash ^ (g->hash >> 32));
}

static gboolean group_equal(gconstpointer a, gconstpointer b) {
    const Group *x = a, *y = b;
    return x->hash == y->hash && x->n == y->n && x->keep_order == y->keep_order &&
           memcmp(x->members, y->members, sizeof(int) * x->n) == 0;
}

CollStreams *coll_streams_new(const Topology *topo, Network *net) {
    CollStreams *cs = g_new0(CollStreams, 1);
    cs->topo = topo;
    cs->net = net;
    cs->groups = g_hash_table_new(group_hash, group_equal); /* groups: in the arena */
    cs->arena = bigarena_new();
    cs->local_rings = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    cs->scratch = g_array_new(FALSE, FALSE, sizeof(int));
    cs->rep_node = -1;
    cs->pace_ratio = 1;
    return cs;
}

void coll_streams_set_drop_only(CollStreams *cs) {
    cs->drop_only = TRUE;
}

void coll_streams_free(CollStreams *cs) {
    if (!cs)
        return;
    g_hash_table_unref(cs->groups);
    g_hash_table_unref(cs->local_rings);
    g_array_unref(cs->scratch);
    bigarena_free(cs->arena);
    g_free(cs);
}

/* --- ring order ---------------------------------------------------------------------------- */

/* Best ring over the local GPUs in mask; returns k local indices (cached). */
static const int *local_ring(CollStreams *cs, guint mask, int *k_out) {
    int *ring = g_hash_table_lookup(cs->local_rings, GUINT_TO_POINTER(mask + 1));
    *k_out = __builtin_popcount(mask);
    if (ring)
        return ring;
    ring = g_new(int, *k_out);
    coll_best_local_ring(cs->topo, mask, ring);
    g_hash_table_insert(cs->local_rings, GUINT_TO_POINTER(mask + 1), ring);
    return ring;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Each node's members together, nodes in ascending order, a node's GPUs in its best local ring. */
static void ring_order(CollStreams *cs, const int *members, int n, int *ring) {
    int g = topo_gpus_per_node(cs->topo);
    g_array_set_size(cs->scratch, n);
    int *sorted = (int *)cs->scratch->data;
    memcpy(sorted, members, sizeof(int) * n);
    gboolean ascending = TRUE; /* the usual case (a DP group): no sort */
    for (int i = 1; i < n && ascending; i++)
        ascending = sorted[i - 1] < sorted[i];
    if (!ascending)
        qsort(sorted, n, sizeof(int), cmp_int);
    int out = 0;
    guint last_mask = 0; /* most nodes hold the same local GPUs: their ring is looked up once */
    const int *lr = NULL;
    int k = 0;
    for (int i = 0; i < n;) {
        int node = sorted[i] / g, base = node * g; /* sorted: every later member is >= base */
        guint mask = 0;
        int j = i;
        for (; j < n && sorted[j] < base + g; j++)
            mask |= 1u << (sorted[j] - base);
        if (!lr || mask != last_mask) {
            lr = local_ring(cs, mask, &k);
            last_mask = mask;
        }
        for (int x = 0; x < k; x++)
            ring[out++] = node * g + lr[x];
        i = j;
    }
}

const CollGroup *coll_streams_group(CollStreams *cs, const int *members, int n,
                                    gboolean keep_order) {
    uint64_t h = 1469598103934665603u;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uint32_t)members[i]) * 1099511628211u;
    Group key = {.hash = h, .n = n, .keep_order = keep_order, .members = (int *)members};
    Group *g = g_hash_table_lookup(cs->groups, &key);
    if (g)
        return g;
    g = bigarena_alloc(cs->arena, sizeof(Group) + 2 * sizeof(int) * (size_t)n);
    *g = key;
    g->members = (int *)(g + 1);
    memcpy(g->members, members, sizeof(int) * n);
    g->ring = g->members + n;
    if (keep_order)
        memcpy(g->ring, members, sizeof(int) * n);
    else
        ring_order(cs, members, n, g->ring);
    g->nodes = coll_count_nodes(cs->topo, g->ring, n);
    g->id = cs->ngroups++;
    g_hash_table_add(cs->groups, g);
    return g;
}

const int *coll_group_ring(const CollGroup *g) {
    return g->ring;
}

const int *coll_group_members(const CollGroup *g, int *n) {
    *n = g->n;
    return g->members;
}

int coll_group_id(const CollGroup *g) {
    return g->id;
}

CollChoiceMemo *coll_group_memo(const CollGroup *g) {
    return &((Group *)g)->memo;
}

gboolean coll_group_keeps_order(const CollGroup *g) {
    return g->keep_order;
}

int coll_group_nodes(const CollGroup *g) {
    return g->nodes;
}

/* --- streams ------------------------------------------------------------------------------- */

/* The links one stream from a to b loads in the symmetric form for rep_node (coll_streams_edge);
 * none for a == b (a path that adds nothing to the builder). */
static void edge_path(CollStreams *cs, int a, int b, int nic_out, int nic_in, int rep_node,
                      TopoPath *p) {
    if (a == b) {
        p->n = 0;
        p->spread_group = -1;
        return;
    }
    int g = topo_gpus_per_node(cs->topo);
    if (rep_node != COLL_NODES_ALL && a / g != rep_node && b / g != rep_node) {
        /* symmetric form, an edge of two other nodes: the fabric's links alone */
        topo_path_fabric(cs->topo, a, b, nic_out, nic_in, topo_pair_salt(a, b), p);
        return;
    }
    topo_path_nics(cs->topo, a, b, nic_out, nic_in, topo_pair_salt(a, b), p);
    if (rep_node != COLL_NODES_ALL) { /* symmetric form: drop other nodes' local links */
        int k = 0;
        for (int i = 0; i < p->n; i++) {
            int node = topo_link_node(cs->topo, p->link[i]);
            if (node < 0 || node == rep_node)
                p->link[k++] = p->link[i];
        }
        p->n = k;
    }
}

void coll_streams_edge(CollStreams *cs, int a, int b, int nic_out, int nic_in, int rep_node) {
    TopoPath p;
    edge_path(cs, a, b, nic_out, nic_in, rep_node, &p);
    net_loads_add_path(cs->net, &p);
}

static void add_edge_nics(CollStreams *cs, int a, int b, int nic_out, int nic_in) {
    if (!cs->shape_only)
        coll_streams_edge(cs, a, b, nic_out, nic_in, cs->rep_node);
}

static void add_edge(CollStreams *cs, int a, int b) {
    add_edge_nics(cs, a, b, -1, -1);
}

/* Tree allreduce: per channel k and per tree t of NCCL's double binary tree over the nodes, a
 * chain through each node's GPUs in channel k's ring order, from its head (the first) down, and
 * the tree's edges between heads through channel k's NIC at both ends; reduce up and broadcast
 * down run at once, so every edge carries one stream each way. 2C streams of m/(2C) per edge
 * direction: an interior node's NICs send m/2 to its parent and m/2 to each of two children in
 * one tree, and m/2 up as a leaf of the other, 2m in all (the single tree of m sent 3m).
 * Returns the channel count C. */
static int tree_streams(CollStreams *c, const int *ring, int n, int nodes) {
    int g = topo_gpus_per_node(c->topo);
    CollChannels ch;
    coll_channels_build(c->topo, ring, n, &ch);
    int *head = g_new(int, nodes), *start = g_new(int, nodes + 1);
    for (int k = 0; k < ch.C; k++) {
        const int *r = coll_channel_ring(&ch, k);
        int nic = ch.nic[2 * k + 1]; /* the NIC the channel enters a node by */
        for (int j = 0, i = 0; i < n; j++) {
            start[j] = i;
            head[j] = r[i];
            while (i < n && r[i] / g == head[j] / g)
                i++;
        }
        start[nodes] = n;
        for (int t = 0; t < 2; t++) {
            for (int j = 0; j < nodes; j++) {
                for (int x = start[j]; x + 1 < start[j + 1]; x++) {
                    add_edge(c, r[x], r[x + 1]);
                    add_edge(c, r[x + 1], r[x]);
                }
                int p = coll_dtree_parent(t, j, nodes);
                if (p >= 0) {
                    add_edge_nics(c, head[j], head[p], nic, nic);
                    add_edge_nics(c, head[p], head[j], nic, nic);
                }
            }
        }
    }
    g_free(head);
    g_free(start);
    int C = ch.C;
    coll_channels_clear(&ch);
    return C; /* channels */
}

/* Fill the network's load builder with the streams of one phase; return its shape (the
 * formulas' stream bytes: ring m steps / n / C, tree m / streams, hierarchical m (ppn - 1) / ppn
 * inside nodes and 2m (nodes - 1) / nodes / ppn across, chains m, all-to-all m / n).
 * phase: 0 for single-phase algorithms; 0, 1, 2 for hierarchical. */
static CollShape build_streams(CollStreams *c, CollAlgo algo, CollOp op, const Group *grp,
                               int phase) {
    net_loads_reset(c->net);
    CollShape s = {1.0, 1, 1, 0, 0};
    const int *ring = grp->ring;
    int n = grp->n, g = topo_gpus_per_node(c->topo), nodes = grp->nodes;
    if (op == COLL_SEND) {
        add_edge(c, ring[0], ring[1]);
        s.inter_steps = ring[0] / g != ring[1] / g;
        s.intra_steps = 1 - s.inter_steps;
        return s;
    }
    if (op == COLL_SENDRECV) { /* one step: every member to the next, in the order given */
        for (int i = 0; i < n; i++)
            add_edge(c, ring[i], ring[(i + 1) % n]);
        s.inter_steps = nodes > 1;
        s.intra_steps = 1 - s.inter_steps;
        return s;
    }
    if (algo == ALGO_HIER) {
        int ppn = n / nodes; /* members per node (equal by construction) */
        if (phase == 1) {    /* allreduce of m/ppn across nodes, one ring per local position */
            for (int p = 0; p < ppn; p++)
                for (int j = 0; j < nodes; j++)
                    add_edge(c, ring[j * ppn + p], ring[(j + 1) % nodes * ppn + p]);
            s.per_m = 2.0 * (nodes - 1) / nodes; /* x m / ppn */
            s.div = ppn;
            s.inter_steps = 2 * (nodes - 1);
        } else { /* reduce-scatter (0) or allgather (2) inside each node */
            for (int j = 0; j < nodes; j++)
                for (int p = 0; p < ppn; p++)
                    add_edge(c, ring[j * ppn + p], ring[j * ppn + (p + 1) % ppn]);
            s.per_m = (double)(ppn - 1) / ppn;
            s.intra_steps = ppn - 1;
        }
        return s;
    }
    if (algo == ALGO_TREE) { /* allreduce only */
        int first = 0;
        for (int i = 0; i < n;) {
            int k = i;
            while (k < n && ring[k] / g == ring[i] / g)
                k++;
            first = MAX(first, k - i);
            i = k;
        }
        s.streams = 2 * tree_streams(c, ring, n, nodes);
        s.div = s.streams; /* m / streams */
        s.intra_steps = 2 * (first - 1);
        /* NCCL's and RCCL's tuning.cc: 2 (... + log2i(nNodes) interLat), log2i the floor */
        s.inter_steps = nodes > 1 ? 2 * (int)floor(log2(nodes)) : 0;
        return s;
    }
    int steps = coll_ring_steps(op, n);
    switch (op) {
    case COLL_ALLREDUCE:
    case COLL_ALLGATHER:
    case COLL_REDUCE_SCATTER:
    case COLL_REDUCE: {
        CollChannels ch = {0};
        if (c->shape_only) /* the count alone */
            ch.C = coll_channels_count(c->topo, ring, n);
        else
            coll_channels_build(c->topo, ring, n, &ch);
        /* channels that all cross the same edges by the same NICs (one GPU per node: every
         * rotation is the ring) load the same links in the same order: build one, scale it */
        int built = ch.ring && coll_channels_alike(&ch) ? 1 : ch.C;
        for (int k = 0; k < built && ch.ring; k++) {
            const int *r = coll_channel_ring(&ch, k);
            for (int i = 0; i < n; i++)
                add_edge_nics(c, r[i], r[(i + 1) % n], ch.nic[2 * k], ch.nic[2 * k + 1]);
        }
        if (built < ch.C)
            net_loads_scale(c->net, (uint32_t)ch.C);
        s.streams = ch.C;
        s.div = ch.C;
        coll_channels_clear(&ch);
        if (op == COLL_REDUCE) {
            /* NCCL's and RCCL's ring reduce (src/device/reduce.h, runRing): on every channel each
             * chunk passes once along the ring from the root's successor to the root, reduced
             * on the way: m / C over each edge, n - 1 steps, the ring crossing nodes - 1 node
             * boundaries. Every edge is loaded alike (the root's own out-edge idles in a call,
             * but the roots of DeepSpeed's reduces, the only ones a workload issues, are every
             * partition owner in turn), so the loads stay node-symmetric. */
            s.per_m = 1.0;
            s.inter_steps = nodes - 1;
            break;
        }
        s.per_m = (double)steps / n; /* x m / C */
        s.inter_steps = nodes > 1 ? (op == COLL_ALLREDUCE ? 2 : 1) * nodes : 0;
        break;
    }
    case COLL_BROADCAST: /* pipelined chain from ring[0] */
        for (int i = 0; i + 1 < n; i++)
            add_edge(c, ring[i], ring[i + 1]);
        s.inter_steps = nodes - 1;
        break;
    case COLL_ALL_TO_ALL:
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                add_edge(c, ring[i], ring[j]);
        s.div = n; /* m / n */
        steps = 1;
        s.inter_steps = nodes > 1;
        break;
    default:
        g_assert_not_reached();
    }
    s.inter_steps = MIN(s.inter_steps, steps);
    s.intra_steps = steps - s.inter_steps;
    return s;
}

/* Ring allreduce, allgather, reduce-scatter and reduce move over the same edges (the channels'
 * rings), so they load the same links alike; only their shapes differ. */
static gboolean ring_edges(CollAlgo algo, CollOp op) {
    return algo == ALGO_RING && (op == COLL_ALLREDUCE || op == COLL_ALLGATHER ||
                                 op == COLL_REDUCE_SCATTER || op == COLL_REDUCE);
}

/* Whether every node of a group carries the same streams on its node-local links, so that one
 * node stands for all (the symmetric form): a ring's channels cross every node alike, and so do
 * the hierarchical phases and the all-to-all. NCCL's double binary tree does not (src/graph/
 * trees.cc: a node with two children in one tree is a leaf in the other, and the roots and the
 * one-child nodes move less; at 4 nodes node 0 moves m each way, node 2 moves 2m), nor does the
 * broadcast chain (its ends move less). */
static gboolean node_symmetric(CollAlgo algo, CollOp op) {
    return algo != ALGO_TREE && op != COLL_BROADCAST;
}

/* The symmetric form of loads that differ between nodes: each node-local link of rep_node
 * weighs the most that its image on any node does (the busiest node's load, which bounds the
 * collective's pace: one flow moves at its slowest link's rate); fabric links stay. Every node
 * of a data-parallel group runs the same program, so rep_node's other traffic is every node's,
 * and the flow's rate is that of the full form when it is limited on a node, exactly where
 * nothing else runs on the other nodes' links. Returns a copy in the arena; *nl is updated. O(nl).
 */
static NetLoad *fold_onto_node(CollStreams *cs, const NetLoad *loads, int *nl, int rep_node) {
    NetLoad *out = bigarena_alloc(cs->arena, sizeof(NetLoad) * (*nl > 0 ? *nl : 1));
    g_autoptr(GHashTable) at = g_hash_table_new(g_direct_hash, g_direct_equal); /* link -> k+1 */
    int k = 0;
    for (int i = 0; i < *nl; i++) {
        int32_t link = topo_link_on_node(cs->topo, loads[i].link, rep_node);
        int j = GPOINTER_TO_INT(g_hash_table_lookup(at, GINT_TO_POINTER(link))) - 1;
        if (j >= 0) {
            out[j].weight = MAX(out[j].weight, loads[i].weight);
            continue;
        }
        out[k] = (NetLoad){link, loads[i].weight};
        g_hash_table_insert(at, GINT_TO_POINTER(link), GINT_TO_POINTER(k + 1));
        k++;
    }
    *nl = k;
    return out;
}

int coll_streams_copy_nodes(int rep_node, int j, int whole) {
    if (rep_node != COLL_NODES_NONE)
        return rep_node;
    return j < whole ? COLL_NODES_ALL : COLL_NODES_NONE;
}

/* UNEVEN COPIES. A send run as copies is one flow, which moves at its slowest link's pace. That
 * is every copy's pace apart only where their paths are images of each other (the argument of
 * the copies of a CollCall, collectives.h). Where they are not, as on a dragonfly whose global link
 * between two groups is picked per GPU pair, the one flow holds the copies that would go faster
 * to the slowest one's pace, and in step, where simulated apart they drift and spread their
 * crossings over time: the deduplicated iteration can then exceed --all-ranks' (docs/speed.md,
 * "Representatives": +132% on all of Frontier). Such a send is counted here, once, when built
 * with its copies' sum in the builder. A copy's pace is the least over its links of
 * net_loads_link_pace under that sum, its nodes' links taken as copy 0's (their images, which
 * the symmetric form leaves out of the other copies' paths); the send is uneven where its
 * fastest copy's pace exceeds its slowest's by more than rounding. A pace leaves out the run's
 * other traffic and latency: even paces do not prove the copies alike, and uneven ones move the
 * iteration only where that pace bounds it (test_uneven_copies). O(copies x hops). */
#define PACE_EVEN 1e-9

static void count_uneven(CollStreams *cs, const TopoPath *paths, int copies) {
    /* copy 0's node-local links: every copy's nodes are images of its (the others' paths in
       the symmetric form leave theirs out) */
    double local = G_MAXDOUBLE;
    for (int i = 0; i < paths[0].n; i++)
        if (topo_link_node(cs->topo, paths[0].link[i]) >= 0)
            local = MIN(local, net_loads_link_pace(cs->net, paths[0].link[i]));
    double lo = G_MAXDOUBLE, hi = 0;
    for (int j = 0; j < copies; j++) {
        double pace = local;
        for (int i = 0; i < paths[j].n; i++)
            pace = MIN(pace, net_loads_link_pace(cs->net, paths[j].link[i]));
        lo = MIN(lo, pace);
        hi = MAX(hi, pace);
    }
    cs->copy_sends++;
    if (hi > lo * (1 + PACE_EVEN)) {
        cs->uneven_sends++;
        cs->pace_ratio = MAX(cs->pace_ratio, hi / lo);
    }
}

void coll_streams_copies_evenness(const CollStreams *cs, int *sends, int *uneven,
                                  double *pace_ratio) {
    *sends = cs->copy_sends;
    *uneven = cs->uneven_sends;
    *pace_ratio = cs->pace_ratio;
}

const NetLoad *coll_streams_loads(CollStreams *cs, const CollGroup *g, CollAlgo algo, CollOp op,
                                  int phase, int rep_node, CollShape *shape, int *nl) {
    return coll_streams_loads_copies(cs, g, algo, op, phase, rep_node, 1, 0, 1, shape, nl, NULL);
}

const NetLoad *coll_streams_loads_copies(CollStreams *cs, const CollGroup *cg, CollAlgo algo,
                                         CollOp op, int phase, int rep_node, int copies, int stride,
                                         int whole, CollShape *shape, int *nl, NetLoadSet **facts) {
    Group *g = (Group *)cg; /* its phase list grows */
    if (copies <= 1)
        stride = 0;
    if (copies <= 1 || rep_node != COLL_NODES_NONE || whole < 1)
        whole = 1;
    for (int i = 0; i < g->nphases; i++) {
        const PhaseSet *ps = &g->phases[i];
        if (ps->algo == algo && ps->op == op && ps->phase == phase && ps->rep_node == rep_node &&
            ps->copies == MAX(copies, 1) && ps->stride == stride && ps->whole == whole) {
            *shape = ps->shape;
            *nl = ps->nl;
            if (facts)
                *facts = &((PhaseSet *)ps)->facts;
            return ps->loads;
        }
    }
    PhaseSet ps = {.algo = algo,
                   .op = op,
                   .phase = phase,
                   .rep_node = rep_node,
                   .copies = MAX(copies, 1),
                   .stride = stride,
                   .whole = whole};
    const PhaseSet *twin = NULL; /* a phase set over the same edges */
    for (int i = 0; i < g->nphases && ring_edges(algo, op); i++) {
        const PhaseSet *o = &g->phases[i];
        if (ring_edges(o->algo, o->op) && o->rep_node == rep_node && o->copies == ps.copies &&
            o->stride == stride && o->whole == whole && o->owned)
            twin = o;
    }
    if (twin) {
        cs->shape_only = TRUE;
        ps.shape = build_streams(cs, algo, op, g, phase);
        cs->shape_only = FALSE;
        ps.loads = twin->loads;
        ps.nl = twin->nl;
    } else if (copies <= 1) {
        gboolean fold = rep_node >= 0 && !node_symmetric(algo, op) && !cs->drop_only;
        cs->rep_node = fold ? -1 : rep_node;
        ps.shape = build_streams(cs, algo, op, g, phase);
        cs->rep_node = -1;
        const NetLoad *built = net_loads_get(cs->net, &ps.nl);
        ps.loads = fold ? fold_onto_node(cs, built, &ps.nl, rep_node)
                        : bigarena_dup(cs->arena, built, sizeof(NetLoad) * (ps.nl > 0 ? ps.nl : 1));
        ps.owned = TRUE;
    } else if (op == COLL_SEND) { /* each copy's path straight into the builder (no group per
                                     copy: DP replicas' copies are hundreds per send) */
        cs->shape_only = TRUE;
        ps.shape = build_streams(cs, algo, op, g, phase);
        cs->shape_only = FALSE;
        net_loads_reset(cs->net);
        g_autofree TopoPath *paths = g_new(TopoPath, copies);
        for (int j = 0; j < copies; j++) {
            edge_path(cs, g->ring[0] + j * stride, g->ring[1] + j * stride, -1, -1,
                      coll_streams_copy_nodes(rep_node, j, whole), &paths[j]);
            net_loads_add_path(cs->net, &paths[j]);
        }
        const NetLoad *built = net_loads_get(cs->net, &ps.nl);
        ps.loads = bigarena_dup(cs->arena, built, sizeof(NetLoad) * (ps.nl > 0 ? ps.nl : 1));
        ps.owned = TRUE;
        count_uneven(cs, paths, copies);
    } else { /* each copy's own loads (cached with its group), summed */
        g_autofree int *m = g_new(int, g->n);
        GArray *parts = g_array_new(FALSE, FALSE, sizeof(NetLoad));
        for (int j = 0; j < copies; j++) {
            for (int i = 0; i < g->n; i++)
                m[i] = g->members[i] + j * stride;
            const CollGroup *gj = coll_streams_group(cs, m, g->n, g->keep_order);
            CollShape sj;
            int nj;
            const NetLoad *lj = coll_streams_loads(
                cs, gj, algo, op, phase, coll_streams_copy_nodes(rep_node, j, whole), &sj, &nj);
            if (j == 0)
                ps.shape = sj;
            g_array_append_vals(parts, lj, (guint)nj);
        }
        net_loads_reset(cs->net);
        net_loads_add(cs->net, (const NetLoad *)parts->data, (int)parts->len);
        g_array_unref(parts);
        const NetLoad *built = net_loads_get(cs->net, &ps.nl);
        ps.loads = bigarena_dup(cs->arena, built, sizeof(NetLoad) * (ps.nl > 0 ? ps.nl : 1));
        ps.owned = TRUE;
        g = (Group *)cg; /* the table may have grown; the group itself did not move */
    }
    if (g->nphases == g->cphases) {
        int cap = g->cphases ? 2 * g->cphases : 2;
        g->phases = bigarena_regrow(cs->arena, g->phases, (size_t)g->nphases, (size_t)cap,
                                    sizeof(PhaseSet));
        g->cphases = cap;
    }
    g->phases[g->nphases++] = ps;
    *shape = ps.shape;
    *nl = ps.nl;
    if (facts)
        *facts = &g->phases[g->nphases - 1].facts;
    return ps.loads;
}
