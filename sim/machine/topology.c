/* topology: link numbering, the node's route table and fabric paths.
 *
 * Inside a node, routes are minimal (fewest hops) and among minimal paths the widest (largest
 * bottleneck), lowest GPU index first on ties; the table is built once by enumeration (at most
 * TOPO_MAX_GPUS GPUs, three hops). A GPU reaches the network through the NIC it reaches best (its
 * own if it has one).
 *
 * Dragonfly (Kim et al., ISCA 2008; Slingshot as the OLCF Frontier user guide describes it):
 * groups of switches joined all-to-all by local links; `global_links` links between every pair of
 * groups. NIC k of node n sits on switch (n / nodes_per_block) * nics + k of its group, so a node's
 * NICs land on different switches and each switch serves nodes_per_group * nics / switches NICs.
 * The i-th global link between groups a and b leaves a's switch (b * L + i) mod S and reaches b's
 * switch (a * L + i) mod S (L links per pair, S switches): an even spread of global ports.
 * Minimal routes: local hop to the switch owning the global link, the global link, local hop to
 * the destination switch (at most 3 switch-to-switch links). Valiant routes go through a third
 * group chosen by the salt. Which of the L global links a path takes is chosen by the salt too,
 * standing in for adaptive routing's spreading.
 *
 * Adaptive routing (`routing: adaptive`): Slingshot's routing is adaptive, UGAL-like: each packet
 * takes the minimal path or a non-minimal one through another switch, chosen by the load it sees
 * (De Sensi et al., SC20, arXiv:2008.08886; Cray's "increasingly minimal bias" adaptive routing,
 * US patent 10,757,022, spreads packets over all paths at the source). Inside a
 * group we model its steady state for a hot switch pair as an even spread over the S - 1 paths,
 * the direct link and the S - 2 two-hop paths, each 1/(S-1) of the stream. To stay cheap the S - 2
 * two-hop paths are not loaded link by link (a ring over many nodes would touch every local link
 * of every group and couple every flow of a group in the solver): a stream from switch a to
 * switch b loads the direct link a->b with 1/(S-1) of it and, with (S-2)/(S-1), a's out-port and
 * b's in-port, one link each standing for the S - 2 local links of the switch (capacity (S-2) x
 * the local rate). Exact for one hot pair (S - 1 links' rate) and for many-to-one or one-to-many
 * traffic; the transit through the middle switches (1/(S-1) of a stream on each) is not loaded,
 * and the ports pool a switch's links that minimal traffic also crosses, so when a switch both
 * sends and receives heavily the group looks up to 2x faster than the links would allow. The
 * path records the split (spread_group, spread_a, spread_b); the network expands it, a link
 * crossed whole weighing S - 1 units (topo_stream_weight). Port links follow the global links in
 * the numbering, 2 per switch. Between groups paths stay minimal (global link by salt). The
 * latency is the minimal path's (one local link).
 *
 * Fat tree: rail-optimised leaves (NIC k of nodes_per_leaf consecutive nodes on one leaf), a
 * non-blocking spine; each leaf's uplink carries nodes_per_leaf x NIC bandwidth / taper. */
#include "topology.h"

#include <stdarg.h>
#include <stdio.h>

#include "machine_error.h"

typedef struct {
    int n;         /* links */
    int32_t li[3]; /* local link indices */
    SimTime latency;
    double bandwidth;
} LocalPath;

struct Topology {
    TopologySpec spec; /* shallow copy; the caller's spec outlives the topology */
    int nodes;
    int g;                                        /* GPUs per node */
    double bw[TOPO_MAX_GPUS][TOPO_MAX_GPUS];      /* direct link bandwidth, bytes/s, 0 = none */
    int pair_index[TOPO_MAX_GPUS][TOPO_MAX_GPUS]; /* local index of directed link a->b, -1 */
    int gpu_links;                                /* local GPU-GPU (or switch) links per node */
    int lpn;                                      /* links per node */
    LocalPath local[TOPO_MAX_GPUS][TOPO_MAX_GPUS];
    int nic_of[TOPO_MAX_GPUS]; /* NIC each GPU sends through */
    int32_t fabric0;           /* first fabric link id */
    int32_t global0;           /* dragonfly: first global link id */
    int32_t port0;             /* dragonfly, adaptive: first port link id (= nlinks otherwise) */
    int32_t nlinks;
    int nodes_per_block; /* dragonfly: nodes whose NIC k share a switch */
    int leaves;          /* fat tree */
    double local_cap[TOPO_MAX_GPUS * TOPO_MAX_GPUS + 4 * TOPO_MAX_NICS]; /* by local index */
};

