/* dedup: one data-parallel replica simulated for all (the default) against every rank simulated
 * (--all-ranks), where the replicas' collectives or pipelines are not alike on every node:
 * NCCL's double binary tree (a node's NIC moves m or 2m by its place in the trees) and the
 * pipeline sends of replicas that share fabric links (a tapered fat tree's leaf uplinks, a
 * dragonfly's global links). Equal to the picosecond where the replicas are images of each other;
 * a measured, explained bound where they are not (docs/speed.md). */
#include <inttypes.h>
#include <math.h>

#include "collectives.h"
#include "util.h"

static void on_done(void *ctx, uint64_t arg) {
    (void)arg;
    *(int *)ctx += 1;
}

/* Run calls (n of them) on `nodes` DGX A100 nodes with algo forced (Simple protocol): when the
 * last ends, every call having ended; links, unless NULL: the 16 busiest links after. */
static SimTime run_calls(int nodes, int algo, const CollCall *calls, int n, GArray **links) {
    TopologySpec spec;
    g_autoptr(GError) err = NULL;
    ck_assert_msg(scenario_load_topology("dgx-a100", NULL, &spec, &err), "%s",
                  err ? err->message : "");
    g_autoptr(Topology) topo = topo_new(&spec, nodes, &err);
    ck_assert_ptr_nonnull(topo);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    g_autoptr(Collectives) coll = coll_new(eng, net, topo);
    coll_force(coll, algo, PROTO_SIMPLE);
    int done = 0;
    for (int k = 0; k < n; k++)
        coll_start(coll, &calls[k], on_done, &done, 0);
    SimTime t = engine_run(eng);
    ck_assert_int_eq(done, n);
    if (links)
        *links = net_busiest_links(net, 16);
    topo_spec_clear(&spec);
    return t;
}

/* A tree allreduce of 1 GB over GPU 0 of 4 DGX A100 nodes, in the full form and in the symmetric
 * form for node 0 (COLL_SYMMETRIC, as a deduplicated DP collective runs). NCCL's double
 * binary tree over 4 nodes (trees.cc: tree 0 rooted at node 0 with child 2, whose children are 1
 * and 3; tree 1 its mirror) has node 0 move m each way (the root with one child in tree 0, a leaf
 * in tree 1) and node 2 move 2m (m/2 up and m/2 to each of two children in tree 0, m/2 up as a
 * leaf of tree 1): the collective moves at node 2's NIC's pace, 2m / 25 GB/s. The symmetric form
 * gave node 0 alone and half that, and dedup chose and timed the tree by it. */
START_TEST(test_tree_symmetric_form) {
    const double m = 1e9;
    const int members[4] = {0, 8, 16, 24};
    SimTime t[2];
    for (int sym = 0; sym < 2; sym++) {
        CollCall call = {.op = COLL_ALLREDUCE, .members = members, .n = 4, .bytes = m};
        if (sym)
            call.form = COLL_SYMMETRIC; /* rep GPU 0 */
        t[sym] = run_calls(4, ALGO_TREE, &call, 1, NULL);
    }
    ck_assert_msg(t[0] == t[1], "tree: full form %" PRId64 " ps, symmetric form %" PRId64 " ps",
                  t[0], t[1]);
    /* node 2's NIC: 2m at 25 GB/s (dgx-a100.yaml), plus the latency terms */
    SimTime nic_bound = (SimTime)(2 * m / 25e9 * 1e12);
    ck_assert_msg(t[1] >= nic_bound && t[1] < nic_bound + 200000000,
                  "tree: %" PRId64 " ps against node 2's NIC bound %" PRId64, t[1], nic_bound);
}
END_TEST

/* TP_PEERS (executor.c): the data-parallel allreduces of the 8 TP peers on 2 DGX A100 nodes (GPU
 * k of node 0 with GPU k of node 1, m bytes each), run as 8 calls in the full form and as one call
 * from GPU 0 with 8 copies (stride 1) in the symmetric form for node 0, as a TP representative
 * runs them, end at the same picosecond and leave every link the same bytes. A group with one
 * GPU a node goes by that GPU's own NIC (coll_channels_build), so each NIC moves m each way at
 * 25 GB/s: m / 25 GB/s plus the latency terms; the 16 NIC links (out and in, node 0's in the
 * symmetric form carrying node 1's too) are the busiest, m each. Without the copies only GPU 0's
 * NIC would carry anything. */
