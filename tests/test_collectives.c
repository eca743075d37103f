/* collectives and network: closed forms on uniform links, to the picosecond; Frontier's RCCL
 * channels and the link that limits them; NCCL's double binary tree. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "collectives.h"
#include "util.h"

/* g GPUs per node, every pair joined by one link of bw bytes/s and latency lat; one NIC per
 * node on GPU 0 with nic_bw, PCIe 10x faster, fabric latency flat. */
static TopologySpec uniform_spec(int g, double bw, SimTime lat, double nic_bw, SimTime flat) {
    TopologySpec s = {0};
    s.name = g_strdup("uniform");
    s.gpus_per_node = g;
    s.link_bandwidth = bw;
    s.link_latency = lat;
    s.pairs = g_array_new(FALSE, FALSE, sizeof(TopoPair));
    for (int a = 0; a < g; a++)
        for (int b = a + 1; b < g; b++) {
            TopoPair p = {a, b, 1};
            g_array_append_val(s.pairs, p);
        }
    s.nics = 1;
    s.nic_gpu[0] = 0;
    s.nic_bandwidth = nic_bw;
    s.pcie_bandwidth = 10 * nic_bw;
    s.fabric_latency = flat;
    topo_spec_default_collectives(&s);
    return s;
}

typedef struct {
    SimTime at;
    int calls;
} Done;

static void on_done(void *ctx, uint64_t arg) {
    (void)arg;
    Done *d = ctx;
    d->calls++;
}

/* Time of one collective over members, run alone on an engine, in the aggregated or detailed mode;
 * algo and proto forced where >= 0; limit (may be NULL) gets coll_limit_describe of the choice. */
static SimTime time_forced(const TopologySpec *spec, int nodes, CollOp op, const int *members,
                           int n, double bytes, int algo, int proto, gboolean detailed, char *limit,
                           size_t size) {
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(spec, nodes, &err);
    ck_assert_msg(topo, "%s", err ? err->message : "");
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    g_autoptr(Collectives) coll = coll_new(eng, net, topo);
    coll_set_mode(coll, detailed ? COLL_MODE_DETAILED : COLL_MODE_AGGREGATED);
    coll_force(coll, algo, proto);
    if (limit) {
        CollChoice ch = coll_choose(coll, op, members, n, bytes);
        coll_limit_describe(coll, &ch, limit, size);
    }
    Done d = {0, 0};
    coll_start(coll, &(CollCall){.op = op, .members = members, .n = n, .bytes = bytes}, on_done, &d,
               0);
    SimTime end = engine_run(eng);
    ck_assert_int_eq(d.calls, 1);
    return end;
}

static SimTime time_collective(const TopologySpec *spec, int nodes, CollOp op, const int *members,
                               int n, double bytes) {
    return time_forced(spec, nodes, op, members, n, bytes, -1, -1, FALSE, NULL, 0);
}

START_TEST(test_ring_allreduce_closed_form_in_node) {
    /* 4 GPUs, uniform 10 GB/s links, 1 us: 2(n-1) alpha + 2(n-1)/n m/B
     * = 6 us + 1.5 x 8e6 / 1e10 s = 6 us + 1.2 ms */
    TopologySpec s = uniform_spec(4, 1e10, 1000000, 1e10, 0);
    int m[] = {0, 1, 2, 3};
    ck_assert_int_eq(time_collective(&s, 1, COLL_ALLREDUCE, m, 4, 8e6), INT64_C(1206000000));
    /* allgather and reduce-scatter: (n-1) alpha + (n-1)/n m/B = 3 us + 0.6 ms */
    ck_assert_int_eq(time_collective(&s, 1, COLL_ALLGATHER, m, 4, 8e6), INT64_C(603000000));
    ck_assert_int_eq(time_collective(&s, 1, COLL_REDUCE_SCATTER, m, 4, 8e6), INT64_C(603000000));
    /* reduce (NCCL's runRing): the whole m over every ring edge, pipelined: (n-1) alpha + m/B =
     * 3 us + 0.8 ms; the broadcast chain the same */
    ck_assert_int_eq(time_collective(&s, 1, COLL_REDUCE, m, 4, 8e6), INT64_C(803000000));
    ck_assert_int_eq(time_collective(&s, 1, COLL_BROADCAST, m, 4, 8e6), INT64_C(803000000));
    /* send: alpha + m/B */
    int pair[] = {2, 3};
    ck_assert_int_eq(time_collective(&s, 1, COLL_SEND, pair, 2, 8e6), INT64_C(801000000));
    /* a group of one costs nothing */
    ck_assert_int_eq(time_collective(&s, 1, COLL_ALLREDUCE, m, 1, 8e6), 0);
    topo_spec_clear(&s);
}
END_TEST

