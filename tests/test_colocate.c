/* Several jobs on one machine (colocate.c): the placement policies' nodes written out by hand,
 * the closed form of two jobs sharing one link, the machine's limits, and determinism.
 *
 * The closed form: tests/colocate/tree.yaml is a fat tree of 4 one-GPU nodes, two to a leaf,
 * whose leaf uplinks carry W = 25 GB/s (one NIC's worth) and whose paths have no latency.
 * tests/colocate/pp2.yaml is two pipeline stages with one micro-batch: stage 0 sends B = b s h x 2
 * bytes of activations to stage 1, which later sends B bytes of gradients back, each send the
 * only traffic in flight. Placed `spread`, job 1 on nodes 0 and 2 and job 2 on nodes 1 and 3, both
 * jobs' sends cross leaf 0's uplink and leaf 1's downlink (forward) and leaf 1's uplink and leaf
 * 0's downlink (backward) at the same moments: alone each send takes B / W, together the two
 * share each link max-min fairly, W / 2 each, so 2B / W. Everything else is the same, so each
 * job's iteration is alone + 2 x B / W together, and alone it is what `sim` gives the scenario on
 * its own nodes 0 and 1 (the same bottleneck, the NIC, and no latency). */
#include <string.h>

#include "colocate.h"
#include "report_colocate.h"
#include "util.h"

static char *test_file(const char *name) {
    return g_build_filename(SIM_SOURCE_DIR, "tests", "colocate", name, NULL);
}

static Scenario *load_file(const char *path) {
    g_autoptr(GError) err = NULL;
    Scenario *sc = scenario_load(path, NULL, &err);
    ck_assert_msg(sc, "%s: %s", path, err ? err->message : "");
    return sc;
}

static Colocation *colocate_ok(const Scenario *const *jobs, const char *const *paths, int n,
                               ColocatePolicy p, guint32 seed) {
    g_autoptr(GError) err = NULL;
    Colocation *c = colocate_run(jobs, paths, n, p, seed, &err);
    ck_assert_msg(c, "colocate: %s", err ? err->message : "");
    return c;
}

START_TEST(test_two_jobs_share_one_link) {
    g_autofree char *path = test_file("pp2.yaml");
    g_autoptr(Scenario) a = load_file(path);
    g_autoptr(Scenario) b = load_file(path);
    const Scenario *jobs[2] = {a, b};
    const char *paths[2] = {path, path};
    g_autoptr(Colocation) c = colocate_ok(jobs, paths, 2, COLOCATE_SPREAD, 1);
    double bytes = (double)a->micro_batch * a->seq_len * a->model.hidden * 2; /* fp16 */
    ck_assert_double_eq(bytes, 786432);
    SimTime alone_send = sim_time_from_ps(bytes / 25e9 * 1e12); /* B / W: 31.45728 us */
    g_autoptr(SimRun) plain = run_ok(a, DEDUP_OFF);
    SimTime plain_it = sim_summary(plain)->iteration;
    for (int j = 0; j < 2; j++) {
        const ColocateJob *jb = colocate_job(c, j);
        ck_assert_int_eq(jb->nodes, 2);
        ck_assert_int_eq(jb->node[0], j);
        ck_assert_int_eq(jb->node[1], j + 2);
        /* alone: what sim gives it, its two sends B / W each, all of its communication */
        ck_assert_msg(jb->alone == plain_it,
                      "job %d alone %" G_GINT64_FORMAT " ps, sim %" G_GINT64_FORMAT " ps", j,
                      jb->alone, plain_it);
        ck_assert_msg(llabs(jb->alone_times.comm - 2 * alone_send) <= 2,
                      "alone comm %" G_GINT64_FORMAT " ps, want 2 B/W = %" G_GINT64_FORMAT,
                      jb->alone_times.comm, 2 * alone_send);
        /* together: each send at W / 2, so each takes 2B / W, B / W longer, twice */
        SimTime want = jb->alone + 2 * alone_send;
        ck_assert_msg(llabs(jb->together - want) <= 2,
                      "job %d together %" G_GINT64_FORMAT
                      " ps, want alone + 2 B/W = %" G_GINT64_FORMAT,
                      j, jb->together, want);
        ck_assert_msg(llabs(jb->together_times.comm - 4 * alone_send) <= 4,
                      "together comm %" G_GINT64_FORMAT " ps, want 4 B/W", jb->together_times.comm);
        ck_assert_int_eq(jb->shared_links, 4);
    }
    ck_assert_int_eq(colocate_window(c), colocate_job(c, 0)->together);
    /* the four leaf links, each B of each job, busy 2B / W */
    ck_assert_uint_eq(colocate_links(c), 4);
    const Topology *topo = colocate_topology(c);
    for (guint i = 0; i < colocate_links(c); i++) {
        const ColocateLink *l = colocate_link(c, i);
        LinkKind k = topo_link_kind(topo, l->link);
        ck_assert(k == LINK_LEAF_UP || k == LINK_LEAF_DOWN);
        ck_assert_double_eq(l->capacity, 25e9);
        ck_assert_int_eq(l->jobs, 2);
        ck_assert_double_eq(l->bytes[0], bytes);
        ck_assert_double_eq(l->bytes[1], bytes);
        ck_assert_double_eq_tol(l->busy_s, 2 * bytes / 25e9, 1e-18);
    }
}
END_TEST