START_TEST(test_tp_peers_as_copies) {
    const double m = 1e9;
    int members[8][2];
    CollCall calls[8];
    for (int k = 0; k < 8; k++) {
        members[k][0] = k;
        members[k][1] = 8 + k;
        calls[k] = (CollCall){.op = COLL_ALLREDUCE, .members = members[k], .n = 2, .bytes = m};
    }
    CollCall copies = calls[0];
    copies.form = COLL_SYMMETRIC; /* rep GPU 0 */
    copies.copies = 8;
    copies.stride = 1;
    GArray *links[2];
    SimTime t[2] = {run_calls(2, ALGO_RING, calls, 8, &links[0]),
                    run_calls(2, ALGO_RING, &copies, 1, &links[1])};
    ck_assert_msg(t[0] == t[1], "8 calls %" PRId64 " ps, one with 8 copies %" PRId64 " ps", t[0],
                  t[1]);
    SimTime nic_bound = (SimTime)(m / 25e9 * 1e12);
    ck_assert_msg(t[1] >= nic_bound && t[1] < nic_bound + 100000000,
                  "%" PRId64 " ps against the NICs' bound %" PRId64, t[1], nic_bound);
    /* the 16 busiest links are NIC links, m each: both nodes' in the full form, node 0's (in
     * and out) in the symmetric form */
    for (int c = 0; c < 2; c++) {
        ck_assert_uint_eq(links[c]->len, 16);
        for (guint i = 0; i < links[c]->len; i++) {
            const NetLinkStat *l = &g_array_index(links[c], NetLinkStat, i);
            ck_assert_msg(fabs(l->bytes - m) <= 1e-9 * m, "link %d: %.17g bytes", l->link,
                          l->bytes);
        }
    }
    g_array_unref(links[0]);
    g_array_unref(links[1]);
}
END_TEST

static void assert_equal_modes(const char *file, const char *const *sets) {
    g_autoptr(Scenario) sc = load_ok(file, sets);
    g_autoptr(SimRun) one = run_ok(sc, 1);
    g_autoptr(SimRun) all = run_ok(sc, 0);
    ck_assert_int_lt(sim_summary(one)->ranks_simulated, sim_summary(all)->ranks_simulated);
    ck_assert_msg(sim_summary(one)->iteration == sim_summary(all)->iteration,
                  "%s: deduplicated %" PRId64 " ps, all ranks %" PRId64 " ps", file,
                  sim_summary(one)->iteration, sim_summary(all)->iteration);
    ck_assert_int_eq(sim_summary(one)->critical.exposed, sim_summary(all)->critical.exposed);
    assert_same_inventory(one, all);
}

/* The Megatron-LM validation scenarios (DGX A100, ZeRO 0, DP over nodes), on 4 to 32 nodes so
 * that every rank runs in a second: their DP allreduce is over at least 4 nodes, where the tree
 * applies. Before, dedup chose the tree by node 0's load and was 0.4% (1.7b) to 3.3% (39b) fast;
 * 146b (PP 8 across leaves of the rail-optimised fat tree) was 0.3% slow. */