START_TEST(test_ring_allreduce_closed_form_across_nodes) {
    /* 8 nodes, one GPU each: every edge crosses the fabric: 2 us latency, NIC 10 GB/s.
     * 14 x 2 us + 14/8 x 8e6 / 1e10 s = 28 us + 1.4 ms */
    TopologySpec s = uniform_spec(1, 1e10, 0, 1e10, 2000000);
    int m[8];
    for (int i = 0; i < 8; i++)
        m[i] = 7 - i; /* any order: the ring is built by node */
    ck_assert_int_eq(time_collective(&s, 8, COLL_ALLREDUCE, m, 8, 8e6), INT64_C(1428000000));
    topo_spec_clear(&s);
}
END_TEST

START_TEST(test_volume_eq2) {
    ck_assert_double_eq(coll_volume(COLL_ALLREDUCE, 800, 8), 1400);
    ck_assert_double_eq(coll_volume(COLL_ALLGATHER, 800, 8), 700);
    ck_assert_double_eq(coll_volume(COLL_REDUCE_SCATTER, 800, 8), 700);
    ck_assert_double_eq(coll_volume(COLL_SEND, 800, 2), 800);
    ck_assert_int_eq(coll_ring_steps(COLL_ALLREDUCE, 8), 14);
    ck_assert_int_eq(coll_ring_steps(COLL_ALLGATHER, 8), 7);
}
END_TEST

START_TEST(test_frontier_ring) {
    /* The node's link graph (frontier.md) admits a ring over direct links only:
     * 0-1 (4 links) 1-3 (1) 3-2 (4) 2-4 (2) 4-5 (4) 5-7 (1) 7-6 (4) 6-0 (2). */
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(&sc->topo, 2, &err);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    g_autoptr(Collectives) coll = coll_new(eng, net, topo);
    int members[] = {0, 1, 2, 3, 4, 5, 6, 7}, ring[8];
    coll_ring_order(coll, members, 8, ring);
    int want[] = {0, 1, 3, 2, 4, 5, 7, 6};
    for (int i = 0; i < 8; i++)
        ck_assert_msg(ring[i] == want[i], "ring[%d] = %d, want %d", i, ring[i], want[i]);
    double slowest = G_MAXDOUBLE;
    for (int i = 0; i < 8; i++) {
        TopoRoute r = topo_route(topo, ring[i], ring[(i + 1) % 8]);
        ck_assert_int_eq(r.hops, 1);
        slowest = MIN(slowest, r.bandwidth);
    }
    ck_assert_double_eq(slowest, 50e9);
    /* but the 8-GCD allreduce runs over RCCL's 4 channels of the node (rome_model_73: 0 1 3 2 4 5
     * 7 6, its reverse, 0 1 5 4 6 7 3 2, its reverse), each with m/4, and each single-link
     * direction carries one of them: 17 us base + 14 x 3.6 us + 14/8 (m/4) / 50 GB/s (Simple) */
    double m = 128.0 * 1024 * 1024;
    char limit[128];
    SimTime t = time_forced(&sc->topo, 1, COLL_ALLREDUCE, members, 8, m, -1, -1, FALSE, limit,
                            sizeof limit);
    SimTime want_t =
        17000000 + 14 * INT64_C(3600000) + (SimTime)llround(14.0 / 8 * m / 4 / 50e9 * 1e12);
    ck_assert_int_eq(t, want_t);
    double busbw = m / ((double)t / 1e12) * coll_busbw_factor(COLL_ALLREDUCE, 8);
    ck_assert_msg(busbw < 200e9 && busbw > 0.9 * 200e9, "8-GCD bus bandwidth %.4g", busbw);
    /* the limit: the 12 single-link directions, equally busy; the lowest link id first */
    ck_assert_msg(!strcmp(limit, "node 0 GPU 0->2 (1 of 12)"), "limit '%s'", limit);
    /* the same channels in the detailed mode, step by step: the same time */
    ck_assert_int_eq(
        time_forced(&sc->topo, 1, COLL_ALLREDUCE, members, 8, m, -1, -1, TRUE, NULL, 0), want_t);
    /* a small message is latency-bound */
    time_forced(&sc->topo, 1, COLL_ALLREDUCE, members, 8, 8, -1, -1, FALSE, limit, sizeof limit);
    ck_assert_msg(!strcmp(limit, "latency"), "limit '%s'", limit);
    /* GCD 0 reaches the network through NIC 0 on GCD 1: 4 links, then the 25 GB/s NIC */
    TopoRoute x = topo_route(topo, 0, 8);
    ck_assert(x.network);
    ck_assert_double_eq(x.bandwidth, 25e9);
}
END_TEST

