/* The max-min solver's filled links (sim/machine/net_solver.c, FILLED LINKS): a change re-solves
 * the flows of the links that fixed rates, closed over filled links and checked against the
 * links they share with flows outside. Closed-form cases for the closure and for the check, and
 * random flow sets on a dragonfly solved both ways, every end to the picosecond. */
#include <string.h>

#include "network.h"
#include "util.h"

#define NFLOWS 96

typedef struct {
    SimTime at[NFLOWS]; /* finish time of flow i */
    Engine *eng;
} Finish;

static void on_done(void *ctx, uint64_t i) {
    Finish *f = ctx;
    f->at[i] = engine_now(f->eng);
}

/* Three links of one capacity: NIC injection links of three Frontier nodes (25 GB/s), used here
 * as plain links. */
static void three_links(const Topology *topo, int32_t id[3], double *cap) {
    int n = 0;
    for (int32_t l = 0; l < topo_links(topo) && n < 3; l++)
        if (topo_link_kind(topo, l) == LINK_NIC_OUT && topo_link_node(topo, l) == n)
            id[n++] = l;
    ck_assert_int_eq(n, 3);
    *cap = topo_link_capacity(topo, id[0]);
    ck_assert(topo_link_capacity(topo, id[1]) == *cap && topo_link_capacity(topo, id[2]) == *cap);
}

/* A flow of one stream over links (one stream is topo_stream_weight units of weight). */
static void flow_on(Network *net, const Topology *topo, const int32_t *links, int n, double bytes,
                    SimTime latency, Finish *fm, uint64_t i) {
    NetLoad ld[3];
    for (int k = 0; k < n; k++)
        ld[k] = (NetLoad){links[k], (uint32_t)topo_stream_weight(topo)};
    net_flow(net, ld, n, bytes, latency, 0, on_done, fm, i);
}

typedef void (*StartFn)(Network *net, const Topology *topo, const int32_t id[3], double c,
                        Finish *fm);

/* Run start's flows on three links of capacity c (three_links) with filled links off and on:
 * at[local][i] is flow i's end. */