START_TEST(test_megatron_dedup_matches_all_ranks) {
    const char *n4[] = {"nodes=4", NULL};
    const char *n4_128[] = {"nodes=4", "training.global_batch=128", NULL};
    const char *n4_64[] = {"nodes=4", "training.global_batch=64", NULL};
    const char *n8_32[] = {"nodes=8", "training.global_batch=32", NULL};
    const char *n16_32[] = {"nodes=16", "training.global_batch=32", NULL};
    const char *n32_64[] = {"nodes=32", "training.global_batch=64", NULL};
    struct {
        const char *file;
        const char *const *sets;
    } cases[] = {
        {"validation/megatron_1.7b.yaml", n4},     {"validation/megatron_3.6b.yaml", n4_128},
        {"validation/megatron_7.5b.yaml", n4_64},  {"validation/megatron_18b.yaml", n4_64},
        {"validation/megatron_39b.yaml", n8_32},   {"validation/megatron_76b.yaml", n16_32},
        {"validation/megatron_146b.yaml", n32_64},
    };
    for (size_t c = 0; c < G_N_ELEMENTS(cases); c++)
        assert_equal_modes(cases[c].file, cases[c].sets);
}
END_TEST

/* Pipeline stages on different nodes, several DP replicas whose stage-to-stage sends share
 * fabric links, the replicas images of each other there: dedup's send carries the other
 * replicas' copies (a CollCall's copies, COLL_IMAGES) and equals simulating all.
 * - DGX A100, TP 8 x PP 2 x DP 4 on 8 nodes, 4 nodes per leaf and a 4:1 taper: stage 0's nodes
 *   on one leaf of each rail, stage 1's on the next, so the 4 replicas' sends share each rail's
 *   leaf uplink (25 GB/s). One replica alone went 3.2% fast.
 * - Frontier, 1T_full_frontier's layout (TP 8 x PP 32), where every replica crosses a dragonfly
 *   group boundary at the same stage boundary: on 256 nodes (DP 8) with one global link per
 *   group pair, which every crossing shares; on 64 nodes (DP 2) in 16-node groups of 4 switches
 *   with the usual 4 global links, where the two replicas' crossings come out alike. One replica
 *   alone went 17.5% and 0.7% fast. With 4 global links picked per GPU pair on 256 nodes (128-node
 *   groups) the replicas are not alike and dedup is 1.0% slow (docs/speed.md); not tested here. */
START_TEST(test_pipeline_dedup_matches_all_ranks) {
    const char *dgx[] = {"nodes=8", "training.global_batch=64", "topology.fabric.nodes_per_leaf=4",
                         "topology.fabric.taper=4", NULL};
    assert_equal_modes("validation/megatron_39b.yaml", dgx);
    const char *fr16[] = {"nodes=64", "topology.fabric.nodes_per_group=16",
                          "topology.fabric.switches_per_group=4", NULL};
    assert_equal_modes("1T_full_frontier.yaml", fr16);
    const char *fr256[] = {"nodes=256", "topology.fabric.global_links=1", NULL};
    assert_equal_modes("1T_full_frontier.yaml", fr256);
}
END_TEST

/* UNEVEN COPIES (coll_streams.c): a deduplicated send counts as uneven where its replicas' copies
 * would not keep one pace on the fabric, and the report says so (sim.uneven_copy_sends).
 * - Closed form: megatron_39b (TP 8 x PP 2 x DP 4 on 8 DGX A100 nodes, stage 0 on nodes 0-3 and
 *   stage 1 on nodes 4-7) with 6 nodes per leaf and a taper of 12. TP rank 0 stands for its
 *   group (TP_PEERS in executor.c): each of its 2 sends (forward and back) carries 8 TP peers x
 *   4 replicas = 32 copies. The replicas 0 and 1 (nodes 0, 1 <-> 4, 5) stay on leaf 0 and go
 *   at their NIC's 25 GB/s; replicas 2 and 3 (nodes 2, 3 <-> 6, 7) share their rail's leaf
 *   uplink of 6 x 25 / 12 = 12.5 GB/s, 6.25 GB/s each: both sends uneven, pace ratio 25 / 6.25
 *   = 4 exactly. The iteration comes out the same as --all-ranks' here, but
 *   the critical rank's exposed communication does not (run as DeepSpeed's: 1.3468 s
 *   deduplicated, 1.2236 s with every rank): uneven means "may be overstated", which the report
 *   says.
 * - The three layouts of test_pipeline_dedup_matches_all_ranks, where the copies are images:
 *   every send counted (2 on the DGX; 31 stage boundaries x 8 x 2 = 496 on Frontier, where
 *   every TP rank is simulated), none uneven.
 * - 1T_full_frontier's layout on 256 nodes with Frontier's 4 global links per group pair picked
 *   per GPU pair: only stage 15 -> 16 (nodes 120-127 -> 128-135) crosses the two 128-node
 *   groups, so at most its 16 sends are uneven; they all are, the 8 copies of each spread over
 *   the 4 links unevenly (ratio 4: a copy alone at its NIC's 25 GB/s against 4 on one global
 *   link), and dedup comes out slower than --all-ranks (60.045 s against 59.422 s). */
