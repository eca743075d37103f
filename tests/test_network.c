/* network and fabric: link sharing by the textbook, routes on the Frontier node and dragonfly,
 * aggregated vs detailed collectives, link bytes by class, and what-ifs moving results the way
 * physics says. The solver's shortcuts against runs without them are in test_solver.c. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "coll_channels.h"
#include "coll_streams.h"
#include "collectives.h"
#include "util.h"

/* g GPUs, pairs given as (a, b, links) triples with 1 GB/s per link, no latency, 1 NIC on GPU 0
 * at nic_bw, flat fabric without latency. */
static TopologySpec spec_with(int g, const int *pairs, int npairs, double nic_bw) {
    TopologySpec s = {0};
    s.name = g_strdup("test");
    s.gpus_per_node = g;
    s.link_bandwidth = 1e9;
    s.pairs = g_array_new(FALSE, FALSE, sizeof(TopoPair));
    for (int i = 0; i < npairs; i++) {
        TopoPair p = {pairs[3 * i], pairs[3 * i + 1], pairs[3 * i + 2]};
        g_array_append_val(s.pairs, p);
    }
    s.nics = 1;
    s.nic_bandwidth = nic_bw;
    s.pcie_bandwidth = 100 * nic_bw;
    topo_spec_default_collectives(&s);
    return s;
}

typedef struct {
    SimTime at[128]; /* finish time of flow i */
    Engine *eng;
} Finish;

static void on_done(void *ctx, uint64_t i) {
    Finish *f = ctx;
    f->at[i] = engine_now(f->eng);
}

START_TEST(test_two_flows_share_a_link) {
    int pairs[] = {0, 1, 10}; /* 10 GB/s */
    TopologySpec s = spec_with(2, pairs, 1, 1e9);
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(&s, 1, &err);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    Finish f = {{0}, eng};
    net_transfer(net, 0, 1, 10e9, 0, 0, on_done, &f, 0); /* alone: 1 s */
    engine_run(eng);
    ck_assert_int_eq(f.at[0], SIM_PS_PER_S);
    g_autoptr(Engine) eng2 = engine_new();
    g_autoptr(Network) net2 = net_new(eng2, topo);
    Finish f2 = {{0}, eng2};
    net_transfer(net2, 0, 1, 10e9, 0, 0, on_done, &f2, 0);
    net_transfer(net2, 0, 1, 10e9, 0, 0, on_done, &f2, 1);
    engine_run(eng2);
    ck_assert_int_eq(f2.at[0], 2 * SIM_PS_PER_S); /* each takes twice as long */
    ck_assert_int_eq(f2.at[1], 2 * SIM_PS_PER_S);
    /* the opposite direction is another link: no sharing */
    g_autoptr(Engine) eng3 = engine_new();
    g_autoptr(Network) net3 = net_new(eng3, topo);
    Finish f3 = {{0}, eng3};
    net_transfer(net3, 0, 1, 10e9, 0, 0, on_done, &f3, 0);
    net_transfer(net3, 1, 0, 10e9, 0, 0, on_done, &f3, 1);
    engine_run(eng3);
    ck_assert_int_eq(f3.at[0], SIM_PS_PER_S);
    ck_assert_int_eq(f3.at[1], SIM_PS_PER_S);
    topo_spec_clear(&s);
}
END_TEST

/* net_set_flow_observer (sim.c, LOWER BOUND (2)): a 10 GB transfer over one 10 GB/s link after
 * a latency of 1 us is told as it starts, once per link: the time its bytes keep the link busy at
 * full capacity (1 s), when they may start moving (1 us) and now (0). Two of them end at 2 s +
 * 1 us: start plus both transfers' work at capacity, the bound's (2) met with equality. */
typedef struct {
    int n;
    double time[4];
    SimTime from[4], now[4];
} Told;

static void tell(void *ctx, int32_t link, double time, SimTime from, SimTime now) {
    Told *t = ctx;
    (void)link;
    ck_assert_int_lt(t->n, 4);
    t->time[t->n] = time;
    t->from[t->n] = from;
    t->now[t->n++] = now;
}

START_TEST(test_flow_observer) {
    int pairs[] = {0, 1, 10}; /* 10 GB/s */
    TopologySpec s = spec_with(2, pairs, 1, 1e9);
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(&s, 1, &err);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    Told told = {0};
    net_set_flow_observer(net, tell, &told);
    Finish f = {{0}, eng};
    net_transfer(net, 0, 1, 10e9, 1000000, 0, on_done, &f, 0);
    net_transfer(net, 0, 1, 10e9, 1000000, 0, on_done, &f, 1);
    engine_run(eng);
    ck_assert_int_eq(told.n, 2);
    for (int k = 0; k < 2; k++) {
        ck_assert_double_eq_tol(told.time[k], (double)SIM_PS_PER_S, 1e-3);
        ck_assert_int_eq(told.from[k], 1000000);
        ck_assert_int_eq(told.now[k], 0);
    }
    ck_assert_int_eq(f.at[1], 2 * SIM_PS_PER_S + 1000000);
    topo_spec_clear(&s);
}
END_TEST