void topo_spec_clear(TopologySpec *t) {
    g_clear_pointer(&t->name, g_free);
    for (int k = 0; k < TOPO_AT_COUNT; k++)
        g_clear_pointer(&t->at[k], g_free);
    device_spec_clear(&t->device);
    g_clear_pointer(&t->pairs, g_array_unref);
    if (t->coll.backends) {
        for (guint i = 0; i < t->coll.backends->len; i++)
            g_free(g_array_index(t->coll.backends, CollBackend, i).name);
        g_clear_pointer(&t->coll.backends, g_array_unref);
    }
    g_clear_pointer(&t->coll.rings_node, g_array_unref);
    g_clear_pointer(&t->coll.rings_nodes, g_array_unref);
}

void topo_spec_default_collectives(TopologySpec *t) {
    CollSpec *c = &t->coll;
    SimTime inter = t->fabric == FABRIC_FLAT ? t->fabric_latency : 3 * t->switch_latency;
    inter += 2 * t->nic_latency;
    for (int a = 0; a < ALGO_COUNT; a++)
        for (int p = 0; p < PROTO_COUNT; p++) {
            c->intra_hop[a][p] = t->link_latency;
            c->inter_hop[a][p] = inter;
        }
    for (int p = 0; p < PROTO_COUNT; p++) {
        c->base[p] = 0;
        c->bw_factor[p] = 1.0;
        c->proto_allowed[p] = p == PROTO_SIMPLE;
    }
    for (int a = 0; a < ALGO_COUNT; a++)
        c->algo_allowed[a] = a == ALGO_RING;
    c->channels = 1;
}