START_TEST(test_double_tree_closed_form) {
    /* N nodes of one GPU, one 10 GB/s NIC each, 2 us a network step; forced tree, Simple.
     * NCCL's double binary tree: 2 trees of m/2, reduce up and broadcast down at once, so an edge
     * carries one stream of m/2 each way per tree. A node's NIC sends, per tree, m/2 to its
     * parent and m/2 to each child:
     *   N = 4: tree 0 is 0 <- 2 <- {1, 3}; tree 1 its mirror 3 <- 1 <- {2, 0}. Node 2 sends
     *          3 x m/2 in tree 0 and m/2 as a leaf of tree 1: 2m. Latency 2 log2(4) steps.
     *   N = 8: 0 <- 4 <- {2, 6}, 2 <- {1, 3}, 6 <- {5, 7} and its mirror: node 4 sends 3 + 1
     *          streams: 2m. Latency 2 x 3 steps.
     *   N = 3 (odd: tree 1 is tree 0 shifted by one): 0 <- 2 <- 1 and 1 <- 0 <- 2; node 0
     *          sends 1 + 2 streams: 3m/2. Latency 2 x floor(log2 3) steps: the library's
     *          tuning model, 2 ((n/nodes - 1) intra + log2i(nodes) inter) in NCCL's and RCCL's
     *          src/graph/tuning.cc, where log2i rounds down (the tree is deeper than that).
     * One binary tree carrying m sent 3m through an interior node's NIC. */
    TopologySpec s = uniform_spec(1, 1e10, 0, 1e10, 2000000);
    int m8[] = {0, 1, 2, 3, 4, 5, 6, 7};
    double m = 8e6;
    struct {
        int nodes;
        double streams; /* of m/2 out of the busiest NIC */
        int steps;
    } cases[] = {{4, 4, 4}, {8, 4, 6}, {3, 3, 2}};
    for (int i = 0; i < 3; i++) {
        int N = cases[i].nodes;
        SimTime want = cases[i].steps * INT64_C(2000000) +
                       (SimTime)llround(cases[i].streams * m / 2 / 1e10 * 1e12);
        SimTime t =
            time_forced(&s, N, COLL_ALLREDUCE, m8, N, m, ALGO_TREE, PROTO_SIMPLE, FALSE, NULL, 0);
        ck_assert_msg(t == want, "%d nodes: %" PRId64 " ps, want %" PRId64, N, t, want);
    }
    topo_spec_clear(&s);
}
END_TEST