START_TEST(test_n_flows_into_one_nic) {
    TopologySpec s = spec_with(1, NULL, 0, 25e9); /* one GPU per node, 25 GB/s NIC */
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(&s, 5, &err);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    Finish f = {{0}, eng};
    for (int src = 1; src <= 4; src++) /* 4 nodes send 25 GB each to node 0 */
        net_transfer(net, src, 0, 25e9, 0, 0, on_done, &f, (uint64_t)src);
    engine_run(eng);
    for (int src = 1; src <= 4; src++)
        ck_assert_int_eq(f.at[src], 4 * SIM_PS_PER_S); /* shared 4 ways */
    topo_spec_clear(&s);
}
END_TEST

/* A crowded link: N flows of k x B bytes (k = 1..N) from N nodes into one NIC of capacity C share
 * it equally, so the k-th ends once each of the N - k + 1 still running has moved what it moved:
 * t_k = (B / C) (k N - k (k - 1) / 2) (processor sharing). N = 100 grows the NIC's crossing list
 * from its first piece of 4 to 128 in the arena (ARENA PIECES in network.c), and each end takes a
 * crossing out of the middle (the last fills in). */
START_TEST(test_crowded_link_closed_form) {
    enum { N = 100 };
    TopologySpec s = spec_with(1, NULL, 0, 25e9); /* C = 25 GB/s */
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(&s, N + 1, &err);
    ck_assert_ptr_nonnull(topo);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    Finish c = {{0}, eng};
    for (int k = 1; k <= N; k++) /* B = 0.25 GB: B / C = 10 ms */
        net_transfer(net, k, 0, k * 0.25e9, 0, 0, on_done, &c, (uint64_t)k);
    engine_run(eng);
    for (int k = 1; k <= N; k++) {
        SimTime want = (SimTime)(k * N - k * (k - 1) / 2) * (SIM_PS_PER_S / 100);
        ck_assert_msg(llabs(c.at[k] - want) <= 1, "flow %d ends at %" PRId64 " ps, not %" PRId64, k,
                      c.at[k], want);
    }
    topo_spec_clear(&s);
}
END_TEST

/* Max-min, not equal split: L1 = 0->1 (10 GB/s), L2 = 1->2 (4 GB/s). f1 on L1, f2 on L1 + L2,
 * f3 on L2. L2 fills first: f2 = f3 = 2 GB/s; f1 takes the rest of L1, 8 GB/s. f2 and f3 (8 GB)
 * end at 4 s; f1 (40 GB) has moved 32 GB by then and finishes the last 8 GB alone at 10 GB/s. */
START_TEST(test_max_min_fairness) {
    int pairs[] = {0, 1, 10, 1, 2, 4};
    TopologySpec s = spec_with(3, pairs, 2, 1e9);
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(&s, 1, &err);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    Finish f = {{0}, eng};
    TopoPath p01, p12;
    topo_path(topo, 0, 1, 0, &p01);
    topo_path(topo, 1, 2, 0, &p12);
    ck_assert_int_eq(p01.n, 1);
    ck_assert_int_eq(p12.n, 1);
    NetLoad l1 = {p01.link[0], 1}, both[2] = {{p01.link[0], 1}, {p12.link[0], 1}},
            l2 = {p12.link[0], 1};
    net_flow(net, &l1, 1, 40e9, 0, 0, on_done, &f, 1);
    net_flow(net, both, 2, 8e9, 0, 0, on_done, &f, 2);
    net_flow(net, &l2, 1, 8e9, 0, 0, on_done, &f, 3);
    engine_run(eng);
    ck_assert_int_eq(f.at[2], 4 * SIM_PS_PER_S);
    ck_assert_int_eq(f.at[3], 4 * SIM_PS_PER_S);
    ck_assert_int_eq(f.at[1], 4800000000000);
    /* weights: one flow crossing a link twice gets half its capacity */
    g_autoptr(Engine) eng2 = engine_new();
    g_autoptr(Network) net2 = net_new(eng2, topo);
    Finish g = {{0}, eng2};
    NetLoad twice = {p12.link[0], 2};
    net_flow(net2, &twice, 1, 4e9, 0, 0, on_done, &g, 0);
    engine_run(eng2);
    ck_assert_int_eq(g.at[0], 2 * SIM_PS_PER_S);
    topo_spec_clear(&s);
}
END_TEST