static void run_both(StartFn start, SimTime at[2][NFLOWS]) {
    const char *sets[] = {"nodes=3", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    int32_t id[3];
    double c;
    three_links(topo, id, &c);
    for (int local = 0; local < 2; local++) {
        g_autoptr(Engine) eng = engine_new();
        g_autoptr(Network) net = net_new(eng, topo);
        net_set_local_solves(net, local);
        Finish fm = {{0}, eng};
        start(net, topo, id, c, &fm);
        engine_run(eng);
        memcpy(at[local], fm.at, sizeof fm.at);
    }
}

#define MS (SIM_PS_PER_S / 1000)

/* The closure. Links G1 and G2 of capacity c. A1, A2 and B cross G1, B and C cross G2: G1 fills
 * at c/3 (A1, A2, B), then G2 gives C the rest, 2c/3 (G2 filled: it fixed C). At 1 ms D joins
 * G1: A1, A2, B and D get c/4, and C, on a link D does not touch, rises to 3c/4. Its bytes,
 * (2c/3 + 3c/4) x 1 ms, end at 2 ms exactly. A solve that missed C (G2's flows brought in through
 * B) would check G2 at c/4 + 2c/3 < c, pass, and leave C at 2c/3: 2.125 ms. */
static void start_closure(Network *net, const Topology *topo, const int32_t id[3], double c,
                          Finish *fm) {
    const int32_t g1[] = {id[0]}, g12[] = {id[0], id[1]}, g2[] = {id[1]};
    double big = c;                            /* a second's worth: ends after */
    flow_on(net, topo, g1, 1, big, 0, fm, 0);  /* A1 */
    flow_on(net, topo, g1, 1, big, 0, fm, 1);  /* A2 */
    flow_on(net, topo, g12, 2, big, 0, fm, 2); /* B */
    flow_on(net, topo, g2, 1, c * (2.0 / 3 + 3.0 / 4) * 1e-3, 0, fm, 3); /* C */
    flow_on(net, topo, g1, 1, big, MS, fm, 4);                           /* D, at 1 ms */
}

START_TEST(test_filled_link_brings_its_flows) {
    SimTime at[2][NFLOWS];
    run_both(start_closure, at);
    for (int local = 0; local < 2; local++)
        ck_assert_int_le(llabs(at[local][3] - 2 * MS), 1);
}
END_TEST

/* The check. G1 carries A1, A2, A3 and X; G2 carries Y, Z1 and Z2; N carries X and Y. G1 fixes
 * X at c/4, G2 fixes Y at c/3, and N, at 7c/12, fills nothing. At 1 ms the three A end: G1's
 * flows alone would give X all of c, but N would then carry c + c/3, so Y and G2's flows join
 * the solve: G2 fills first (c/3 each), N gives X the rest, 2c/3. X's bytes, (c/4 + 2c/3) x 1 ms,
 * end at 2 ms exactly; without the check, X at c would end at 1.667 ms. */
static void start_check(Network *net, const Topology *topo, const int32_t id[3], double c,
                        Finish *fm) {
    const int32_t g1[] = {id[0]}, g1n[] = {id[0], id[2]}, g2n[] = {id[1], id[2]}, g2[] = {id[1]};
    double big = c;
    for (int a = 0; a < 3; a++)
        flow_on(net, topo, g1, 1, c / 4 * 1e-3, 0, fm, (uint64_t)a);      /* A1-A3: end at 1 ms */
    flow_on(net, topo, g1n, 2, c * (1.0 / 4 + 2.0 / 3) * 1e-3, 0, fm, 3); /* X */
    flow_on(net, topo, g2n, 2, big, 0, fm, 4);                            /* Y */
    flow_on(net, topo, g2, 1, big, 0, fm, 5);                             /* Z1 */
    flow_on(net, topo, g2, 1, big, 0, fm, 6);                             /* Z2 */
}

START_TEST(test_checked_link_brings_its_flows) {
    SimTime at[2][NFLOWS];
    run_both(start_check, at);
    for (int local = 0; local < 2; local++) {
        for (int a = 0; a < 3; a++)
            ck_assert_int_le(llabs(at[local][a] - MS), 1);
        ck_assert_int_le(llabs(at[local][3] - 2 * MS), 1);
    }
}
END_TEST

/* Random flow sets on a dragonfly's links of unequal capacity (GPU, PCIe, NIC, local and global
 * links), starting at scattered times, solved with filled links and with whole components: every
 * flow ends at the same picosecond and every link carries the same bytes, and the filled links'
 * solves look at fewer links. Pairs of flows are started at once and some share their whole link
 * set, so that ties, classes and checks that fail all occur. */
START_TEST(test_local_solves_change_nothing) {
    const char *sets[] = {"nodes=256", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    int nlinks = topo_links(topo);
    GRand *rng = g_rand_new_with_seed(5);
    uint64_t looked_all[2] = {0, 0};
    for (int round = 0; round < 30; round++) {
        int nflows = g_rand_int_range(rng, 8, NFLOWS), npool = g_rand_int_range(rng, 6, 60);
        int32_t *pool = g_new(int32_t, npool);
        for (int i = 0; i < npool; i++)
            pool[i] = g_rand_int_range(rng, 0, nlinks);
        GArray *flows[NFLOWS];
        double bytes[NFLOWS];
        SimTime lat[NFLOWS];
        for (int f = 0; f < nflows; f++) {
            flows[f] = f % 4 == 3 ? g_array_ref(flows[f - 1])
                                  : random_flow_loads(rng, nlinks, NULL, pool, npool, 6, 4, TRUE);
            bytes[f] = 1e6 * g_rand_int_range(rng, 1, 1000);
            lat[f] = f % 2 ? lat[f - 1] : (SimTime)g_rand_int_range(rng, 0, 40) * 1000000000;
        }
        uint64_t looked[2];
        assert_flows_alike(topo, flows, nflows, bytes, lat, net_set_local_solves, looked);
        looked_all[0] += looked[0];
        looked_all[1] += looked[1];
        for (int f = 0; f < nflows; f++)
            g_array_unref(flows[f]);
        g_free(pool);
    }
    ck_assert_uint_lt(looked_all[1], looked_all[0]);
    g_rand_free(rng);
}
END_TEST

int main(void) {
    Suite *s = suite_create("solver");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_filled_link_brings_its_flows);
    tcase_add_test(tc, test_checked_link_brings_its_flows);
    tcase_add_test(tc, test_local_solves_change_nothing);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