START_TEST(test_frontier_two_nodes_nics) {
    /* 16 GCDs on 2 Frontier nodes, on a flat fabric (so that only node links count): RCCL's 4
     * channels of rome_model_74 each enter a node by one NIC and leave by another ("N0 0 1 5 4 6
     * 7 3 2 N1", ...), so every NIC sends one ring and receives another: 2 x 15/16 x m/4 at
     * 25 GB/s; the limit is the 16 NIC links of the 2 nodes, each way. Latency: 17 us + 26
     * intra-node steps x 3.6 us + 4 network steps x 19.8 us. */
    const char *sets[] = {"fabric.kind=flat", "fabric.latency=0us", NULL};
    TopologySpec spec;
    g_autoptr(GError) err = NULL;
    ck_assert_msg(scenario_load_topology("frontier", (char *const *)sets, &spec, &err), "%s",
                  err ? err->message : "");
    int members[16];
    for (int i = 0; i < 16; i++)
        members[i] = i;
    double m = 128.0 * 1024 * 1024;
    char limit[128];
    SimTime want = 17000000 + 26 * INT64_C(3600000) + 4 * INT64_C(19800000) +
                   (SimTime)llround(2 * 15.0 / 16 * m / 4 / 25e9 * 1e12);
    SimTime t = time_forced(&spec, 2, COLL_ALLREDUCE, members, 16, m, ALGO_RING, PROTO_SIMPLE,
                            FALSE, limit, sizeof limit);
    ck_assert_msg(t == want, "ring: %" PRId64 " ps, want %" PRId64, t, want);
    ck_assert_msg(!strcmp(limit, "node 0 NIC 0 nic-out (1 of 16)"), "limit '%s'", limit);
    ck_assert_int_eq(time_forced(&spec, 2, COLL_ALLREDUCE, members, 16, m, ALGO_RING, PROTO_SIMPLE,
                                 TRUE, NULL, 0),
                     want);
    /* the double tree on 2 nodes: per channel and tree one stream of m/8 each way between the
     * nodes through the channel's NIC (2 per NIC and direction: m/4 at 25 GB/s), and the node's
     * chains in both directions over the single xGMI links (4 x m/8 at 50 GB/s): a tie.
     * Latency: 17 us + 2 x 7 x 2.5 us + 2 x 1 x 22.4 us. */
    want = 17000000 + 14 * INT64_C(2500000) + 2 * INT64_C(22400000) +
           (SimTime)llround(m / 4 / 25e9 * 1e12);
    t = time_forced(&spec, 2, COLL_ALLREDUCE, members, 16, m, ALGO_TREE, PROTO_SIMPLE, FALSE, limit,
                    sizeof limit);
    ck_assert_msg(t == want, "tree: %" PRId64 " ps, want %" PRId64, t, want);
    /* the ring reduce over the same 4 channels: each NIC carries one channel's m/4 out and
     * another's in (not 15/16 of it twice, as the allreduce): m/4 at 25 GB/s, a quarter of what
     * one chain through one NIC took; its latency is the ring's base and steps (15 of them, 1
     * across nodes) */
    SimTime one = time_forced(&spec, 2, COLL_REDUCE, members, 16, m, ALGO_RING, PROTO_SIMPLE, FALSE,
                              limit, sizeof limit);
    SimTime lat =
        time_forced(&spec, 2, COLL_REDUCE, members, 16, 0, ALGO_RING, PROTO_SIMPLE, FALSE, NULL, 0);
    ck_assert_msg(one - lat == (SimTime)llround(m / 4 / 25e9 * 1e12),
                  "reduce: %" PRId64 " ps of bandwidth, want m/4 at 25 GB/s", one - lat);
    topo_spec_clear(&spec);
}
END_TEST