/* Adaptive routing on a dragonfly of one group of 3 switches, one 1-GPU node per switch, 10 GB/s
 * local links, 100 GB/s NICs: a stream from switch 0 to switch 1 is split, half on the direct link
 * 0->1 and half on the two-hop path 0->2->1, which loads switch 0's out-port and switch 1's
 * in-port (each the S - 2 = 1 links of its switch, 10 GB/s); weights in halves
 * (topo_stream_weight 2).
 *  - Alone it moves at 20 GB/s, both paths' capacity: 20 GB in 1 s.
 *  - Max-min with a flow split over two paths: A puts half its stream on L1 (a 10 GB/s local
 *    link) and half on L2 (node 2's 4 GB/s NIC); B crosses L2 whole. L2 fills first at rate r
 *    for both: r/2 + r = 4 GB/s, r = 8/3 GB/s. B (4 GB) ends at 1.5 s; A, 4 GB moved by then,
 *    is then held by L2 alone, r/2 = 4: 8 GB/s for its last 4 GB, ending at 2 s. */
START_TEST(test_adaptive_split_flows) {
    TopologySpec s = spec_with(1, NULL, 0, 100e9);
    s.fabric = FABRIC_DRAGONFLY;
    s.routing = ROUTING_ADAPTIVE;
    s.groups = 1;
    s.nodes_per_group = 3;
    s.switches_per_group = 3;
    s.local_bandwidth = 10e9;
    s.global_links = 1;
    s.global_bandwidth = 10e9;
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(&s, 3, &err);
    ck_assert_msg(topo, "%s", err ? err->message : "");
    ck_assert_int_eq(topo_stream_weight(topo), 2);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    Finish f = {{0}, eng};
    net_transfer(net, 0, 1, 20e9, 0, 0, on_done, &f, 0);
    engine_run(eng);
    ck_assert_int_eq(f.at[0], SIM_PS_PER_S);
    int nl;
    net_loads_get(net, &nl); /* PCIe and NIC at both ends; direct link, out-port, in-port */
    ck_assert_int_eq(nl, 7);

    int32_t l1 = topo_local_link(topo, 0, 0, 1), l2 = -1;
    for (int32_t id = 0; id < topo_links(topo); id++)
        if (topo_link_node(topo, id) == 2 && topo_link_kind(topo, id) == LINK_NIC_OUT)
            l2 = id;
    ck_assert_int_ge(l2, 0);
    s.nic_bandwidth = 4e9; /* only node 2's NIC matters below; the topology copied the spec */
    g_autoptr(Topology) t4 = topo_new(&s, 3, &err);
    g_autoptr(Engine) eng3 = engine_new();
    g_autoptr(Network) net3 = net_new(eng3, t4);
    Finish h = {{0}, eng3};
    NetLoad a[2] = {{l1, 1}, {l2, 1}}, b = {l2, 2};
    net_flow(net3, a, 2, 8e9, 0, 0, on_done, &h, 0);
    net_flow(net3, &b, 1, 4e9, 0, 0, on_done, &h, 1);
    engine_run(eng3);
    ck_assert_msg(h.at[1] == 1500000000000, "B at %lld ps", (long long)h.at[1]);
    ck_assert_msg(h.at[0] == 2 * SIM_PS_PER_S, "A at %lld ps", (long long)h.at[0]);
    topo_spec_clear(&s);
}
END_TEST