/* One run's summary; the scenario and run are kept (a run reads its scenario) in *sc and *run. */
static const SimSummary *summary_ok(Scenario **sc, SimRun **run, const char *file,
                                    const char *const *sets, int dedup) {
    *sc = load_ok(file, sets);
    *run = run_ok(*sc, dedup);
    return sim_summary(*run);
}

static void release(Scenario *sc, SimRun *run) {
    sim_run_free(run);
    scenario_free(sc);
}

START_TEST(test_uneven_copies) {
    Scenario *c1, *c2;
    SimRun *r1, *r2;
    const char *leaf6[] = {"nodes=8",
                           "training.global_batch=64",
                           "topology.fabric.nodes_per_leaf=6",
                           "topology.fabric.taper=12",
                           "training.framework=deepspeed",
                           "parallel.pipeline_scatter_gather=false", /* Megatron-LM's */
                           NULL};
    const SimSummary *s = summary_ok(&c1, &r1, "validation/megatron_39b.yaml", leaf6, 1);
    ck_assert_int_eq(s->copy_sends, 2);
    ck_assert_int_eq(s->uneven_sends, 2);
    ck_assert_msg(s->copy_pace_ratio == 4.0, "pace ratio %.17g", s->copy_pace_ratio);
    const SimSummary *all = summary_ok(&c2, &r2, "validation/megatron_39b.yaml", leaf6, 0);
    ck_assert_int_eq(s->iteration, all->iteration);
    ck_assert_msg(s->critical.exposed > all->critical.exposed,
                  "exposed: deduplicated %" PRId64 " ps, all ranks %" PRId64, s->critical.exposed,
                  all->critical.exposed);
    release(c1, r1);
    release(c2, r2);

    const char *dgx[] = {"nodes=8", "training.global_batch=64", "topology.fabric.nodes_per_leaf=4",
                         "topology.fabric.taper=4", NULL};
    const char *fr16[] = {"nodes=64", "topology.fabric.nodes_per_group=16",
                          "topology.fabric.switches_per_group=4", NULL};
    const char *fr256[] = {"nodes=256", "topology.fabric.global_links=1", NULL};
    struct {
        const char *file;
        const char *const *sets;
        int sends;
    } even[] = {{"validation/megatron_39b.yaml", dgx, 2},
                {"1T_full_frontier.yaml", fr16, 496},
                {"1T_full_frontier.yaml", fr256, 496}};
    for (size_t i = 0; i < G_N_ELEMENTS(even); i++) {
        s = summary_ok(&c1, &r1, even[i].file, even[i].sets, 1);
        ck_assert_int_eq(s->copy_sends, even[i].sends);
        ck_assert_int_eq(s->uneven_sends, 0);
        ck_assert(s->copy_pace_ratio == 1.0);
        release(c1, r1);
    }

    const char *n256[] = {"nodes=256", NULL};
    s = summary_ok(&c1, &r1, "1T_full_frontier.yaml", n256, 1);
    all = summary_ok(&c2, &r2, "1T_full_frontier.yaml", n256, 0);
    ck_assert_int_eq(s->copy_sends, 496);
    ck_assert_int_eq(s->uneven_sends, 16);
    ck_assert_msg(s->copy_pace_ratio == 4.0, "pace ratio %.17g", s->copy_pace_ratio);
    ck_assert_int_eq(all->copy_sends, 0); /* nothing deduplicated: nothing to count */
    ck_assert_int_eq(all->uneven_sends, 0);
    ck_assert_msg(s->iteration > all->iteration, "deduplicated %" PRId64 " ps, all ranks %" PRId64,
                  s->iteration, all->iteration);
    release(c1, r1);
    release(c2, r2);
}
END_TEST