START_TEST(test_frontier_two_nodes_adaptive) {
    /* The same 2-node ring on the real dragonfly. Nodes 0 and 1 share a block, NIC k of both on
     * switch k: each ring leaves node 0 by NIC k_out and enters node 1 by NIC k_in (switch
     * k_out -> k_in), and back on the same switch pair. Adaptive routing (Frontier's default)
     * spreads each boundary over the direct link and the 30 two-hop paths of the group, at most
     * 4 streams x 1/31 on a local link: the NICs bound it, the flat fabric's closed form:
     * 17 + 26 x 3.6 + 4 x 19.8 us + 2 x 15/16 x m/4 at 25 GB/s = 2,706.3824 us.
     * Minimal routing puts both boundaries of a ring on one 25 GB/s switch link: 12.5 GB/s a
     * stream, 2 x 15/16 x m/4 at 12.5 GB/s. */
    TopologySpec spec;
    g_autoptr(GError) err = NULL;
    ck_assert_msg(scenario_load_topology("frontier", NULL, &spec, &err), "%s",
                  err ? err->message : "");
    ck_assert_int_eq(spec.routing, ROUTING_ADAPTIVE);
    int members[16];
    for (int i = 0; i < 16; i++)
        members[i] = i;
    double m = 128.0 * 1024 * 1024;
    SimTime lat = 17000000 + 26 * INT64_C(3600000) + 4 * INT64_C(19800000);
    SimTime want = lat + (SimTime)llround(2 * 15.0 / 16 * m / 4 / 25e9 * 1e12);
    char limit[128];
    SimTime t = time_forced(&spec, 2, COLL_ALLREDUCE, members, 16, m, ALGO_RING, PROTO_SIMPLE,
                            FALSE, limit, sizeof limit);
    ck_assert_msg(t == want, "adaptive: %" PRId64 " ps, want %" PRId64, t, want);
    ck_assert_msg(!strcmp(limit, "node 0 NIC 0 nic-out (1 of 16)"), "limit '%s'", limit);
    ck_assert_int_eq(time_forced(&spec, 2, COLL_ALLREDUCE, members, 16, m, ALGO_RING, PROTO_SIMPLE,
                                 TRUE, NULL, 0),
                     want);
    spec.routing = ROUTING_MINIMAL;
    want = lat + (SimTime)llround(2 * 15.0 / 16 * m / 4 / 12.5e9 * 1e12);
    t = time_forced(&spec, 2, COLL_ALLREDUCE, members, 16, m, ALGO_RING, PROTO_SIMPLE, FALSE, limit,
                    sizeof limit);
    ck_assert_msg(t == want, "minimal: %" PRId64 " ps, want %" PRId64, t, want);
    ck_assert_msg(!strcmp(limit, "group 0 switch 0->1 (1 of 4)"), "limit '%s'", limit);
    topo_spec_clear(&spec);
}
END_TEST

/* Which algorithm RCCL's model picks (collectives.model of frontier.yaml: 8 channels of 31.5 GB/s,
 * tuning_model_3's bwRatio), allreduce:
 *  - 16 GCDs (2 nodes), 128 MiB: ring algBw 252 x 16/30 = 134.4 GB/s against the tree's 252 x
 *    0.95 x 0.5 = 119.7; the tree's 93 us less latency (96.8 against 189.8 us) is worth less
 *    than the ring's bandwidth above about 102 MB: ring, Simple. At 1 MiB: tree.
 *  - 64 GCDs (8 nodes): tree Simple's bwRatio is 0.41 beyond 2 nodes (algBw 51.7 against the
 *    ring's 128.0 GB/s), its latency 186.4 against 729.8 us: tree up to about 47 MB, ring above.
 *  - 8 B on 1,024 GCDs (128 nodes): tree, LL.
 * --algo forcing still wins over the model. */