START_TEST(test_frontier_routes) {
    const char *sets[] = {"nodes=300", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    /* no direct 0-3 link: two hops, widest minimal path 0-1-3, 50 GB/s */
    TopoRoute r = topo_route(topo, 0, 3);
    ck_assert_int_eq(r.hops, 2);
    ck_assert_double_eq(r.bandwidth, 50e9);
    ck_assert_double_eq(topo_route(topo, 0, 1).bandwidth, 200e9);
    ck_assert_double_eq(topo_route(topo, 0, 6).bandwidth, 100e9);
    /* nodes 0 and 1 share every switch (16 nodes per switch): NIC out, NIC in, no switch link */
    TopoPath p;
    topo_path(topo, 1, 8 + 1, 0, &p); /* GCD 1 (owns NIC 0) to GCD 1 of node 1 */
    int fabric = 0, globals = 0;
    for (int i = 0; i < p.n; i++)
        fabric += topo_link_node(topo, p.link[i]) < 0;
    ck_assert_int_eq(fabric, 0);
    /* node 0 to node 20: another switch in the group (switch 4 from switch 0). Adaptive routing
     * (Frontier's default): no local link in the path itself, a spread over the group's 31 paths */
    topo_path(topo, 1, 20 * 8 + 1, 0, &p);
    fabric = 0;
    for (int i = 0; i < p.n; i++)
        fabric += topo_link_node(topo, p.link[i]) < 0;
    ck_assert_int_eq(fabric, 0);
    ck_assert_int_eq(p.spread_group, 0);
    ck_assert_int_eq(p.spread_a, 0);
    ck_assert_int_eq(p.spread_b, 4);
    ck_assert_int_eq(topo_stream_weight(topo), 31);
    /* minimal: one local link */
    const char *msets[] = {"nodes=300", "topology.fabric.routing=minimal", NULL};
    g_autoptr(Scenario) ms = load_ok("20B_tp8.yaml", msets);
    g_autoptr(Topology) mt = topo_ok(ms);
    topo_path(mt, 1, 20 * 8 + 1, 0, &p);
    fabric = 0;
    for (int i = 0; i < p.n; i++)
        if (topo_link_node(mt, p.link[i]) < 0) {
            fabric++;
            ck_assert_int_eq(topo_link_kind(mt, p.link[i]), LINK_LOCAL);
        }
    ck_assert_int_eq(fabric, 1);
    ck_assert_int_eq(p.spread_group, -1);
    ck_assert_int_eq(topo_stream_weight(mt), 1);
    /* across groups, minimal: exactly one global link, at most 3 switch-to-switch links */
    for (uint64_t salt = 0; salt < 16; salt++) {
        topo_path(topo, 1, 200 * 8 + 3, salt, &p);
        fabric = globals = 0;
        for (int i = 0; i < p.n; i++)
            if (topo_link_node(topo, p.link[i]) < 0) {
                fabric++;
                globals += topo_link_kind(topo, p.link[i]) == LINK_GLOBAL;
            }
        ck_assert_int_eq(globals, 1);
        ck_assert_int_le(fabric, 3);
    }
    /* Valiant: through a third group, two global links */
    const char *vsets[] = {"nodes=300", "topology.fabric.routing=valiant", NULL};
    g_autoptr(Scenario) vs = load_ok("20B_tp8.yaml", vsets);
    g_autoptr(Topology) vt = topo_ok(vs);
    topo_path(vt, 1, 200 * 8 + 3, 5, &p);
    globals = 0;
    for (int i = 0; i < p.n; i++)
        globals +=
            topo_link_node(vt, p.link[i]) < 0 && topo_link_kind(vt, p.link[i]) == LINK_GLOBAL;
    ck_assert_int_eq(globals, 2);
    /* the machine's size is a limit */
    g_autoptr(Scenario) bs = load_ok("20B_tp8.yaml", NULL);
    g_autoptr(GError) e2 = NULL;
    ck_assert_ptr_null(topo_new(&bs->topo, 9409, &e2));
    ck_assert_msg(strstr(e2->message, "9408 nodes"), "%s", e2->message);
}
END_TEST

/* topo_path_fabric is the full path's fabric links, in order, with its spread: on Frontier under
 * adaptive, minimal and Valiant routing, a fat tree and a flat fabric, between random GPUs with
 * their own NICs and with chosen ones (a ring's channels), pairs in one node included. */
START_TEST(test_fabric_path_is_the_full_paths_fabric) {
    static const char *const variants[][3] = {
        {"nodes=300", NULL, NULL},
        {"nodes=300", "topology.fabric.routing=minimal", NULL},
        {"nodes=300", "topology.fabric.routing=valiant", NULL},
        {"topology=dgx-a100", "nodes=64", NULL},
        {"topology=dgx-h100", "nodes=16", NULL},
    };
    GRand *rng = g_rand_new_with_seed(11);
    for (guint v = 0; v < G_N_ELEMENTS(variants); v++) {
        g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", variants[v]);
        g_autoptr(Topology) topo = topo_ok(sc);
        int gpus = topo_gpus_per_node(topo) * sc->nodes, nics = sc->topo.nics;
        for (int k = 0; k < 2000; k++) {
            int a = g_rand_int_range(rng, 0, gpus), b = g_rand_int_range(rng, 0, gpus);
            if (k % 4 == 0) /* the same node */
                b = a / topo_gpus_per_node(topo) * topo_gpus_per_node(topo) +
                    g_rand_int_range(rng, 0, topo_gpus_per_node(topo));
            if (a == b)
                continue;
            int ko = k % 2 && nics > 0 ? g_rand_int_range(rng, 0, nics) : -1;
            int ki = k % 2 && nics > 0 ? g_rand_int_range(rng, 0, nics) : -1;
            uint64_t salt = topo_pair_salt(a, b);
            TopoPath full, fab;
            topo_path_nics(topo, a, b, ko, ki, salt, &full);
            topo_path_fabric(topo, a, b, ko, ki, salt, &fab);
            int n = 0;
            for (int i = 0; i < full.n; i++)
                if (topo_link_node(topo, full.link[i]) < 0) {
                    ck_assert_int_lt(n, fab.n);
                    ck_assert_int_eq(fab.link[n], full.link[i]);
                    n++;
                }
            ck_assert_int_eq(n, fab.n);
            ck_assert_int_eq(fab.spread_group, full.spread_group);
            if (full.spread_group >= 0) {
                ck_assert_int_eq(fab.spread_a, full.spread_a);
                ck_assert_int_eq(fab.spread_b, full.spread_b);
            }
        }
    }
    g_rand_free(rng);
}
END_TEST

static SimTime iteration(const char *file, const char *const *sets) {
    g_autoptr(Scenario) sc = load_ok(file, sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    return sim_summary(run)->iteration;
}

/* The fast aggregated collectives agree with the step-by-step ones within 2%. */
START_TEST(test_aggregated_vs_detailed) {
    static const char *files[] = {"1.3B_zero1.yaml", "13B_tp8.yaml", "1.3B_tp.yaml"};
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        const char *agg[] = {"nodes=2", NULL};
        const char *det[] = {"nodes=2", "sim.collectives=detailed", NULL};
        double a = (double)iteration(files[i], agg), d = (double)iteration(files[i], det);
        ck_assert_msg(fabs(a - d) / d < 0.02, "%s: aggregated %.6f s, detailed %.6f s", files[i],
                      a / 1e12, d / 1e12);
    }
}
END_TEST

/* What-ifs move results the way physics says. */
START_TEST(test_what_ifs) {
    /* 16 nodes share every switch: the NICs are the DP rings' bottleneck */
    const char *b16[] = {"nodes=16", NULL};
    const char *fast_nic[] = {"nodes=16", "topology.node.nics.bandwidth=50GB/s", NULL};
    ck_assert(iteration("20B_tp8.yaml", fast_nic) < iteration("20B_tp8.yaml", b16));
    /* 256 nodes span two groups: the global links are */
    const char *base[] = {"nodes=256", NULL};
    const char *thin_global[] = {"nodes=256", "topology.fabric.global_bandwidth=5GB/s", NULL};
    const char *no_contention[] = {"nodes=256", "sim.contention=false", NULL};
    SimTime t0 = iteration("20B_tp8.yaml", base);
    ck_assert(iteration("20B_tp8.yaml", thin_global) > t0);
    ck_assert(iteration("20B_tp8.yaml", no_contention) < t0);
    /* within one group, global links carry nothing: their bandwidth cannot matter */
    const char *g1[] = {"nodes=64", NULL};
    const char *g1_thin[] = {"nodes=64", "topology.fabric.global_bandwidth=1GB/s", NULL};
    ck_assert_int_eq(iteration("20B_tp8.yaml", g1), iteration("20B_tp8.yaml", g1_thin));
}
END_TEST

/* TP and DP traffic meet on the xGMI link from GCD 0 to GCD 1 (the way to NIC 0). */
START_TEST(test_contention_is_emergent) {
    g_autoptr(Scenario) sc = load_ok("13B_tp8.yaml", NULL);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    GArray *links = net_busiest_links(sim_network(run), 1000);
    gboolean found = FALSE;
    for (guint i = 0; i < links->len; i++) {
        NetLinkStat *l = &g_array_index(links, NetLinkStat, i);
        char name[96];
        topo_link_describe(sim_topology(run), l->link, name, sizeof name);
        if (strcmp(name, "node 0 GPU 0->1") == 0) {
            found = TRUE;
            ck_assert(l->by_class[DIM_DP] > 0 && l->by_class[DIM_TP] > 0);
        }
    }
    ck_assert(found);
    g_array_unref(links);
}
END_TEST

START_TEST(test_other_machines) {
    static const char *machines[] = {"dgx-a100", "dgx-h100"};
    SimTime iteration[2];
    for (int m = 0; m < 2; m++) {
        g_autofree char *set = g_strdup_printf("topology=%s", machines[m]);
        const char *sets[] = {set, "nodes=4", NULL};
        g_autoptr(Scenario) sc = load_ok("13B_tp8.yaml", sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        const SimSummary *s = sim_summary(run);
        ck_assert_int_eq(sc->gpus, 32);
        /* (was: iteration > 0) the breakdown adds up, and a GPU's compute is no faster than its
         * share (1 / (tp pp)) of the model FLOPs at peak: 3 x forward (+1 forward recomputed)
         * per micro-batch */
        const RankTimes *c = &s->critical;
        ck_assert_int_eq(c->compute + c->exposed + c->bubble, s->iteration);
        double passes = sc->recompute == RECOMPUTE_FULL ? 4 : 3;
        double floor_s = passes * sc->grad_accum *
                         model_forward_flops(&sc->model, sc->micro_batch, sc->seq_len, sc->tp) /
                         (sc->tp * sc->pp) / sc->topo.device.peak_flops[sc->precision];
        ck_assert_msg((double)c->compute / 1e12 >= floor_s,
                      "%s: compute %.6f s below the peak-FLOP floor %.6f s", machines[m],
                      (double)c->compute / 1e12, floor_s);
        iteration[m] = s->iteration;
    }
    ck_assert_msg(iteration[1] < iteration[0],
                  "H100 %" G_GINT64_FORMAT " ps, A100 %" G_GINT64_FORMAT, iteration[1],
                  iteration[0]);
    /* an H100 node's NVSwitch is faster than an MI250X node's slowest xGMI link: TP costs less */
    const char *h[] = {"topology=dgx-h100", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_tp.yaml", NULL);
    g_autoptr(Scenario) b = load_ok("1.3B_tp.yaml", h);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    ck_assert(sim_summary(rb)->critical.comm < sim_summary(ra)->critical.comm);
}
END_TEST

/* A backend table sends small allreduces to another library with its own latency and bandwidth
 * (MCR-DL); larger ones stay with RCCL. */
START_TEST(test_backend_table) {
    TopologySpec spec;
    g_autoptr(GError) err = NULL;
    ck_assert_msg(scenario_load_topology("frontier", NULL, &spec, &err), "%s",
                  err ? err->message : "");
    spec.coll.backends = g_array_new(FALSE, TRUE, sizeof(CollBackend));
    CollBackend mpi = {g_strdup("mpi"), 1u << COLL_ALLREDUCE, 0, 65536, 3000000, 0, 10e9};
    g_array_append_val(spec.coll.backends, mpi);
    g_autoptr(Topology) topo = topo_new(&spec, 1, &err);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    g_autoptr(Collectives) coll = coll_new(eng, net, topo);
    int m[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    CollChoice small = coll_choose(coll, COLL_ALLREDUCE, m, 8, 8192);
    ck_assert_int_eq(small.backend, 0);
    /* 3 us + 2(n-1)/n x 8 KiB at 10 GB/s per stream */
    ck_assert_int_eq(small.predicted, 3000000 + (SimTime)llround(14.0 / 8 * 8192 / 10e9 * 1e12));
    CollChoice big = coll_choose(coll, COLL_ALLREDUCE, m, 8, 1 << 20);
    ck_assert_int_eq(big.backend, -1);
    CollChoice gather = coll_choose(coll, COLL_ALLGATHER, m, 8, 8192); /* not its op */
    ck_assert_int_eq(gather.backend, -1);
    topo_spec_clear(&spec);
}
END_TEST

/* A flow alone on its links gets its rate without a solve (network.c, lone_rate); a second flow on
 * one of them makes one, and each flow then moves at half the rate. Loads borrowed from the caller
 * (net_flow_borrowed) time the same as copied ones. */
START_TEST(test_lone_flow_needs_no_solve) {
    int pairs[] = {0, 1, 10, 1, 2, 10}; /* 10 GB/s each */
    TopologySpec s = spec_with(3, pairs, 2, 1e9);
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(&s, 1, &err);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    Finish f = {{0}, eng};
    net_transfer(net, 0, 1, 10e9, 0, 0, on_done, &f, 0);
    net_transfer(net, 1, 2, 5e9, 0, 0, on_done, &f, 1); /* other links: its own component */
    engine_run(eng);
    ck_assert_int_eq(f.at[0], SIM_PS_PER_S);
    ck_assert_int_eq(f.at[1], SIM_PS_PER_S / 2);
    ck_assert_uint_eq(net_solves(net), 0);
    g_autoptr(Engine) eng2 = engine_new();
    g_autoptr(Network) net2 = net_new(eng2, topo);
    Finish f2 = {{0}, eng2};
    TopoPath p;
    topo_path(topo, 0, 1, 0, &p);
    net_loads_reset(net2);
    net_loads_add_path(net2, &p);
    int nl;
    const NetLoad *got = net_loads_get(net2, &nl);
    g_autofree NetLoad *loads = g_memdup2(got, sizeof(NetLoad) * nl);
    net_flow_borrowed(net2, loads, nl, NULL, 10e9, 0, 0, on_done, &f2, 0);
    net_flow(net2, loads, nl, 10e9, 0, 0, on_done, &f2, 1);
    engine_run(eng2);
    ck_assert_uint_ge(net_solves(net2), 1);
    ck_assert_int_eq(f2.at[0], 2 * SIM_PS_PER_S);
    ck_assert_int_eq(f2.at[1], 2 * SIM_PS_PER_S);
    topo_spec_clear(&s);
}
END_TEST

/* A ring with one GPU per node (a DP group): its channels are all the same ring, so
 * coll_streams builds one and scales it; the loads must equal every channel's edges added one by
 * one (links, weights and order), in full and in the symmetric form. */
START_TEST(test_alike_channels_built_once) {
    const char *sets[] = {"nodes=300", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    CollStreams *cs = coll_streams_new(topo, net);
    int n = 300, g = topo_gpus_per_node(topo);
    g_autofree int *members = g_new(int, n);
    for (int gpu = 0; gpu < g; gpu += 3) {
        for (int i = 0; i < n; i++)
            members[i] = i * g + gpu;
        const CollGroup *grp = coll_streams_group(cs, members, n, FALSE);
        for (int rep = -1; rep < 1; rep++) {
            CollShape shape;
            int nl;
            const NetLoad *got =
                coll_streams_loads(cs, grp, ALGO_RING, COLL_ALLREDUCE, 0, rep, &shape, &nl);
            CollChannels ch;
            coll_channels_build(topo, coll_group_ring(grp), n, &ch);
            ck_assert_int_gt(ch.C, 1);
            ck_assert(coll_channels_alike(&ch));
            net_loads_reset(net);
            for (int k = 0; k < ch.C; k++)
                for (int i = 0; i < n; i++)
                    coll_streams_edge(cs, coll_channel_ring(&ch, k)[i],
                                      coll_channel_ring(&ch, k)[(i + 1) % n], ch.nic[2 * k],
                                      ch.nic[2 * k + 1], rep);
            int want_n;
            const NetLoad *want = net_loads_get(net, &want_n);
            ck_assert_int_eq(nl, want_n);
            ck_assert_int_eq(shape.streams, ch.C);
            for (int i = 0; i < nl; i++) {
                ck_assert_int_eq(got[i].link, want[i].link);
                ck_assert_uint_eq(got[i].weight, want[i].weight);
            }
            coll_channels_clear(&ch);
        }
    }
    /* a group with two GPUs per node: channels differ */
    int two[] = {0, 1, 8, 9, 16, 17};
    CollChannels ch2;
    coll_channels_build(topo, two, 6, &ch2);
    ck_assert(!coll_channels_alike(&ch2));
    coll_channels_clear(&ch2);
    coll_streams_free(cs);
}
END_TEST

/* The link arrays grown by doubling from room for one link (net_set_link_room) give what room
 * for every link gives: every flow's end to the picosecond and every link's bytes by class, with
 * flows between random GPUs of 64 Frontier nodes starting at scattered times (hundreds of links,
 * so the arrays move several times while flows hold their links' indices). */
START_TEST(test_link_room_changes_nothing) {
    const char *sets[] = {"nodes=64", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    GRand *rng = g_rand_new_with_seed(13);
    int src[64], dst[64];
    double bytes[64];
    SimTime lat[64];
    for (int f = 0; f < 64; f++) {
        src[f] = g_rand_int_range(rng, 0, 64 * 8);
        dst[f] = (src[f] + g_rand_int_range(rng, 1, 64 * 8)) % (64 * 8);
        bytes[f] = 1e6 * g_rand_int_range(rng, 1, 400);
        lat[f] = (SimTime)g_rand_int_range(rng, 0, 10) * 1000000000; /* 0-9 ms */
    }
    g_rand_free(rng);
    SimTime at[2][64];
    GArray *busiest[2];
    for (int small = 0; small < 2; small++) {
        g_autoptr(Engine) eng = engine_new();
        g_autoptr(Network) net = net_new(eng, topo);
        if (small)
            net_set_link_room(net, 1);
        Finish fm = {{0}, eng};
        for (int f = 0; f < 64; f++)
            net_transfer(net, src[f], dst[f], bytes[f], lat[f], f % NET_CLASSES, on_done, &fm,
                         (uint64_t)f);
        engine_run(eng);
        memcpy(at[small], fm.at, sizeof at[small]);
        busiest[small] = net_busiest_links(net, 1 << 20);
    }
    for (int f = 0; f < 64; f++)
        ck_assert_int_eq(at[0][f], at[1][f]);
    ck_assert_uint_gt(busiest[0]->len, 256); /* the small arrays doubled at least 8 times */
    ck_assert_uint_eq(busiest[0]->len, busiest[1]->len);
    ck_assert(memcmp(busiest[0]->data, busiest[1]->data, sizeof(NetLinkStat) * busiest[0]->len) ==
              0);
    for (int k = 0; k < 2; k++)
        g_array_unref(busiest[k]);
}
END_TEST

/* The first NIC-out link of node 0 and of node 1 into L */
static void first_nic_out(const Topology *topo, int32_t L[2]) {
    L[0] = L[1] = -1;
    for (int32_t l = 0; l < topo_links(topo); l++)
        if (topo_link_kind(topo, l) == LINK_NIC_OUT && L[topo_link_node(topo, l)] < 0)
            L[topo_link_node(topo, l)] = l;
}

/* A link's bytes by traffic class, by hand. Load set B (borrowed) crosses L1 with
 * one stream and L0 with two; at first both are its alone, so its flows' bytes go
 * to the set (EXCLUSIVE LINKS). B moves b = 3 MB a stream, at 0 and 10 ms (class
 * 5); at 20 ms flow A (its own loads, class 2) moves a = 1 MB over L0, which L0
 * then hands its counts over for; at 30 ms B moves b once more, on L0 as a shared
 * link. L0 carries 3 x 2b of class 5 and a of class 2, L1 3b of class 5; each B
 * ends after b / (c / 2) (two streams on L0 of capacity c), A after a / c. */
START_TEST(test_link_bytes_by_class) {
    const char *sets[] = {"nodes=2", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    int32_t L[2];
    first_nic_out(topo, L);
    double c = topo_link_capacity(topo, L[0]), b = 3e6, a = 1e6;
    ck_assert(topo_link_capacity(topo, L[1]) == c);
    uint32_t u = (uint32_t)topo_stream_weight(topo);
    const NetLoad set[] = {{L[1], u}, {L[0], 2 * u}}, own[] = {{L[0], u}};
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    Finish fm = {{0}, eng};
    const SimTime ms = SIM_PS_PER_S / 1000;
    NetLoadSet facts = NULL; /* flow 1 finds the set's facts by address, 0 and 2 by the handle */
    for (int k = 0; k < 3; k++)
        net_flow_borrowed(net, set, 2, k == 1 ? NULL : &facts, b, k < 2 ? 10 * k * ms : 30 * ms, 5,
                          on_done, &fm, (uint64_t)k);
    net_flow(net, own, 1, a, 20 * ms, 2, on_done, &fm, 3);
    engine_run(eng);
    SimTime tb = (SimTime)llround(b / (c / 2) * SIM_PS_PER_S),
            ta = (SimTime)llround(a / c * SIM_PS_PER_S);
    ck_assert_int_le(llabs(fm.at[0] - tb), 1);
    ck_assert_int_le(llabs(fm.at[1] - (10 * ms + tb)), 1);
    ck_assert_int_le(llabs(fm.at[2] - (30 * ms + tb)), 1);
    ck_assert_int_le(llabs(fm.at[3] - (20 * ms + ta)), 1);
    g_autoptr(GArray) st = net_busiest_links(net, 8);
    ck_assert_uint_eq(st->len, 2);
    const NetLinkStat *l0 = &g_array_index(st, NetLinkStat, 0),
                      *l1 = &g_array_index(st, NetLinkStat, 1);
    ck_assert_int_eq(l0->link, L[0]);
    ck_assert_int_eq(l1->link, L[1]);
    for (int k = 0; k < NET_CLASSES; k++) {
        ck_assert(l0->by_class[k] == (k == 5 ? 6 * b : k == 2 ? a : 0));
        ck_assert(l1->by_class[k] == (k == 5 ? 3 * b : 0));
    }
    ck_assert(l0->bytes == 6 * b + a && l1->bytes == 3 * b);
    ck_assert(l0->busy_s == (6 * b + a) / c);
}
END_TEST

/* EARLY ACTIVATION undone (network.c unearly): load set B (borrowed: two streams on L1, one on
 * L0) starts a flow of b bytes with 10 ms of latency while its links are its alone, so it is
 * activated early, its rate alone (c / 2 a stream, L1's two streams) set at once. Flow A (its own
 * loads, on L0, no latency, a bytes) then shares L0 before B's flow activates, which puts B's flow
 * back to waiting. At 10 ms it activates beside A on L0, where their bounds (c / 2 + c) exceed c,
 * so a solve places it: at c / 2 again, which must still schedule its end. Closed form: B ends at
 * 10 ms + b / (c / 2); A moves c x 10 ms alone, c / 2 beside B, then the rest at c. */
START_TEST(test_unearly_flow_still_ends) {
    const char *sets[] = {"nodes=2", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    int32_t L[2];
    first_nic_out(topo, L);
    double c = topo_link_capacity(topo, L[0]), b = 3e6, a = 300e6;
    ck_assert(topo_link_capacity(topo, L[1]) == c);
    uint32_t u = (uint32_t)topo_stream_weight(topo);
    const NetLoad set[] = {{L[1], 2 * u}, {L[0], u}}, own[] = {{L[0], u}};
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    Finish fm = {{0}, eng};
    const SimTime ms = SIM_PS_PER_S / 1000;
    net_flow_borrowed(net, set, 2, NULL, b, 10 * ms, 5, on_done, &fm, 0);
    ck_assert_uint_eq(net_early_flows(net), 1);
    net_flow(net, own, 1, a, 0, 2, on_done, &fm, 1);
    ck_assert_uint_eq(net_early_flows(net), 0); /* undone: L0 is shared now */
    engine_run(eng);
    double tb = b / (c / 2), ta = 10e-3 + tb + (a - c * 10e-3 - c / 2 * tb) / c;
    ck_assert_int_le(llabs(fm.at[0] - (10 * ms + (SimTime)llround(tb * SIM_PS_PER_S))), 1);
    ck_assert_int_le(llabs(fm.at[1] - (SimTime)llround(ta * SIM_PS_PER_S)), 2);
}
END_TEST

int main(void) {
    Suite *s = suite_create("network");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_two_flows_share_a_link);
    tcase_add_test(tc, test_flow_observer);
    tcase_add_test(tc, test_n_flows_into_one_nic);
    tcase_add_test(tc, test_max_min_fairness);
    tcase_add_test(tc, test_crowded_link_closed_form);
    tcase_add_test(tc, test_adaptive_split_flows);
    tcase_add_test(tc, test_frontier_routes);
    tcase_add_test(tc, test_fabric_path_is_the_full_paths_fabric);
    tcase_add_test(tc, test_link_room_changes_nothing);
    tcase_add_test(tc, test_aggregated_vs_detailed);
    tcase_add_test(tc, test_what_ifs);
    tcase_add_test(tc, test_contention_is_emergent);
    tcase_add_test(tc, test_other_machines);
    tcase_add_test(tc, test_backend_table);
    tcase_add_test(tc, test_lone_flow_needs_no_solve);
    tcase_add_test(tc, test_alike_channels_built_once);
    tcase_add_test(tc, test_link_bytes_by_class);
    tcase_add_test(tc, test_unearly_flow_still_ends);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
