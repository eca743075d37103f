/* The max-min solver (sim/machine/net_solver.c) and its shortcuts. Filled links (FILLED LINKS):
 * a change re-solves the flows of the links that fixed rates, closed over filled links and
 * checked against the links they share with flows outside; closed-form cases for the closure and
 * for the check. Then each shortcut against the run without it (private links and link classes,
 * slack links, exclusive links of borrowed load sets) and the solver against the textbook's
 * progressive filling, on random flow sets: every end to the picosecond. */
#include <inttypes.h>
#include <math.h>
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

/* Random flow sets on a dragonfly's links, solved with and without the solver's private links
 * and link classes: every flow ends at the same picosecond and every link carries the same
 * bytes. Flows copy parts of each other's link sets so that classes form, with weights 1-3 and
 * links of unequal capacity. */
START_TEST(test_solver_classes_change_nothing) {
    const char *sets[] = {"nodes=64", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    int nlinks = topo_links(topo);
    GRand *rng = g_rand_new_with_seed(7);
    int classes_seen = 0;
    for (int round = 0; round < 40; round++) {
        int nflows = g_rand_int_range(rng, 2, 64), pool = g_rand_int_range(rng, 4, 80);
        int32_t *links = g_new(int32_t, pool);
        for (int i = 0; i < pool; i++)
            links[i] = g_rand_int_range(rng, 0, nlinks);
        GArray *flows[64];
        for (int f = 0; f < nflows; f++) {
            flows[f] = random_flow_loads(rng, nlinks, f > 0 ? flows[f - 1] : NULL, links, pool, 24,
                                         4, TRUE);
        }
        double bytes[64];
        SimTime lat[64];
        for (int f = 0; f < nflows; f++) {
            bytes[f] = 1e6 * g_rand_int_range(rng, 1, 1000);
            lat[f] = (SimTime)g_rand_int_range(rng, 0, 4) * 1000000;
        }
        uint64_t looked[2];
        assert_flows_alike(topo, flows, nflows, bytes, lat, net_set_solver_classes, looked);
        for (int f = 0; f < nflows; f++) {
            for (int g2 = 0; g2 < f && !classes_seen; g2++)
                classes_seen += flows[f]->len > 1 && flows[g2]->len > 1;
            g_array_unref(flows[f]);
        }
        g_free(links);
    }
    ck_assert_int_gt(classes_seen, 0);
    g_rand_free(rng);
}
END_TEST

/* Frontier traffic like a 3D-parallel job's: node-wide rings (TP) and GPU-to-GPU sends between
 * nodes (pipeline), starting and ending at scattered times, solved with and without the solver's
 * shortcuts. The link from a GCD to the GCD that owns its NIC carries both and is slack (200 GB/s
 * against a 25 GB/s NIC and a 50 GB/s ring), so with the shortcuts the solves look at fewer links;
 * every flow must still end at the same picosecond. That needs both the slack argument (the test
 * fails with SLACK_MARGIN at -0.01) and progress brought up to date on rate changes only (it fails
 * by 1 ps when every solve rebases the flows it looks at). */
START_TEST(test_slack_links_change_nothing) {
    const char *sets[] = {"nodes=4", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    const int ring[] = {0, 1, 5, 4, 6, 7, 3, 2};
    GRand *rng = g_rand_new_with_seed(11);
    for (int round = 0; round < 6; round++) {
        int nflows = 64;
        int src[64], dst[64], node[64];
        double bytes[64];
        SimTime lat[64];
        for (int f = 0; f < nflows; f++) {
            node[f] = g_rand_int_range(rng, 0, 4);
            src[f] = 8 * node[f] + g_rand_int_range(rng, 0, 8);
            dst[f] = 8 * g_rand_int_range(rng, 0, 4) + g_rand_int_range(rng, 0, 8);
            bytes[f] = 1e6 * g_rand_int_range(rng, 1, 400);
            lat[f] = (SimTime)g_rand_int_range(rng, 0, 10) * 1000000000; /* 0-9 ms */
        }
        SimTime at[2][64];
        uint64_t looked[2];
        for (int on = 0; on < 2; on++) {
            g_autoptr(Engine) eng = engine_new();
            g_autoptr(Network) net = net_new(eng, topo);
            net_set_solver_classes(net, on);
            Finish fm = {{0}, eng};
            for (int f = 0; f < nflows; f++) {
                if (f % 3 == 0) { /* a ring over the node's 8 GCDs, one stream per edge */
                    net_loads_reset(net);
                    for (int k = 0; k < 8; k++) {
                        TopoPath p;
                        int a = 8 * node[f] + ring[k], b = 8 * node[f] + ring[(k + 1) % 8];
                        topo_path(topo, a, b, topo_pair_salt(a, b), &p);
                        net_loads_add_path(net, &p);
                    }
                    int n;
                    const NetLoad *loads = net_loads_get(net, &n);
                    net_flow(net, loads, n, bytes[f], lat[f], 0, on_done, &fm, (uint64_t)f);
                } else if (src[f] != dst[f]) {
                    net_transfer(net, src[f], dst[f], bytes[f], lat[f], 1, on_done, &fm,
                                 (uint64_t)f);
                }
            }
            engine_run(eng);
            memcpy(at[on], fm.at, sizeof at[on]);
            looked[on] = net_solved_links(net);
        }
        for (int f = 0; f < nflows; f++)
            ck_assert_int_eq(at[0][f], at[1][f]);
        ck_assert_uint_lt(looked[1], looked[0]);
    }
    g_rand_free(rng);
}
END_TEST

/* Borrowed load sets with links of their own and links shared with other sets, whose flows start
 * at scattered times, overlap their own set's flows, and meet flows with loads of their own that
 * take over links a set had alone, run with and without the exclusive-link shortcut
 * (network.c, EXCLUSIVE LINKS), and with it and early activation (EARLY ACTIVATION: flows of one
 * set that start together, and owned flows that take a link over within a set's flow's latency,
 * put an early flow back): every flow ends at the same picosecond, every link carries the same
 * bytes by class, and the solver runs the same solves over the same links. The runs with the
 * shortcut keep each set's handle (net_flow_borrowed), the other finds sets by address. */
typedef struct {
    Network *net;
    GArray **sets;  /* NetLoad, borrowed */
    GArray **owned; /* NetLoad, per flow: NULL for a borrowed set's flow */
    int *set_of;    /* per flow */
    double *bytes;  /* per flow */
    Finish *fin;
    NetLoadSet *facts; /* per set: the handle kept for its loads, or NULL (found by address) */
} ExclRun;

static void excl_start(Engine *eng, void *ctx, uint64_t f) {
    (void)eng;
    ExclRun *r = ctx;
    const GArray *a = r->owned[f] ? r->owned[f] : r->sets[r->set_of[f]];
    if (r->owned[f])
        net_flow(r->net, (const NetLoad *)a->data, (int)a->len, r->bytes[f], 1000000, (int)f % 3,
                 on_done, r->fin, f);
    else
        net_flow_borrowed(r->net, (const NetLoad *)a->data, (int)a->len,
                          r->facts ? &r->facts[r->set_of[f]] : NULL, r->bytes[f], 1000000,
                          (int)f % 3, on_done, r->fin, f);
}

START_TEST(test_exclusive_links_change_nothing) {
    const char *sets_[] = {"nodes=16", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets_);
    g_autoptr(Topology) topo = topo_ok(sc);
    int nlinks = topo_links(topo);
    GRand *rng = g_rand_new_with_seed(5);
    enum { NSETS = 10, NEXCL = 64, PRIVATE = 24 };
    ck_assert_int_gt(nlinks, NSETS * PRIVATE + 64);
    uint64_t early = 0; /* flows activated early, over the rounds */
    for (int round = 0; round < 20; round++) {
        int32_t common[12];
        for (int i = 0; i < 12; i++)
            common[i] = NSETS * PRIVATE + g_rand_int_range(rng, 0, nlinks - NSETS * PRIVATE);
        GArray *sets[NSETS];
        for (int k = 0; k < NSETS; k++) { /* mostly its own links, some common ones */
            sets[k] = g_array_new(FALSE, FALSE, sizeof(NetLoad));
            gboolean used[PRIVATE + 12] = {0};
            for (int n = g_rand_int_range(rng, 2, 20), i = 0; i < n; i++) {
                int pick = g_rand_int_range(rng, 0, 4) ? g_rand_int_range(rng, 0, PRIVATE)
                                                       : PRIVATE + g_rand_int_range(rng, 0, 12);
                if (used[pick])
                    continue;
                used[pick] = TRUE;
                NetLoad ld = {pick < PRIVATE ? k * PRIVATE + pick : common[pick - PRIVATE],
                              g_rand_int_range(rng, 0, 3) ? 1u
                                                          : (uint32_t)g_rand_int_range(rng, 2, 4)};
                g_array_append_val(sets[k], ld);
            }
        }
        GArray *owned[NEXCL];
        int set_of[NEXCL];
        double bytes[NEXCL];
        SimTime start[NEXCL];
        for (int f = 0; f < NEXCL; f++) {
            set_of[f] = g_rand_int_range(rng, 0, NSETS);
            bytes[f] = 1e6 * g_rand_int_range(rng, 1, 400);
            start[f] = (SimTime)g_rand_int_range(rng, 0, 40) * 1000000000; /* 0-39 ms */
            owned[f] = NULL;
            if (g_rand_int_range(rng, 0, 6) == 0) { /* its own loads: a few of a set's links */
                const GArray *from = sets[set_of[f]];
                owned[f] = g_array_new(FALSE, FALSE, sizeof(NetLoad));
                for (guint i = 0; i < from->len; i += (guint)g_rand_int_range(rng, 1, 4))
                    g_array_append_val(owned[f], g_array_index(from, NetLoad, i));
            }
        }
        SimTime at[3][NEXCL];
        GArray *busiest[3];
        uint64_t solves[3], looked[3];
        for (int on = 0; on < 3; on++) { /* off; exclusive links; and early activation */
            g_autoptr(Engine) eng = engine_new();
            g_autoptr(Network) net = net_new(eng, topo);
            net_set_exclusive_links(net, on > 0);
            net_set_early_activation(net, on == 2);
            Finish fin = {{0}, eng};
            NetLoadSet facts[NSETS] = {0}; /* kept with the shortcut on, not without */
            ExclRun r = {net, sets, owned, set_of, bytes, &fin, on ? facts : NULL};
            for (int f = 0; f < NEXCL; f++)
                engine_schedule(eng, start[f], excl_start, &r, (uint64_t)f);
            engine_run(eng);
            memcpy(at[on], fin.at, sizeof at[on]);
            busiest[on] = net_busiest_links(net, 1 << 20);
            solves[on] = net_solves(net);
            looked[on] = net_solved_links(net);
            early += net_early_flows(net);
        }
        for (int on = 1; on < 3; on++) {
            for (int f = 0; f < NEXCL; f++)
                ck_assert_msg(at[0][f] == at[on][f],
                              "round %d flow %d: %" PRId64 " ps, %" PRId64 " with shortcuts %d",
                              round, f, at[0][f], at[on][f], on);
            ck_assert_uint_eq(busiest[0]->len, busiest[on]->len);
            for (guint i = 0; i < busiest[0]->len; i++) {
                const NetLinkStat *a = &g_array_index(busiest[0], NetLinkStat, i),
                                  *b = &g_array_index(busiest[on], NetLinkStat, i);
                ck_assert_msg(memcmp(a, b, sizeof *a) == 0, "round %d: link %d %.17g B, %d %.17g B",
                              round, a->link, a->bytes, b->link, b->bytes);
            }
            ck_assert_uint_eq(solves[0], solves[on]);
            ck_assert_uint_eq(looked[0], looked[on]);
        }
        for (int on = 0; on < 3; on++)
            g_array_unref(busiest[on]);
        for (int k = 0; k < NSETS; k++)
            g_array_unref(sets[k]);
        for (int f = 0; f < NEXCL; f++)
            if (owned[f])
                g_array_unref(owned[f]);
    }
    ck_assert_uint_gt(early, 0);
    g_rand_free(rng);
}
END_TEST

/* The textbook progressive filling, for reference: every unfixed flow's rate rises together; the
 * links at the smallest fair share (remaining capacity / unfixed weight, within a relative 1e-12)
 * fill and fix their flows. Rates per stream; weights in units of 1/unit of a stream. */
static void reference_rates(const Topology *topo, GArray *const *flows, const gboolean *active,
                            int nflows, double *rate) {
    int nl = topo_links(topo);
    double *left = g_new(double, nl), *w = g_new(double, nl);
    gboolean *fixed = g_new0(gboolean, nflows), *full = g_new(gboolean, nl);
    double unit = topo_stream_weight(topo);
    for (int l = 0; l < nl; l++)
        left[l] = topo_link_capacity(topo, l);
    for (;;) {
        memset(w, 0, sizeof(double) * nl);
        for (int f = 0; f < nflows; f++)
            for (guint i = 0; active[f] && !fixed[f] && i < flows[f]->len; i++) {
                NetLoad ld = g_array_index(flows[f], NetLoad, i);
                w[ld.link] += ld.weight;
            }
        double best = G_MAXDOUBLE;
        for (int l = 0; l < nl; l++)
            if (w[l] > 0)
                best = MIN(best, MAX(left[l], 0) / w[l]);
        if (best == G_MAXDOUBLE)
            break;
        for (int l = 0; l < nl; l++) /* the links that fill at this level */
            full[l] = w[l] > 0 && MAX(left[l], 0) / w[l] <= best * (1 + 1e-12);
        for (int f = 0; f < nflows; f++) {
            if (!active[f] || fixed[f])
                continue;
            gboolean fills = FALSE;
            for (guint i = 0; i < flows[f]->len && !fills; i++)
                fills = full[g_array_index(flows[f], NetLoad, i).link];
            if (!fills)
                continue;
            fixed[f] = TRUE;
            rate[f] = best * unit;
            for (guint i = 0; i < flows[f]->len; i++) {
                NetLoad ld = g_array_index(flows[f], NetLoad, i);
                left[ld.link] -= best * ld.weight;
            }
        }
    }
    g_free(left);
    g_free(w);
    g_free(fixed);
    g_free(full);
}

/* Random flow sets on a Frontier machine (adaptive dragonfly: a stream's weight unit is 31),
 * all starting at once, with every shortcut the solver takes (slack links, link classes, private
 * links, stale entries dropped, the stop once all are fixed): each flow ends when a fluid
 * simulation with the textbook rates says, to a relative 1e-9. */
START_TEST(test_solver_matches_textbook_filling) {
    const char *sets[] = {"nodes=8", NULL};
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", sets);
    g_autoptr(Topology) topo = topo_ok(sc);
    int nlinks = topo_links(topo);
    GRand *rng = g_rand_new_with_seed(5);
    for (int round = 0; round < 30; round++) {
        int nflows = g_rand_int_range(rng, 2, 40);
        GArray *flows[40];
        double bytes[40], left[40], rate[40], want[40];
        gboolean active[40];
        for (int f = 0; f < nflows; f++) {
            flows[f] =
                random_flow_loads(rng, nlinks, f > 0 ? flows[f - 1] : NULL, NULL, 0, 12, 94, FALSE);
            bytes[f] = left[f] = 1e6 * g_rand_int_range(rng, 1, 500);
            active[f] = TRUE;
        }
        /* the fluid reference: rates, the next end, again */
        double now = 0;
        for (int alive = nflows; alive > 0;) {
            reference_rates(topo, flows, active, nflows, rate);
            double dt = G_MAXDOUBLE;
            for (int f = 0; f < nflows; f++)
                if (active[f])
                    dt = MIN(dt, left[f] / rate[f]);
            now += dt;
            for (int f = 0; f < nflows; f++) {
                if (!active[f])
                    continue;
                left[f] -= rate[f] * dt;
                if (left[f] <= bytes[f] * 1e-12) {
                    active[f] = FALSE;
                    want[f] = now;
                    alive--;
                }
            }
        }
        g_autoptr(Engine) eng = engine_new();
        g_autoptr(Network) net = net_new(eng, topo);
        Finish fm = {{0}, eng};
        for (int f = 0; f < nflows; f++)
            net_flow(net, (const NetLoad *)flows[f]->data, (int)flows[f]->len, bytes[f], 0, 0,
                     on_done, &fm, (uint64_t)f);
        engine_run(eng);
        for (int f = 0; f < nflows; f++) {
            double got = (double)fm.at[f] / SIM_PS_PER_S;
            ck_assert_msg(fabs(got - want[f]) <= 1e-9 * want[f] + 2e-12,
                          "round %d flow %d: %.15g s against %.15g s", round, f, got, want[f]);
            g_array_unref(flows[f]);
        }
    }
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
    tcase_add_test(tc, test_solver_classes_change_nothing);
    tcase_add_test(tc, test_slack_links_change_nothing);
    tcase_add_test(tc, test_exclusive_links_change_nothing);
    tcase_add_test(tc, test_solver_matches_textbook_filling);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