/* Fail naming the position of key `at` of the topology file, when the spec came from one. */
static gboolean fail(GError **err, const TopologySpec *s, TopoAt at, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static gboolean fail(GError **err, const TopologySpec *s, TopoAt at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (s->at[at])
        g_set_error(err, MACHINE_ERROR, MACHINE_ERROR_INVALID, "%s: %s", s->at[at], msg);
    else
        g_set_error_literal(err, MACHINE_ERROR, MACHINE_ERROR_INVALID, msg);
    return FALSE;
}

/* local link index of the GPU-level hop a->b (switch: up a then down b is two hops) */
static void build_local_routes(Topology *t) {
    int g = t->g;
    SimTime hop = t->spec.link_latency;
    for (int i = 0; i < g; i++) {
        for (int j = 0; j < g; j++) {
            LocalPath p = {0, {0, 0, 0}, 0, 0.0};
            if (i == j) {
                t->local[i][j] = p;
                continue;
            }
            if (t->spec.switch_bandwidth > 0) {
                p = (LocalPath){2, {i, g + j, 0}, 2 * hop, t->spec.switch_bandwidth};
                t->local[i][j] = p;
                continue;
            }
            if (t->bw[i][j] > 0) {
                p = (LocalPath){1, {t->pair_index[i][j], 0, 0}, hop, t->bw[i][j]};
            } else {
                for (int k = 0; k < g; k++) { /* two hops */
                    double b = MIN(t->bw[i][k], t->bw[k][j]);
                    if (b > p.bandwidth)
                        p = (LocalPath){
                            2, {t->pair_index[i][k], t->pair_index[k][j], 0}, 2 * hop, b};
                }
                for (int k = 0; p.n == 0 && k < g; k++) /* three hops */
                    for (int l = 0; l < g; l++) {
                        double b = MIN(MIN(t->bw[i][k], t->bw[k][l]), t->bw[l][j]);
                        if (b > p.bandwidth)
                            p = (LocalPath){
                                3,
                                {t->pair_index[i][k], t->pair_index[k][l], t->pair_index[l][j]},
                                3 * hop,
                                b};
                    }
            }
            t->local[i][j] = p;
        }
    }
}

static gboolean check_fabric(const TopologySpec *s, int nodes, GError **err) {
    if (s->machine_nodes > 0 && nodes > s->machine_nodes) /* the machine as built, first */
        return fail(err, s, TOPO_AT_MACHINE_NODES, "topology %s has %d nodes; the job asks for %d",
                    s->name, s->machine_nodes, nodes);
    switch (s->fabric) {
    case FABRIC_DRAGONFLY:
        if (s->groups < 1 || s->nodes_per_group < 1 || s->switches_per_group < 1 ||
            s->global_links < 1)
            return fail(err, s, TOPO_AT_FABRIC,
                        "topology %s: a dragonfly needs groups, nodes_per_group, "
                        "switches_per_group and global_links >= 1",
                        s->name);
        if (s->switches_per_group % s->nics != 0 ||
            s->nodes_per_group % (s->switches_per_group / s->nics) != 0)
            return fail(err, s, TOPO_AT_SWITCHES,
                        "topology %s: %d switches per group cannot host the %d NICs of each of "
                        "%d nodes evenly (switches must be a multiple of NICs per node, and "
                        "nodes per group a multiple of switches / NICs)",
                        s->name, s->switches_per_group, s->nics, s->nodes_per_group);
        if ((int64_t)nodes > (int64_t)s->groups * s->nodes_per_group)
            return fail(err, s, TOPO_AT_GROUPS,
                        "topology %s has %" G_GINT64_FORMAT
                        " nodes (%d groups of %d); the job asks for %d",
                        s->name, (int64_t)s->groups * s->nodes_per_group, s->groups,
                        s->nodes_per_group, nodes);
        { /* links within groups and between every pair of groups, counted in 64 bits */
            int64_t G = s->groups, S = s->switches_per_group;
            int64_t links = G * S * S + G * G * s->global_links + 2 * G * S;
            if (links > TOPO_MAX_LINKS)
                return fail(err, s, TOPO_AT_GROUPS,
                            "topology %s: a dragonfly of %d groups of %d switches with %d global "
                            "links between every pair of groups has %" G_GINT64_FORMAT
                            " links; at most %d are supported",
                            s->name, s->groups, s->switches_per_group, s->global_links, links,
                            TOPO_MAX_LINKS);
        }
        break;
    case FABRIC_FAT_TREE:
        if (s->nodes_per_leaf < 1 || s->taper <= 0)
            return fail(err, s, TOPO_AT_FABRIC,
                        "topology %s: a fat tree needs nodes_per_leaf >= 1 and taper > 0", s->name);
        break;
    default:
        break;
    }
    return TRUE;
}

Topology *topo_new(const TopologySpec *spec, int nodes, GError **err) {
    g_autoptr(Topology) t = g_new0(Topology, 1);
    t->spec = *spec;
    t->nodes = nodes;
    int g = t->g = spec->gpus_per_node;
    if (g < 1 || g > TOPO_MAX_GPUS) {
        fail(err, spec, TOPO_AT_GPUS,
             "topology %s: %d GPUs per node; between 1 and %d are supported", spec->name, g,
             TOPO_MAX_GPUS);
        return NULL;
    }
    for (guint i = 0; spec->pairs && i < spec->pairs->len; i++) {
        TopoPair p = g_array_index(spec->pairs, TopoPair, i);
        if (p.a < 0 || p.b < 0 || p.a >= g || p.b >= g || p.a == p.b || p.links < 1) {
            fail(err, spec, TOPO_AT_LINKS,
                 "topology %s: link [%d, %d, %d] must join two different GPUs in 0..%d with at "
                 "least one link",
                 spec->name, p.a, p.b, p.links, g - 1);
            return NULL;
        }
        t->bw[p.a][p.b] += p.links * spec->link_bandwidth;
        t->bw[p.b][p.a] += p.links * spec->link_bandwidth;
    }
    for (int a = 0; a < g; a++)
        for (int b = 0; b < g; b++)
            t->pair_index[a][b] = t->bw[a][b] > 0 ? t->gpu_links++ : -1;
    if (spec->switch_bandwidth > 0)
        t->gpu_links = 2 * g;
    build_local_routes(t);
    for (int i = 0; i < g; i++)
        for (int j = 0; j < g; j++)
            if (i != j && t->local[i][j].n == 0) {
                fail(err, spec, TOPO_AT_LINKS,
                     "topology %s: GPU %d cannot reach GPU %d within 3 hops over the node's "
                     "links",
                     spec->name, i, j);
                return NULL;
            }
    if (nodes > 1 && spec->nics < 1) {
        fail(err, spec, TOPO_AT_NICS, "topology %s has no NICs, so it cannot span %d nodes",
             spec->name, nodes);
        return NULL;
    }
    for (int n = 0; n < spec->nics; n++)
        if (spec->nic_gpu[n] < 0 || spec->nic_gpu[n] >= g) {
            fail(err, spec, TOPO_AT_ATTACH,
                 "topology %s: NIC %d hangs off GPU %d, which a %d-GPU node lacks", spec->name, n,
                 spec->nic_gpu[n], g);
            return NULL;
        }
    if (spec->nics > 0 && !check_fabric(spec, nodes, err))
        return NULL;
    for (int i = 0; i < g; i++) { /* each GPU uses the NIC it reaches best */
        int best = -1;
        for (int n = 0; n < spec->nics; n++) {
            if (best < 0) {
                best = n;
                continue;
            }
            int ng = spec->nic_gpu[n], bg = spec->nic_gpu[best];
            const LocalPath *cur = &t->local[i][bg], *cand = &t->local[i][ng];
            gboolean cand_self = ng == i, cur_self = bg == i;
            if (cand_self != cur_self
                    ? cand_self
                    : (cand->n < cur->n || (cand->n == cur->n && cand->bandwidth > cur->bandwidth)))
                best = n;
        }
        t->nic_of[i] = best;
    }
    t->lpn = t->gpu_links + 4 * spec->nics;
    for (int a = 0; a < g; a++)
        for (int b = 0; b < g; b++)
            if (t->pair_index[a][b] >= 0)
                t->local_cap[t->pair_index[a][b]] = t->bw[a][b];
    for (int i = 0; spec->switch_bandwidth > 0 && i < 2 * g; i++)
        t->local_cap[i] = spec->switch_bandwidth;
    for (int k = 0; k < spec->nics; k++) {
        t->local_cap[t->gpu_links + k] = spec->pcie_bandwidth;
        t->local_cap[t->gpu_links + spec->nics + k] = spec->pcie_bandwidth;
        t->local_cap[t->gpu_links + 2 * spec->nics + k] = spec->nic_bandwidth;
        t->local_cap[t->gpu_links + 3 * spec->nics + k] = spec->nic_bandwidth;
    }
    t->fabric0 = (int32_t)nodes * t->lpn;
    t->nlinks = t->fabric0;
    if (spec->nics > 0 && spec->fabric == FABRIC_DRAGONFLY) {
        int S = spec->switches_per_group, G = spec->groups;
        t->nodes_per_block = spec->nodes_per_group / (S / spec->nics);
        t->global0 = t->fabric0 + (int32_t)G * S * S;
        t->nlinks = t->port0 = t->global0 + (int32_t)G * G * spec->global_links;
        if (topo_stream_weight(t) > 1)
            t->nlinks += (int32_t)G * S * 2;
    } else if (spec->nics > 0 && spec->fabric == FABRIC_FAT_TREE) {
        t->leaves = (nodes + spec->nodes_per_leaf - 1) / spec->nodes_per_leaf * spec->nics;
        t->nlinks = t->fabric0 + 2 * t->leaves;
    }
    return g_steal_pointer(&t);
}

void topo_free(Topology *t) {
    g_free(t);
}

const TopologySpec *topo_spec(const Topology *t) {
    return &t->spec;
}
int topo_gpus_per_node(const Topology *t) {
    return t->g;
}
int32_t topo_links(const Topology *t) {
    return t->nlinks;
}

int topo_nic_of(const Topology *t, int local_gpu) {
    return t->spec.nics > 0 ? t->nic_of[local_gpu] : -1;
}

int topo_link_node(const Topology *t, int32_t link) {
    return link < t->fabric0 ? link / t->lpn : -1;
}

int32_t topo_link_on_node(const Topology *t, int32_t link, int node) {
    return link < t->fabric0 ? (int32_t)node * t->lpn + link % t->lpn : link;
}

LinkKind topo_link_kind(const Topology *t, int32_t link) {
    g_assert(link >= 0 && link < t->nlinks);
    if (link < t->fabric0) {
        int li = link % t->lpn, nics = t->spec.nics;
        if (li < t->gpu_links) {
            if (t->spec.switch_bandwidth > 0)
                return li < t->g ? LINK_SWITCH_UP : LINK_SWITCH_DOWN;
            return LINK_GPU;
        }
        static const LinkKind nic_kinds[4] = {LINK_PCIE_UP, LINK_PCIE_DOWN, LINK_NIC_OUT,
                                              LINK_NIC_IN};
        return nic_kinds[(li - t->gpu_links) / nics];
    }
    if (t->spec.fabric == FABRIC_DRAGONFLY)
        return link < t->global0 ? LINK_LOCAL
               : link < t->port0 ? LINK_GLOBAL
                                 : ((link - t->port0) % 2 == 0 ? LINK_PORT_OUT : LINK_PORT_IN);
    return (link - t->fabric0) % 2 == 0 ? LINK_LEAF_UP : LINK_LEAF_DOWN;
}

const char *topo_link_kind_name(LinkKind k) {
    static const char *const names[LINK_KIND_COUNT] = {
        "gpu-gpu", "gpu-switch", "switch-gpu", "pcie-up",   "pcie-down", "nic-out", "nic-in",
        "local",   "global",     "leaf-up",    "leaf-down", "port-out",  "port-in",
    };
    return names[k];
}

double topo_link_capacity(const Topology *t, int32_t link) {
    const TopologySpec *s = &t->spec;
    if (link < t->fabric0)
        return t->local_cap[link % t->lpn];
    switch (topo_link_kind(t, link)) {
    case LINK_LOCAL:
        return s->local_bandwidth;
    case LINK_GLOBAL:
        return s->global_bandwidth;
    case LINK_PORT_OUT:
    case LINK_PORT_IN:
        return (s->switches_per_group - 2) * s->local_bandwidth;
    default: /* leaf uplinks and downlinks */
        return s->nodes_per_leaf * s->nic_bandwidth / s->taper;
    }
}

void topo_link_describe(const Topology *t, int32_t link, char *buf, size_t size) {
    LinkKind k = topo_link_kind(t, link);
    if (link < t->fabric0) {
        int node = link / t->lpn, li = link % t->lpn, nics = t->spec.nics;
        if (k == LINK_GPU) {
            for (int a = 0; a < t->g; a++)
                for (int b = 0; b < t->g; b++)
                    if (t->pair_index[a][b] == li)
                        g_snprintf(buf, size, "node %d GPU %d->%d", node, a, b);
        } else if (k == LINK_SWITCH_UP || k == LINK_SWITCH_DOWN) {
            g_snprintf(buf, size, "node %d GPU %d %s NVSwitch", node, li % t->g,
                       k == LINK_SWITCH_UP ? "->" : "<-");
        } else {
            int nic = (li - t->gpu_links) % nics;
            g_snprintf(buf, size, "node %d NIC %d %s", node, nic, topo_link_kind_name(k));
        }
        return;
    }
    if (k == LINK_LOCAL) {
        int S = t->spec.switches_per_group, rel = link - t->fabric0;
        g_snprintf(buf, size, "group %d switch %d->%d", rel / (S * S), rel / S % S, rel % S);
    } else if (k == LINK_PORT_OUT || k == LINK_PORT_IN) {
        int S = t->spec.switches_per_group, rel = (link - t->port0) / 2;
        g_snprintf(buf, size, "group %d switch %d %s", rel / S, rel % S, topo_link_kind_name(k));
    } else if (k == LINK_GLOBAL) {
        int G = t->spec.groups, L = t->spec.global_links, rel = link - t->global0;
        g_snprintf(buf, size, "global group %d->%d #%d", rel / L / G, rel / L % G, rel % L);
    } else {
        g_snprintf(buf, size, "leaf %d %s", (link - t->fabric0) / 2, topo_link_kind_name(k));
    }
}

/* --- paths --------------------------------------------------------------------------------- */

static void push(TopoPath *p, int32_t link) {
    g_assert(p->n < TOPO_MAX_HOPS);
    p->link[p->n++] = link;
}

static void push_local(const Topology *t, TopoPath *p, int node, int a, int b) {
    if (a == b)
        return;
    const LocalPath *lp = &t->local[a][b];
    for (int i = 0; i < lp->n; i++)
        push(p, (int32_t)node * t->lpn + lp->li[i]);
    p->latency += lp->latency;
}

static int32_t nic_link(const Topology *t, int node, int nic, int which) {
    return (int32_t)node * t->lpn + t->gpu_links + which * t->spec.nics + nic;
}

static int df_switch(const Topology *t, int node, int nic) {
    int ln = node % t->spec.nodes_per_group;
    return ln / t->nodes_per_block * t->spec.nics + nic;
}

static void df_local(const Topology *t, TopoPath *p, int group, int a, int b) {
    if (a == b)
        return;
    int S = t->spec.switches_per_group;
    push(p, t->fabric0 + ((int32_t)group * S + a) * S + b);
}

/* from switch s in group ga to group gb over global link i; returns the arrival switch */
static int df_global(const Topology *t, TopoPath *p, int ga, int s, int gb, int i) {
    int S = t->spec.switches_per_group, L = t->spec.global_links, G = t->spec.groups;
    int depart = (gb * L + i) % S, arrive = (ga * L + i) % S;
    df_local(t, p, ga, s, depart);
    push(p, t->global0 + ((int32_t)ga * G + gb) * L + i);
    return arrive;
}

static void fabric_path(const Topology *t, TopoPath *p, int n1, int k1, int n2, int k2,
                        uint64_t salt) {
    const TopologySpec *s = &t->spec;
    if (s->fabric == FABRIC_FLAT) {
        p->latency += s->fabric_latency;
        return;
    }
    int before = p->n;
    if (s->fabric == FABRIC_FAT_TREE) {
        int l1 = n1 / s->nodes_per_leaf * s->nics + k1, l2 = n2 / s->nodes_per_leaf * s->nics + k2;
        if (l1 != l2) {
            push(p, t->fabric0 + 2 * l1);
            push(p, t->fabric0 + 2 * l2 + 1);
        }
        p->latency += s->switch_latency * (l1 == l2 ? 1 : 3);
        return;
    }
    int npg = s->nodes_per_group, L = s->global_links, G = s->groups;
    int g1 = n1 / npg, g2 = n2 / npg, s1 = df_switch(t, n1, k1), s2 = df_switch(t, n2, k2);
    if (g1 == g2 && s1 != s2 && topo_stream_weight(t) > 1) { /* adaptive */
        p->spread_group = g1;
        p->spread_a = s1;
        p->spread_b = s2;
        p->latency += 2 * s->switch_latency; /* two switches, as the direct link */
        return;
    }
    if (g1 == g2) {
        df_local(t, p, g1, s1, s2);
    } else if (s->routing == ROUTING_VALIANT && G >= 3) {
        int mid = (int)((salt / L) % (uint64_t)(G - 2));
        mid += mid >= MIN(g1, g2);
        mid += mid >= MAX(g1, g2);
        int at = df_global(t, p, g1, s1, mid, (int)(salt % L));
        at = df_global(t, p, mid, at, g2, (int)((salt / 7) % L));
        df_local(t, p, g2, at, s2);
    } else {
        int at = df_global(t, p, g1, s1, g2, (int)(salt % L));
        df_local(t, p, g2, at, s2);
    }
    p->latency += s->switch_latency * (p->n - before + 1); /* switches crossed */
}

void topo_path(const Topology *t, int src, int dst, uint64_t salt, TopoPath *out) {
    topo_path_nics(t, src, dst, -1, -1, salt, out);
}

/* The links of topo_path_nics between the two ends' NICs; fabric_only: those alone (the ends'
 * node links and the latency left out). */
static void path_nics(const Topology *t, int src, int dst, int nic_out, int nic_in, uint64_t salt,
                      gboolean fabric_only, TopoPath *out) {
    int g = t->g, n1 = src / g, n2 = dst / g, a = src % g, b = dst % g;
    out->n = 0;
    out->latency = 0;
    out->spread_group = -1;
    if (n1 == n2) {
        if (!fabric_only)
            push_local(t, out, n1, a, b);
        return;
    }
    const TopologySpec *s = &t->spec;
    int k1 = nic_out >= 0 ? nic_out : t->nic_of[a], k2 = nic_in >= 0 ? nic_in : t->nic_of[b];
    g_assert(k1 < s->nics && k2 < s->nics);
    if (fabric_only) {
        fabric_path(t, out, n1, k1, n2, k2, salt);
        out->latency = 0;
        return;
    }
    push_local(t, out, n1, a, s->nic_gpu[k1]);
    push(out, nic_link(t, n1, k1, 0)); /* PCIe up */
    push(out, nic_link(t, n1, k1, 2)); /* NIC out */
    fabric_path(t, out, n1, k1, n2, k2, salt);
    push(out, nic_link(t, n2, k2, 3)); /* NIC in */
    push(out, nic_link(t, n2, k2, 1)); /* PCIe down */
    push_local(t, out, n2, s->nic_gpu[k2], b);
    out->latency += 2 * s->nic_latency;
}

void topo_path_nics(const Topology *t, int src, int dst, int nic_out, int nic_in, uint64_t salt,
                    TopoPath *out) {
    path_nics(t, src, dst, nic_out, nic_in, salt, FALSE, out);
}

void topo_path_fabric(const Topology *t, int src, int dst, int nic_out, int nic_in, uint64_t salt,
                      TopoPath *out) {
    path_nics(t, src, dst, nic_out, nic_in, salt, TRUE, out);
}

uint32_t topo_stream_weight(const Topology *t) {
    const TopologySpec *s = &t->spec;
    if (s->fabric == FABRIC_DRAGONFLY && s->routing == ROUTING_ADAPTIVE && s->nics > 0 &&
        s->switches_per_group > 2)
        return (uint32_t)s->switches_per_group - 1;
    return 1;
}

int32_t topo_port_link(const Topology *t, int g, int s, gboolean out) {
    g_assert(t->port0 < t->nlinks);
    return t->port0 + ((int32_t)g * t->spec.switches_per_group + s) * 2 + (out ? 0 : 1);
}

int32_t topo_local_link(const Topology *t, int g, int a, int b) {
    int S = t->spec.switches_per_group;
    g_assert(a != b && a >= 0 && b >= 0 && a < S && b < S);
    return t->fabric0 + ((int32_t)g * S + a) * S + b;
}

uint64_t topo_pair_salt(int src, int dst) {
    uint64_t z = ((uint64_t)(uint32_t)src << 32 | (uint32_t)dst) + 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u; /* splitmix64 (Steele et al. 2014) */
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

TopoRoute topo_route(const Topology *t, int src, int dst) {
    TopoPath p;
    topo_path(t, src, dst, 0, &p);
    TopoRoute r = {p.latency, G_MAXDOUBLE, p.n, src / t->g != dst / t->g};
    for (int i = 0; i < p.n; i++)
        r.bandwidth = MIN(r.bandwidth, topo_link_capacity(t, p.link[i]));
    if (p.spread_group >= 0) { /* S - 1 paths of one local link's rate each */
        r.bandwidth = MIN(r.bandwidth, t->spec.local_bandwidth * topo_stream_weight(t));
        r.hops += 1;
    }
    return r;
}
