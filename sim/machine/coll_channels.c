/* coll_channels: rings, channels and trees of collectives (see coll_channels.h).
 *
 * Ring choice: RCCL builds rings that follow the fastest links inside a node and cross between
 * nodes once per node (ROCm/rccl src/graph). Without the library's own list we keep each node's
 * members together and order them to maximise the bottleneck bandwidth of the node's ring. With
 * it (RCCL's rome_models.cc for Frontier's node: four rings, two permutations in both directions,
 * so that each single xGMI link direction carries one ring) we use its rings as they are. */
#include "coll_channels.h"

#include <string.h>

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

/* Routes between the local GPUs of one search, computed once: [from][to]. */
typedef struct {
    TopoRoute r[TOPO_MAX_GPUS][TOPO_MAX_GPUS];
} RouteTable;

static RingScore score_ring(const RouteTable *rt, const int *ring, int k) {
    RingScore s = {G_MAXDOUBLE, 0, 0.0};
    for (int i = 0; i < k; i++) {
        const TopoRoute r = rt->r[ring[i]][ring[(i + 1) % k]];
        s.min_bw = MIN(s.min_bw, r.bandwidth);
        s.hops += r.hops;
        s.sum_bw += r.bandwidth;
    }
    return s;
}

/* Permute perm[pos..k-1] in lexicographic order, keeping the best ring in best. */
static void search_rings(const RouteTable *t, int *perm, int pos, int k, int *best,
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

void coll_best_local_ring(const Topology *t, guint mask, int *ring) {
    int members[TOPO_MAX_GPUS], k = 0;
    for (int i = 0; i < TOPO_MAX_GPUS; i++)
        if (mask & (1u << i))
            members[k++] = i;
    memcpy(ring, members, sizeof(int) * k);
    if (k > 2 && k <= 9) {
        RingScore best = {-1.0, 0, 0.0};
        RouteTable *rt = g_new(RouteTable, 1);
        for (int a = 0; a < k; a++)
            for (int b = 0; b < k; b++)
                if (a != b)
                    rt->r[members[a]][members[b]] = topo_route(t, members[a], members[b]);
        search_rings(rt, members, 1, k, ring, &best);
        g_free(rt);
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
                double bw = topo_route(t, cur, j).bandwidth;
                if (bw > best_bw) {
                    best_bw = bw;
                    best = j;
                }
            }
            ring[i] = cur = best;
            left &= ~(1u << best);
        }
    }
}

int coll_count_nodes(const Topology *t, const int *ring, int n) {
    int g = topo_gpus_per_node(t), nodes = 0, base = 0; /* base: the last one's node's first GPU */
    for (int i = 0; i < n; i++)
        if (i == 0 || (unsigned)(ring[i] - base) >= (unsigned)g) { /* a division per new node */
            nodes++;
            base = ring[i] - ring[i] % g;
        }
    return nodes;
}

/* Channel k rotates each node's part of the ring so that the ring enters and leaves the node
 * through NIC k mod nics, as RCCL's ring search keeps a channel on one NIC rail across nodes
 * (ROCm/rccl src/graph/search.cc); where no rotation enters and leaves by that NIC, one that
 * leaves by it, else a shift by k/C of the part. */
static void rotated_rings(const Topology *t, const int *ring, int n, int nodes, int C, int *rot) {
    int g = topo_gpus_per_node(t), nics = topo_spec(t)->nics;
    g_assert(nodes < n); /* one GPU per node: alike, kept once (coll_channels_build) */
    for (int k = 0; k < C; k++)
        for (int i = 0; i < n;) {
            int j = i;
            while (j < n && ring[j] / g == ring[i] / g)
                j++;
            int len = j - i, shift = k * len / C, best = 0;
            for (int r = 0; nics > 0 && r < len; r++) {
                int nic_in = topo_nic_of(t, ring[i + r] % g);
                int nic_out = topo_nic_of(t, ring[i + (r + len - 1) % len] % g);
                int score = (nic_out == k % nics) * 2 + (nic_in == k % nics);
                if (score > best) {
                    best = score;
                    shift = r;
                }
                if (score == 3)
                    break;
            }
            for (int x = 0; x < len; x++)
                rot[k * n + i + x] = ring[i + (x + shift) % len];
            i = j;
        }
}