START_TEST(test_algorithm_choice_rccl_model) {
    TopologySpec spec;
    g_autoptr(GError) err = NULL;
    ck_assert_msg(scenario_load_topology("frontier", NULL, &spec, &err), "%s",
                  err ? err->message : "");
    ck_assert_int_eq(spec.coll.model_channels, 8);
    static int members[1024];
    for (int i = 0; i < 1024; i++)
        members[i] = i;
    struct {
        int n;
        double bytes;
        CollAlgo algo;
        CollProto proto;
    } cases[] = {
        {16, 128.0 * 1024 * 1024, ALGO_RING, PROTO_SIMPLE},
        {16, 1024.0 * 1024, ALGO_TREE, PROTO_SIMPLE},
        {64, 128.0 * 1024 * 1024, ALGO_RING, PROTO_SIMPLE},
        {64, 32.0 * 1024 * 1024, ALGO_TREE, PROTO_SIMPLE},
        {64, 8, ALGO_TREE, PROTO_LL},
        {1024, 8, ALGO_TREE, PROTO_LL},
        {8, 128.0 * 1024 * 1024, ALGO_RING, PROTO_SIMPLE},
        {8, 8, ALGO_RING, PROTO_LL},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        int nodes = (cases[i].n + 7) / 8;
        g_autoptr(Topology) topo = topo_new(&spec, nodes, &err);
        g_autoptr(Engine) eng = engine_new();
        g_autoptr(Network) net = net_new(eng, topo);
        g_autoptr(Collectives) coll = coll_new(eng, net, topo);
        CollChoice ch = coll_choose(coll, COLL_ALLREDUCE, members, cases[i].n, cases[i].bytes);
        ck_assert_msg(ch.algo == cases[i].algo && ch.proto == cases[i].proto,
                      "%d GCDs, %.0f B: %s/%s, want %s/%s", cases[i].n, cases[i].bytes,
                      coll_algo_name(ch.algo), coll_proto_name(ch.proto),
                      coll_algo_name(cases[i].algo), coll_proto_name(cases[i].proto));
        if (i == 0) {
            /* the group's memo of its last choice (CollChoiceMemo) is keyed by size: 1 MiB
               after 128 MiB on the same group is the tree, and 128 MiB again the ring */
            ch = coll_choose(coll, COLL_ALLREDUCE, members, 16, cases[1].bytes);
            ck_assert_int_eq(ch.algo, cases[1].algo);
            ch = coll_choose(coll, COLL_ALLREDUCE, members, 16, cases[0].bytes);
            ck_assert_int_eq(ch.algo, cases[0].algo);
            coll_force(coll, ALGO_TREE, -1); /* forced: the memo no longer stands */
            ch = coll_choose(coll, COLL_ALLREDUCE, members, 16, cases[i].bytes);
            ck_assert_int_eq(ch.algo, ALGO_TREE);
        }
    }
    topo_spec_clear(&spec);
}
END_TEST

START_TEST(test_symmetric_form_over_channels) {
    /* The deduplicated form (only GCD 8's node carries node-local links) over RCCL's channels and
     * NICs, on the real dragonfly: the same time as the full form, ring and tree. */
    TopologySpec spec;
    g_autoptr(GError) err = NULL;
    ck_assert_msg(scenario_load_topology("frontier", NULL, &spec, &err), "%s",
                  err ? err->message : "");
    int members[32];
    for (int i = 0; i < 32; i++)
        members[i] = i;
    for (int algo = ALGO_RING; algo <= ALGO_TREE; algo++)
        for (int op = COLL_ALLREDUCE; op <= COLL_REDUCE_SCATTER; op++) {
            if (algo == ALGO_TREE && op != COLL_ALLREDUCE)
                continue;
            SimTime t[2];
            for (int sym = 0; sym < 2; sym++) {
                g_autoptr(Topology) topo = topo_new(&spec, 4, &err);
                g_autoptr(Engine) eng = engine_new();
                g_autoptr(Network) net = net_new(eng, topo);
                g_autoptr(Collectives) coll = coll_new(eng, net, topo);
                coll_force(coll, algo, PROTO_SIMPLE);
                Done d = {0, 0};
                coll_start(coll,
                           &(CollCall){.op = op,
                                       .members = members,
                                       .n = 32,
                                       .bytes = 64e6,
                                       .form = sym ? COLL_SYMMETRIC : COLL_FULL,
                                       .rep = 8},
                           on_done, &d, 0);
                t[sym] = engine_run(eng);
                ck_assert_int_eq(d.calls, 1);
            }
            ck_assert_msg(t[0] == t[1], "%s %s: full %" PRId64 ", symmetric %" PRId64,
                          coll_algo_name(algo), coll_op_name(op), t[0], t[1]);
        }
    topo_spec_clear(&spec);
}
END_TEST