/* Packed, job 1 has leaf 0 (nodes 0, 1) and job 2 leaf 1 (nodes 2, 3): their sends stay under
 * their leaves, they never meet, and together is alone to the picosecond. */
START_TEST(test_apart_no_meeting) {
    g_autofree char *path = test_file("pp2.yaml");
    g_autoptr(Scenario) a = load_file(path);
    const Scenario *jobs[2] = {a, a};
    const char *paths[2] = {path, path};
    g_autoptr(Colocation) c = colocate_ok(jobs, paths, 2, COLOCATE_PACKED, 1);
    ck_assert_uint_eq(colocate_links(c), 0);
    for (int j = 0; j < 2; j++) {
        const ColocateJob *jb = colocate_job(c, j);
        ck_assert_int_eq(jb->node[0], 2 * j);
        ck_assert_int_eq(jb->node[1], 2 * j + 1);
        ck_assert_int_eq(jb->together, jb->alone);
        ck_assert_int_eq(jb->shared_links, 0);
    }
}
END_TEST

static void assert_nodes(int *const *node, int j, const int *want, int n) {
    for (int k = 0; k < n; k++)
        ck_assert_msg(node[j][k] == want[k], "job %d node %d: %d, want %d", j, k, node[j][k],
                      want[k]);
}

static void free_nodes(int **node, int n) {
    for (int j = 0; j < n; j++)
        g_free(node[j]);
}

/* Jobs of 2, 3 and 1 nodes. */
static const int job_nodes[3] = {2, 3, 1};

START_TEST(test_placements) {
    TopologySpec flat = {.name = "flat", .gpus_per_node = 8, .nics = 1, .fabric = FABRIC_FLAT};
    int *node[3];
    g_autoptr(GError) err = NULL;
    /* packed: job after job from node 0 */
    ck_assert(colocate_place(&flat, 0, job_nodes, 3, COLOCATE_PACKED, 1, node, &err));
    assert_nodes(node, 0, (int[]){0, 1}, 2);
    assert_nodes(node, 1, (int[]){2, 3, 4}, 3);
    assert_nodes(node, 2, (int[]){5}, 1);
    free_nodes(node, 3);
    /* spread without groups: one node each in turn, on consecutive nodes: 0 1 2 | 3 4 | 5 */
    ck_assert(colocate_place(&flat, 0, job_nodes, 3, COLOCATE_SPREAD, 1, node, &err));
    assert_nodes(node, 0, (int[]){0, 3}, 2);
    assert_nodes(node, 1, (int[]){1, 4, 5}, 3);
    assert_nodes(node, 2, (int[]){2}, 1);
    free_nodes(node, 3);
    /* spread on a dragonfly of 4 groups of 4 nodes: nodes in the order 0 4 8 12 1 5 9 13 ...,
     * dealt j0 j1 j2 j0 j1 j1: j0 {0, 12}, j1 {4, 1, 5}, j2 {8} */
    TopologySpec df = {.name = "df",
                       .gpus_per_node = 8,
                       .nics = 1,
                       .fabric = FABRIC_DRAGONFLY,
                       .groups = 4,
                       .nodes_per_group = 4};
    ck_assert_int_eq(colocate_machine_nodes(&df), 16);
    ck_assert(colocate_place(&df, 16, job_nodes, 3, COLOCATE_SPREAD, 1, node, &err));
    assert_nodes(node, 0, (int[]){0, 12}, 2);
    assert_nodes(node, 1, (int[]){1, 4, 5}, 3);
    assert_nodes(node, 2, (int[]){8}, 1);
    free_nodes(node, 3);
    /* a last group not full (fabric.nodes 14): nodes 14 and 15 are never used */
    int big[2] = {7, 7};
    int *two[2];
    ck_assert(colocate_place(&df, 14, big, 2, COLOCATE_SPREAD, 1, two, &err));
    for (int j = 0; j < 2; j++)
        for (int k = 0; k < 7; k++)
            ck_assert_int_lt(two[j][k], 14);
    free_nodes(two, 2);
    /* random: distinct nodes of the machine, each job's ascending, the same for the same seed */
    int *r1[3], *r2[3], *r3[3];
    ck_assert(colocate_place(&df, 16, job_nodes, 3, COLOCATE_RANDOM, 7, r1, &err));
    ck_assert(colocate_place(&df, 16, job_nodes, 3, COLOCATE_RANDOM, 7, r2, &err));
    ck_assert(colocate_place(&df, 16, job_nodes, 3, COLOCATE_RANDOM, 8, r3, &err));
    gboolean seen[16] = {0}, differs = FALSE;
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < job_nodes[j]; k++) {
            int v = r1[j][k];
            ck_assert(v >= 0 && v < 16 && !seen[v]);
            seen[v] = TRUE;
            ck_assert(k == 0 || r1[j][k - 1] < v);
            ck_assert_int_eq(v, r2[j][k]);
            differs |= v != r3[j][k];
        }
    ck_assert_msg(differs, "seeds 7 and 8 drew the same nodes");
    free_nodes(r1, 3);
    free_nodes(r2, 3);
    free_nodes(r3, 3);
}
END_TEST