/* The topology file's rings that the channels follow, NULL when they rotate the ring. */
static const GArray *listed_rings(const Topology *t, int n, int nodes) {
    const CollSpec *sp = &topo_spec(t)->coll;
    if (n != nodes * topo_gpus_per_node(t)) /* not every node whole */
        return NULL;
    return nodes == 1 ? (sp->rings_node ? sp->rings_node : sp->rings_nodes)
                      : (sp->rings_nodes ? sp->rings_nodes : sp->rings_node);
}

static int channels_count(const Topology *t, int n, int nodes) {
    const GArray *list = listed_rings(t, n, nodes);
    return list ? (int)list->len : nodes > 1 ? topo_spec(t)->coll.channels : 1;
}

int coll_channels_count(const Topology *t, const int *ring, int n) {
    return channels_count(t, n, coll_count_nodes(t, ring, n));
}

void coll_channels_build(const Topology *t, const int *ring, int n, CollChannels *out) {
    int g = topo_gpus_per_node(t), nodes = coll_count_nodes(t, ring, n);
    const GArray *list = listed_rings(t, n, nodes);
    out->n = n;
    out->C = channels_count(t, n, nodes);
    out->nic = g_new(int, 2 * (size_t)out->C);
    /* one GPU per node and no listed rings: every rotation is the ring, by the GPUs' own NICs,
     * kept once (docs/speed.md, "Network solver": cached loads) */
    out->alike = !list && nodes == n;
    if (out->alike) {
        out->ring = g_memdup2(ring, sizeof(int) * (size_t)n);
        for (int k = 0; k < out->C; k++)
            out->nic[2 * k] = out->nic[2 * k + 1] = -1;
        return;
    }
    out->ring = g_new(int, (size_t)out->C *n);
    for (int k = 0; k < out->C; k++) {
        const CollRing *r = list ? &g_array_index(list, CollRing, k) : NULL;
        out->nic[2 * k] = r && nodes > 1 ? r->nic_out : -1;
        out->nic[2 * k + 1] = r && nodes > 1 ? r->nic_in : -1;
        for (int j = 0; r && j < nodes; j++)
            for (int x = 0; x < g; x++)
                out->ring[k * n + j * g + x] = ring[j * g] / g * g + r->gpus[x];
    }
    if (!list)
        rotated_rings(t, ring, n, nodes, out->C, out->ring);
}

gboolean coll_channels_alike(const CollChannels *ch) {
    if (ch->alike)
        return TRUE;
    for (int k = 1; k < ch->C; k++)
        if (ch->nic[2 * k] != ch->nic[0] || ch->nic[2 * k + 1] != ch->nic[1] ||
            memcmp(ch->ring + (size_t)k * ch->n, ch->ring, sizeof(int) * ch->n) != 0)
            return FALSE;
    return TRUE;
}

void coll_channels_clear(CollChannels *ch) {
    g_clear_pointer(&ch->ring, g_free);
    g_clear_pointer(&ch->nic, g_free);
    ch->C = 0;
    ch->alike = 0;
}

/* NCCL's ncclGetBtree: the parent of r is r with its lowest set bit moved up one place, or
 * cleared where that leaves the tree; rank 0 is the root. */
static int btree_parent(int r, int n) {
    if (r == 0)
        return -1;
    int bit = r & -r, up = (r ^ bit) | (bit << 1);
    return up >= n ? r ^ bit : up;
}

int coll_dtree_parent(int tree, int j, int nodes) {
    if (tree == 0)
        return btree_parent(j, nodes);
    if (nodes % 2 == 1) { /* shift */
        int p = btree_parent((j - 1 + nodes) % nodes, nodes);
        return p < 0 ? -1 : (p + 1) % nodes;
    }
    int p = btree_parent(nodes - 1 - j, nodes); /* mirror */
    return p < 0 ? -1 : nodes - 1 - p;
}