/* A CollCall's copies: one flow standing for copies of a group gives the time and the link bytes of
 * the copies run as separate flows, on rails apart (DGX A100: GPU k's pipeline send leaves by NIC
 * k) and on a link they share (one NIC per node: 8 copies at 1/8 of its rate each). */
START_TEST(test_copies_as_one_flow) {
    for (int machine = 0; machine < 2; machine++) {
        TopologySpec spec;
        g_autoptr(GError) err = NULL;
        if (machine == 0)
            ck_assert_msg(scenario_load_topology("dgx-a100", NULL, &spec, &err), "%s",
                          err ? err->message : "");
        else
            spec = uniform_spec(8, 50e9, 0, 25e9, 0);
        SimTime t[2];
        GArray *busy[2];
        for (int copies = 0; copies < 2; copies++) {
            g_autoptr(Topology) topo = topo_new(&spec, 2, &err);
            g_autoptr(Engine) eng = engine_new();
            g_autoptr(Network) net = net_new(eng, topo);
            g_autoptr(Collectives) coll = coll_new(eng, net, topo);
            Done d = {0, 0};
            int ends[2] = {0, 8}; /* GPU 0 of node 0 to GPU 0 of node 1 */
            if (copies)
                coll_start(coll,
                           &(CollCall){.op = COLL_SEND,
                                       .members = ends,
                                       .n = 2,
                                       .bytes = 1e9,
                                       .cls = 2,
                                       .copies = 8,
                                       .stride = 1},
                           on_done, &d, 0);
            else
                for (int k = 0; k < 8; k++) {
                    int e[2] = {k, 8 + k};
                    coll_start(
                        coll,
                        &(CollCall){.op = COLL_SEND, .members = e, .n = 2, .bytes = 1e9, .cls = 2},
                        on_done, &d, 0);
                }
            t[copies] = engine_run(eng);
            ck_assert_int_eq(d.calls, copies ? 1 : 8);
            busy[copies] = net_busiest_links(net, 64);
        }
        ck_assert_msg(t[0] == t[1],
                      "machine %d: 8 flows %" PRId64 " ps, one flow of 8 copies %" PRId64, machine,
                      t[0], t[1]);
        ck_assert_uint_eq(busy[0]->len, busy[1]->len);
        for (guint i = 0; i < busy[0]->len; i++) {
            NetLinkStat *a = &g_array_index(busy[0], NetLinkStat, i),
                        *b = &g_array_index(busy[1], NetLinkStat, i);
            ck_assert_int_eq(a->link, b->link);
            ck_assert_double_eq_tol(a->bytes, b->bytes, 1e-9 * a->bytes);
        }
        if (machine == 1) /* the one NIC carries all 8 GB: 8 x 1 GB / 25 GB/s */
            ck_assert_int_ge(t[1], (SimTime)(8e9 / 25e9 * 1e12));
        g_array_unref(busy[0]);
        g_array_unref(busy[1]);
        topo_spec_clear(&spec);
    }
}
END_TEST

/* rccl-tests' bus bandwidth factors, op by op: doc/PERFORMANCE.md (allreduce 2(n-1)/n,
 * reduce-scatter and allgather (n-1)/n, broadcast and reduce 1), src/alltoall.cu AlltoAllGetBw
 * ((nranks-1)/nranks) and src/sendrecv.cu (1). */
/* A group's handle (coll_group) used for call after call, of other ops and sizes, gives each the
 * choice and the time a fresh machine gives the member list: the choices kept per group are keyed
 * by op and size, and the handle is the same group the member list finds. */
