/* collectives and network: closed forms on uniform links, to the picosecond; Frontier's ring. */
#include <math.h>

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

/* Time of one collective over members, run alone on an engine. */
static SimTime time_collective(const TopologySpec *spec, int nodes, CollOp op, const int *members,
                               int n, double bytes) {
    g_autoptr(GError) err = NULL;
    g_autoptr(Topology) topo = topo_new(spec, nodes, &err);
    ck_assert_msg(topo, "%s", err ? err->message : "");
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    g_autoptr(Collectives) coll = coll_new(eng, net, topo);
    Done d = {0, 0};
    coll_start(coll, op, members, n, bytes, 0, on_done, &d, 0);
    SimTime end = engine_run(eng);
    ck_assert_int_eq(d.calls, 1);
    return end;
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
    /* so the 8-GCD allreduce of 128 MiB runs at the slowest link with RCCL's Simple protocol:
     * 17 us base + 14 x 3.6 us + 14/8 m / 50 GB/s (frontier.md's cost model) */
    double m = 128.0 * 1024 * 1024;
    SimTime t = time_collective(&sc->topo, 1, COLL_ALLREDUCE, members, 8, m);
    SimTime want_t =
        17000000 + 14 * INT64_C(3600000) + (SimTime)llround(14.0 / 8 * m / 50e9 * 1e12);
    ck_assert_int_eq(t, want_t);
    double busbw = m / ((double)t / 1e12) * coll_busbw_factor(COLL_ALLREDUCE, 8);
    ck_assert_msg(busbw < 50e9 && busbw > 0.95 * 50e9, "8-GCD bus bandwidth %.3g", busbw);
    /* GCD 0 reaches the network through NIC 0 on GCD 1: 4 links, then the 25 GB/s NIC */
    TopoRoute x = topo_route(topo, 0, 8);
    ck_assert(x.network);
    ck_assert_double_eq(x.bandwidth, 25e9);
}
END_TEST

int main(void) {
    Suite *s = suite_create("collectives");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_ring_allreduce_closed_form_in_node);
    tcase_add_test(tc, test_ring_allreduce_closed_form_across_nodes);
    tcase_add_test(tc, test_volume_eq2);
    tcase_add_test(tc, test_frontier_ring);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