/* EXACT REPRESENTATIVES (sim/run/sim.c). By default (sim.dedup_replicas true) a run whose
 * deduplicated sends turn out uneven is made again with every rank, so its figures are
 * --all-ranks' to the picosecond, exposed communication included (the 39B case above, whose
 * deduplicated exposed time is overstated), and its summary keeps the trial's counts. A layout
 * whose copies are images stays deduplicated, and `estimate` keeps the deduplicated figures. */
START_TEST(test_exact_by_default) {
    Scenario *c1, *c2;
    SimRun *r1, *r2;
    const char *leaf6[] = {"nodes=8",
                           "training.global_batch=64",
                           "topology.fabric.nodes_per_leaf=6",
                           "topology.fabric.taper=12",
                           "training.framework=deepspeed",
                           "parallel.pipeline_scatter_gather=false", /* Megatron-LM's */
                           NULL};
    const SimSummary *s = summary_ok(&c1, &r1, "validation/megatron_39b.yaml", leaf6, -1);
    const SimSummary *all = summary_ok(&c2, &r2, "validation/megatron_39b.yaml", leaf6, 0);
    ck_assert(s->dedup_rerun);
    ck_assert_int_eq(s->ranks_simulated, c1->gpus);
    ck_assert_int_eq(s->trial_copy_sends, 2);
    ck_assert_int_eq(s->trial_uneven_sends, 2);
    ck_assert_msg(s->trial_pace_ratio == 4.0, "pace ratio %.17g", s->trial_pace_ratio);
    ck_assert(s->trial_events > 0 && s->trial_events < s->events);
    ck_assert_int_eq(s->uneven_sends, 0); /* the figures' run has no copies */
    ck_assert_int_eq(s->iteration, all->iteration);
    ck_assert_int_eq(s->critical.exposed, all->critical.exposed);
    ck_assert_int_eq(s->critical.comm, all->critical.comm);
    ck_assert(!all->dedup_rerun && all->trial_events == 0);
    release(c1, r1);
    release(c2, r2);

    const char *estimate[] = {"nodes=8",
                              "training.global_batch=64",
                              "topology.fabric.nodes_per_leaf=6",
                              "topology.fabric.taper=12",
                              "sim.dedup_replicas=estimate",
                              NULL};
    s = summary_ok(&c1, &r1, "validation/megatron_39b.yaml", estimate, -1);
    ck_assert(!s->dedup_rerun);
    ck_assert_int_lt(s->ranks_simulated, c1->gpus);
    ck_assert_int_eq(s->uneven_sends, 2);
    release(c1, r1);

    const char *dgx[] = {"nodes=8", "training.global_batch=64", "topology.fabric.nodes_per_leaf=4",
                         "topology.fabric.taper=4", NULL};
    s = summary_ok(&c1, &r1, "validation/megatron_39b.yaml", dgx, -1);
    all = summary_ok(&c2, &r2, "validation/megatron_39b.yaml", dgx, DEDUP_ESTIMATE);
    ck_assert(!s->dedup_rerun);
    ck_assert_int_eq(s->ranks_simulated, all->ranks_simulated);
    ck_assert_int_lt(s->ranks_simulated, c1->gpus);
    ck_assert_int_eq(s->events, all->events);
    ck_assert_int_eq(s->iteration, all->iteration);
    release(c1, r1);
    release(c2, r2);
}
END_TEST

int main(void) {
    Suite *s = suite_create("dedup");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_tree_symmetric_form);
    tcase_add_test(tc, test_tp_peers_as_copies);
    tcase_add_test(tc, test_megatron_dedup_matches_all_ranks);
    tcase_add_test(tc, test_pipeline_dedup_matches_all_ranks);
    tcase_add_test(tc, test_uneven_copies);
    tcase_add_test(tc, test_exact_by_default);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