START_TEST(test_too_many_nodes) {
    TopologySpec flat = {.name = "small", .gpus_per_node = 8, .nics = 1, .fabric = FABRIC_FLAT};
    int *node[3];
    g_autoptr(GError) err = NULL;
    ck_assert(!colocate_place(&flat, 5, job_nodes, 3, COLOCATE_PACKED, 1, node, &err));
    ck_assert(g_error_matches(err, CONF_ERROR, CONF_ERROR_INVALID));
    ck_assert_msg(strstr(err->message, "machine small has 5 nodes; the 3 jobs need 6"), "%s",
                  err->message);
    /* three two-node jobs on the four-node tree: the message points at its fabric.nodes */
    g_clear_error(&err);
    g_autofree char *path = test_file("pp2.yaml");
    g_autoptr(Scenario) a = load_file(path);
    const Scenario *jobs[3] = {a, a, a};
    const char *paths[3] = {path, path, path};
    ck_assert(!colocate_run(jobs, paths, 3, COLOCATE_PACKED, 1, &err));
    ck_assert(sim_error_is_input(err));
    ck_assert_msg(strstr(err->message, "tree.yaml:") && strstr(err->message, "has 4 nodes"), "%s",
                  err->message);
}
END_TEST

START_TEST(test_different_machines) {
    g_autofree char *path = test_file("pp2.yaml");
    g_autoptr(Scenario) a = load_file(path);
    g_autoptr(Scenario) b = load_ok("1.3B_zero1.yaml", NULL);
    const Scenario *jobs[2] = {a, b};
    const char *paths[2] = {path, "1.3B_zero1.yaml"};
    g_autoptr(GError) err = NULL;
    ck_assert(!colocate_run(jobs, paths, 2, COLOCATE_PACKED, 1, &err));
    ck_assert(sim_error_is_input(err));
    ck_assert_msg(strstr(err->message, "name different machines (topology colocate-tree and "
                                       "frontier)"),
                  "%s", err->message);
    /* the same topology with another setting of the network */
    g_clear_error(&err);
    const char *sets[] = {"sim.contention=false", NULL};
    g_autoptr(Scenario) c = load_ok("1.3B_zero1.yaml", sets);
    const Scenario *two[2] = {b, c};
    const char *names[2] = {"b", "c"};
    ck_assert(!colocate_run(two, names, 2, COLOCATE_PACKED, 1, &err));
    ck_assert_msg(strstr(err->message, "b and c differ in sim.contention"), "%s", err->message);
}
END_TEST

static char *report_of(const Colocation *c) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    report_colocate_write(f, c, REPORT_JSON, FALSE);
    fclose(f);
    return text;
}

/* Two shipped jobs on Frontier: alone packed is `sim` on their own nodes; two runs give the same
 * bytes; the links' together bytes (busy x capacity) are the sum of the jobs' alone. */
START_TEST(test_shipped_jobs) {
    g_autoptr(Scenario) a = load_ok("1.3B_zero1.yaml", NULL);
    g_autoptr(Scenario) b = load_ok("1.3B_zero1.yaml", NULL);
    const Scenario *jobs[2] = {a, b};
    const char *paths[2] = {"a", "b"};
    g_autoptr(Colocation) c = colocate_ok(jobs, paths, 2, COLOCATE_PACKED, 1);
    g_autoptr(SimRun) plain = run_ok(a, DEDUP_OFF);
    ck_assert_int_eq(colocate_job(c, 0)->alone, sim_summary(plain)->iteration);
    ck_assert_int_gt(colocate_links(c), 0); /* the two jobs' rings meet on group 0's ports */
    for (guint i = 0; i < colocate_links(c); i++) {
        const ColocateLink *l = colocate_link(c, i);
        double sum = l->bytes[0] + l->bytes[1];
        ck_assert_double_eq_tol(l->busy_s * l->capacity, sum, sum * 1e-12);
        ck_assert(i == 0 || colocate_link(c, i - 1)->busy_s >= l->busy_s);
    }
    g_autoptr(Colocation) again = colocate_ok(jobs, paths, 2, COLOCATE_PACKED, 1);
    g_autofree char *r1 = report_of(c), *r2 = report_of(again);
    ck_assert_str_eq(r1, r2);
}
END_TEST

int main(void) {
    Suite *s = suite_create("colocate");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_two_jobs_share_one_link);
    tcase_add_test(tc, test_apart_no_meeting);
    tcase_add_test(tc, test_placements);
    tcase_add_test(tc, test_too_many_nodes);
    tcase_add_test(tc, test_different_machines);
    tcase_add_test(tc, test_shipped_jobs);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