START_TEST(test_group_handle_reused) {
    TopologySpec spec = uniform_spec(4, 50e9, 1000000, 25e9, 2000000);
    int members[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(&spec, 2, &err);
    ck_assert_msg(topo, "%s", err ? err->message : "");
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    g_autoptr(Collectives) coll = coll_new(eng, net, topo);
    const CollGroup *g = coll_group(coll, COLL_ALLREDUCE, members, 8);
    ck_assert_ptr_eq(coll_group(coll, COLL_ALLGATHER, members, 8), g);
    struct {
        CollOp op;
        double bytes;
    } calls[] = {{COLL_ALLREDUCE, 4096},
                 {COLL_ALLGATHER, 64e6},
                 {COLL_ALLREDUCE, 64e6},
                 {COLL_ALLREDUCE, 4096},
                 {COLL_REDUCE_SCATTER, 1e6}};
    for (size_t k = 0; k < G_N_ELEMENTS(calls); k++) {
        SimTime want = time_collective(&spec, 2, calls[k].op, members, 8, calls[k].bytes);
        CollChoice fresh;
        {
            g_autoptr(Engine) e2 = engine_new();
            g_autoptr(Network) n2 = net_new(e2, topo);
            g_autoptr(Collectives) c2 = coll_new(e2, n2, topo);
            fresh = coll_choose(c2, calls[k].op, members, 8, calls[k].bytes);
        }
        CollChoice ch = coll_choose_group(coll, calls[k].op, g, calls[k].bytes);
        ck_assert_msg(ch.algo == fresh.algo && ch.proto == fresh.proto &&
                          ch.predicted == fresh.predicted,
                      "call %zu: algo %d proto %d %" PRId64 " ps, fresh %d %d %" PRId64, k, ch.algo,
                      ch.proto, ch.predicted, fresh.algo, fresh.proto, fresh.predicted);
        Done d = {0, 0};
        SimTime t0 = engine_now(eng);
        coll_start(coll, &(CollCall){.op = calls[k].op, .group = g, .bytes = calls[k].bytes},
                   on_done, &d, 0);
        SimTime end = engine_run(eng);
        ck_assert_int_eq(d.calls, 1);
        ck_assert_msg(end - t0 == want, "call %zu: %" PRId64 " ps, alone %" PRId64, k, end - t0,
                      want);
    }
    topo_spec_clear(&spec);
}
END_TEST

START_TEST(test_busbw_factors) {
    for (int n = 2; n <= 1024; n *= 4) {
        double half = (double)(n - 1) / n;
        const struct {
            CollOp op;
            double want;
        } cases[] = {
            {COLL_ALLREDUCE, 2 * half},
            {COLL_REDUCE_SCATTER, half},
            {COLL_ALLGATHER, half},
            {COLL_ALL_TO_ALL, half},
            {COLL_BROADCAST, 1},
            {COLL_REDUCE, 1},
            {COLL_SEND, 1},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
            double got = coll_busbw_factor(cases[i].op, n);
            ck_assert_msg(got == cases[i].want, "%s over %d: busbw factor %.17g, want %.17g",
                          coll_op_name(cases[i].op), n, got, cases[i].want);
        }
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("collectives");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_ring_allreduce_closed_form_in_node);
    tcase_add_test(tc, test_ring_allreduce_closed_form_across_nodes);
    tcase_add_test(tc, test_volume_eq2);
    tcase_add_test(tc, test_frontier_ring);
    tcase_add_test(tc, test_double_tree_closed_form);
    tcase_add_test(tc, test_frontier_two_nodes_nics);
    tcase_add_test(tc, test_frontier_two_nodes_adaptive);
    tcase_add_test(tc, test_algorithm_choice_rccl_model);
    tcase_add_test(tc, test_symmetric_form_over_channels);
    tcase_add_test(tc, test_copies_as_one_flow);
    tcase_add_test(tc, test_busbw_factors);
    tcase_add_test(tc, test_group_handle_reused);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
