/* topology: the node's route table, computed once, and the inter-node route composed from it.
 *
 * Intra-node routes are minimal (fewest hops), and among minimal paths the widest (largest
 * bottleneck bandwidth), lowest GPU index first on ties. With at most TOPO_MAX_GPUS GPUs a node the
 * table is built by enumeration in O(G^4) at start-up. A GPU reaches the network through the NIC
 * with the best route from it (its own NIC if it has one). */
#include "topology.h"

#include "conf.h"

struct Topology {
    TopologySpec spec; /* shallow copy; the caller's spec outlives the topology */
    int nodes;
    double bw[TOPO_MAX_GPUS][TOPO_MAX_GPUS]; /* direct link bandwidth, bytes/s, 0 = none */
    TopoRoute local[TOPO_MAX_GPUS][TOPO_MAX_GPUS];
    int nic_of[TOPO_MAX_GPUS]; /* NIC each GPU sends through */
};

void topo_spec_clear(TopologySpec *t) {
    g_clear_pointer(&t->name, g_free);
    device_spec_clear(&t->device);
    g_clear_pointer(&t->pairs, g_array_unref);
}

static void build_local_routes(Topology *t) {
    int g = t->spec.gpus_per_node;
    SimTime hop = t->spec.link_latency;
    for (int i = 0; i < g; i++) {
        for (int j = 0; j < g; j++) {
            TopoRoute r = {0, 0.0, 0, FALSE};
            if (i == j) {
                t->local[i][j] = r;
                continue;
            }
            if (t->bw[i][j] > 0) {
                r = (TopoRoute){hop, t->bw[i][j], 1, FALSE};
            } else {
                for (int k = 0; k < g; k++) { /* two hops */
                    double b = MIN(t->bw[i][k], t->bw[k][j]);
                    if (b > r.bandwidth)
                        r = (TopoRoute){2 * hop, b, 2, FALSE};
                }
                for (int k = 0; r.hops == 0 && k < g; k++) /* three hops */
                    for (int l = 0; l < g; l++) {
                        double b = MIN(MIN(t->bw[i][k], t->bw[k][l]), t->bw[l][j]);
                        if (b > r.bandwidth)
                            r = (TopoRoute){3 * hop, b, 3, FALSE};
                    }
            }
            t->local[i][j] = r;
        }
    }
}

Topology *topo_new(const TopologySpec *spec, int nodes, GError **err) {
    g_autoptr(Topology) t = g_new0(Topology, 1);
    t->spec = *spec;
    t->nodes = nodes;
    int g = spec->gpus_per_node;
    if (g < 1 || g > TOPO_MAX_GPUS) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                    "topology %s: %d GPUs per node; between 1 and %d are supported", spec->name, g,
                    TOPO_MAX_GPUS);
        return NULL;
    }
    for (guint i = 0; spec->pairs && i < spec->pairs->len; i++) {
        TopoPair p = g_array_index(spec->pairs, TopoPair, i);
        if (p.a < 0 || p.b < 0 || p.a >= g || p.b >= g || p.a == p.b || p.links < 1) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                        "topology %s: link [%d, %d, %d] must join two different GPUs in 0..%d "
                        "with at least one link",
                        spec->name, p.a, p.b, p.links, g - 1);
            return NULL;
        }
        t->bw[p.a][p.b] += p.links * spec->link_bandwidth;
        t->bw[p.b][p.a] += p.links * spec->link_bandwidth;
    }
    build_local_routes(t);
    for (int i = 0; i < g; i++)
        for (int j = 0; j < g; j++)
            if (i != j && t->local[i][j].hops == 0) {
                g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                            "topology %s: GPU %d cannot reach GPU %d within 3 hops over the "
                            "node's links",
                            spec->name, i, j);
                return NULL;
            }
    if (nodes > 1 && spec->nics < 1) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                    "topology %s has no NICs, so it cannot span %d nodes", spec->name, nodes);
        return NULL;
    }
    for (int n = 0; n < spec->nics; n++)
        if (spec->nic_gpu[n] < 0 || spec->nic_gpu[n] >= g) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                        "topology %s: NIC %d hangs off GPU %d, which a %d-GPU node lacks",
                        spec->name, n, spec->nic_gpu[n], g);
            return NULL;
        }
    for (int i = 0; i < g; i++) { /* each GPU uses the NIC it reaches best */
        int best = -1;
        for (int n = 0; n < spec->nics; n++) {
            int ng = spec->nic_gpu[n];
            if (best < 0) {
                best = n;
                continue;
            }
            const TopoRoute *cur = &t->local[i][spec->nic_gpu[best]], *cand = &t->local[i][ng];
            gboolean cand_self = ng == i, cur_self = spec->nic_gpu[best] == i;
            if (cand_self != cur_self
                    ? cand_self
                    : (cand->hops < cur->hops ||
                       (cand->hops == cur->hops && cand->bandwidth > cur->bandwidth)))
                best = n;
        }
        t->nic_of[i] = best;
    }
    return g_steal_pointer(&t);
}

void topo_free(Topology *t) {
    g_free(t);
}

const TopologySpec *topo_spec(const Topology *t) {
    return &t->spec;
}

int topo_nodes(const Topology *t) {
    return t->nodes;
}

int topo_gpus_per_node(const Topology *t) {
    return t->spec.gpus_per_node;
}

int topo_gpus(const Topology *t) {
    return t->nodes * t->spec.gpus_per_node;
}

double topo_direct_bandwidth(const Topology *t, int a, int b) {
    return t->bw[a][b];
}

TopoRoute topo_route(const Topology *t, int src, int dst) {
    int g = t->spec.gpus_per_node;
    int sn = src / g, dn = dst / g, sl = src % g, dl = dst % g;
    if (sn == dn)
        return t->local[sl][dl];
    const TopologySpec *s = &t->spec;
    int snic = s->nic_gpu[t->nic_of[sl]], dnic = s->nic_gpu[t->nic_of[dl]];
    const TopoRoute *a = &t->local[sl][snic], *b = &t->local[dnic][dl];
    TopoRoute r;
    r.hops = a->hops + b->hops + 3; /* PCIe out, fabric, PCIe in */
    r.latency = a->latency + b->latency + 2 * s->nic_latency + s->fabric_latency;
    r.bandwidth = MIN(s->nic_bandwidth, s->pcie_bandwidth);
    if (a->hops)
        r.bandwidth = MIN(r.bandwidth, a->bandwidth);
    if (b->hops)
        r.bandwidth = MIN(r.bandwidth, b->bandwidth);
    r.network = TRUE;
    return r;
}
