/* Bad input: each a clear message with file:line:column where there is one, never a crash. */
#include <glib/gstdio.h>
#include <string.h>

#include "machine_error.h"
#include "scenario_par.h"
#include "util.h"

#define BASE                                                                                       \
    "model: gpt-neox-1.3b\n"                                                                       \
    "topology: frontier\n"                                                                         \
    "nodes: 2\n"

/* Load text as a scenario with sets; expect failure whose message contains every needle. */
static void expect_error(const char *text, const char *const *sets, const char *const *needles) {
    g_autofree char *path = write_temp_yaml(text);
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = scenario_load(path, (char *const *)sets, &err);
    ck_assert_msg(sc == NULL, "expected an error for:\n%s", text);
    ck_assert(err != NULL && err->domain == CONF_ERROR);
    for (const char *const *n = needles; *n; n++) {
        g_autofree char *want = g_strdup_printf(*n, path);
        ck_assert_msg(strstr(err->message, want), "message '%s' lacks '%s'", err->message, want);
    }
    g_unlink(path);
}

START_TEST(test_malformed_yaml) {
    const char *n[] = {"%s:5:", "flow mapping", NULL}; /* where libyaml notices */
    expect_error(BASE "parallel: {tp: 8\ntraining: {}\n", NULL, n);
}
END_TEST

/* An alias used as a key (`*a: 1`, `? *a`): said so, at the alias, not "found a sequence". */
START_TEST(test_alias_key) {
    const char *n[] = {"%s:4:1: the alias *n is used as a key", "write the key out", NULL};
    expect_error("model: gpt-neox-1.3b\ntopology: frontier\nx: &n nodes\n*n: 2\n", NULL, n);
    const char *n2[] = {"%s:4:3: the alias *n is used as a key", NULL};
    expect_error("model: gpt-neox-1.3b\ntopology: frontier\nx: &n nodes\n? *n\n: 2\n", NULL, n2);
    const char *n3[] = {"%s:5:12: the alias *t is used as a key", NULL};
    expect_error(BASE "parallel: &t {tp: 8}\ntraining: {*t: 1}\n", NULL, n3);
}
END_TEST

START_TEST(test_unknown_key) {
    const char *n[] = {"%s:5:3:", "unknown key 'tpp'", "did you mean 'tp'", NULL};
    expect_error(BASE "parallel:\n  tpp: 8\ntraining: {}\n", NULL, n);
    const char *n2[] = {"%s:4:1:", "'trainig'", "did you mean 'training'", NULL};
    expect_error(BASE "trainig: {}\nparallel: {}\n", NULL, n2);
    const char *n3[] = {"--set model.hiden=4", "did you mean 'hidden'", NULL};
    const char *sets[] = {"model.hiden=4", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n3);
}
END_TEST

/* The parallel block accepts exactly its parallelisms' keys (scenario_par.h), each owned by one
 * entry and read by it: a key no entry read would pass the key check and be ignored, so every key
 * given a value no key accepts must fail. The unknown-key message lists them entry by entry. */
START_TEST(test_parallel_keys_by_parallelism) {
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GString) all = g_string_new(NULL);
    for (const ScenarioPar *const *p = scenario_pars; *p; p++) {
        ck_assert_msg(!(*p)->size || (*p)->label, "%s: a size without a label", (*p)->name);
        for (const char *const *k = (*p)->keys; *k; k++) {
            ck_assert_msg(!g_hash_table_contains(seen, *k), "parallel.%s owned twice", *k);
            g_hash_table_add(seen, (gpointer)*k);
            g_string_append_printf(all, "%s%s", all->len ? ", " : "", *k);
            g_autofree char *set = g_strdup_printf("parallel.%s=x!", *k);
            const char *sets[] = {set, NULL};
            const char *n[] = {set, NULL};
            expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n);
        }
    }
    ck_assert_uint_eq(g_hash_table_size(seen), 22);
    g_autofree char *valid = g_strdup_printf("(valid: %s)", all->str);
    ck_assert(g_str_has_prefix(valid, "(valid: tp, sequence_parallel, tp_comm_overlap, cp, "));
    const char *n[] = {"%s:5:3:", valid, NULL};
    expect_error(BASE "parallel:\n  tpp: 8\ntraining: {}\n", NULL, n);
}
END_TEST

START_TEST(test_wrong_unit) {
    const char *n[] = {"--set topology.node.nics.bandwidth=25GB", "rate such as 25GB/s", NULL};
    const char *sets[] = {"topology.node.nics.bandwidth=25GB", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n);
    const char *n2[] = {"%s:5:16:", "bucket_size", "size", NULL};
    expect_error(BASE "parallel:\n  bucket_size: 25MB/s\ntraining: {}\n", NULL, n2);
}
END_TEST

START_TEST(test_negative_size) {
    const char *n[] = {"%s:5:16:", "cannot be negative", NULL};
    expect_error(BASE "parallel:\n  bucket_size: -25MB\ntraining: {}\n", NULL, n);
    const char *n2[] = {"%s:5:16:", "micro_batch", "between 1 and", NULL};
    expect_error(BASE "training:\n  micro_batch: -4\nparallel: {}\n", NULL, n2);
}
END_TEST

/* A framework without the ZeRO stage asked for (Megatron-LM's optim_grads); an unknown framework
 * name; a negative prefetch or persistence threshold. */
START_TEST(test_framework_choices) {
    const char *n[] = {"%s:5:9:", "megatron has no ZeRO stage 2", "distributed optimizer",
                       "Megatron-FSDP", NULL};
    expect_error(BASE "parallel:\n  zero: 2\ntraining:\n  framework: megatron\n", NULL, n);
    const char *n2[] = {"%s:6:14:", "deepspeed", "pytorch", NULL};
    expect_error(BASE "parallel: {}\ntraining:\n  framework: jax\n", NULL, n2);
    const char *n3[] = {"%s:5:25:", "prefetch_bucket_size", NULL};
    expect_error(BASE "parallel:\n  prefetch_bucket_size: -1\ntraining: {}\n", NULL, n3);
    const char *n4[] = {"%s:5:9:", "pytorch has no ZeRO stage 1", "FSDP", NULL};
    expect_error(BASE "parallel:\n  zero: 1\ntraining:\n  framework: pytorch\n", NULL, n4);
    const char *n6[] = {"%s:5:26:", "persistence_threshold", NULL};
    expect_error(BASE "parallel:\n  persistence_threshold: -5\ntraining: {}\n", NULL, n6);
}
END_TEST

START_TEST(test_tp_not_dividing_heads) {
    /* the study: 125M cannot run with pure TP = 8, 12 heads */
    const char *n[] = {"%s:5:7:", "tensor parallelism 8 does not divide the 12 attention heads",
                       NULL};
    expect_error("model: gpt-neox-125m\ntopology: frontier\nnodes: 1\nparallel:\n  tp: 8\n"
                 "training: {}\n",
                 NULL, n);
}
END_TEST

START_TEST(test_ranks_mismatch) {
    const char *n[] = {"%s:7:7:", "TP 8 x PP 1 x DP 4 = 32", "16 GPUs", NULL};
    expect_error(BASE "parallel:\n  tp: 8\n  pp: 1\n  dp: 4\ntraining: {}\n", NULL, n);
    const char *n2[] = {"TP 3 x PP 1 = 3 does not divide the 16 GPUs", NULL};
    const char *sets[] = {"parallel.tp=3", "model.heads=12", "model.hidden=768",
                          "model.ffn_hidden=3072", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n2);
}
END_TEST

START_TEST(test_batch_not_divisible) {
    const char *n[] = {"%s:6:17:", "global batch 100", "micro_batch 4 x DP 16 = 64", NULL};
    expect_error(BASE "training:\n  micro_batch: 4\n  global_batch: 100\nparallel: {}\n", NULL, n);
}
END_TEST

START_TEST(test_missing_model) {
    const char *n[] = {"%s:1:8:", "model 'gpt-neox-99b' not found", "gpt-neox-1.3b", NULL};
    expect_error("model: gpt-neox-99b\ntopology: frontier\nnodes: 1\nparallel: {}\ntraining: {}\n",
                 NULL, n);
    const char *n2[] = {"--set topology=summit", "topology 'summit' not found", NULL};
    const char *sets[] = {"topology=summit", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n2);
}
END_TEST

START_TEST(test_missing_file_and_bad_set) {
    g_autoptr(GError) err = NULL;
    ck_assert_ptr_null(scenario_load("/nonexistent/s.yaml", NULL, &err));
    ck_assert(strstr(err->message, "/nonexistent/s.yaml: cannot read"));
    const char *n[] = {"expected KEY=VALUE", NULL};
    const char *sets[] = {"nodes", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n);
    const char *n2[] = {"%s:1:1:", "mapping", NULL};
    expect_error("- just\n- a list\n", NULL, n2);
    const char *n3[] = {"%s:1:1:", "empty", NULL};
    expect_error("", NULL, n3);
    const char *n4[] = {"%s:3:1:", "appears twice", NULL};
    expect_error("model: gpt-neox-1.3b\nnodes: 1\nnodes: 2\n", NULL, n4);
}
END_TEST

/* A job larger than the machine names the scenario's nodes key (or the --set), not the
 * topology file's. */
START_TEST(test_job_larger_than_machine) {
    const char *n1[] = {"%s:3:8: 12500 nodes asked for; topology frontier has 9408 (fabric.nodes)",
                        NULL};
    expect_error("model: gpt-neox-1.3b\ntopology: frontier\nnodes: 12500\nparallel: {}\n"
                 "training: {}\n",
                 NULL, n1);
    const char *n2[] = {"--set nodes=9409: 9409 nodes asked for", NULL};
    const char *sets[] = {"nodes=9409", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n2);
}
END_TEST

START_TEST(test_layers_not_dividing_pp) {
    const char *n[] = {"pipeline parallelism 5 does not divide the 24 layers", NULL};
    const char *sets[] = {"parallel.pp=5", "nodes=5", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n);
}
END_TEST

/* Megatron-LM's interleaved-schedule rules, each refused where it is written. */
START_TEST(test_interleaved_rules) {
    const char *n1[] = {"%s:7:19:", "16 model chunks do not divide the 24 layers", NULL};
    expect_error(BASE "parallel:\n  pp: 4\n  schedule: interleaved\n  virtual_stages: 4\n"
                      "training:\n  grad_accum: 8\n",
                 NULL, n1);
    const char *n2[] = {"%s:9:15:", "micro-batches per iteration (6)", "multiple of pp 4", NULL};
    expect_error(BASE "parallel:\n  pp: 4\n  schedule: interleaved\n  virtual_stages: 2\n"
                      "training:\n  grad_accum: 6\n",
                 NULL, n2);
    const char *n3[] = {"%s:6:13:", "needs pipeline parallelism (pp >= 2)", NULL};
    expect_error(BASE "parallel:\n  pp: 1\n  schedule: interleaved\ntraining: {}\n", NULL, n3);
    const char *n4[] = {"%s:6:19:", "virtual_stages 2 needs schedule: interleaved", NULL};
    expect_error(BASE "parallel:\n  pp: 4\n  virtual_stages: 2\ntraining: {}\n", NULL, n4);
    const char *n5[] = {"%s:10:27:", "synchronize_each_layer is GPT-NeoX's", NULL};
    expect_error(BASE "parallel:\n  pp: 4\n  schedule: interleaved\ntraining:\n"
                      "  grad_accum: 8\n  recompute: full\n  synchronize_each_layer: true\n",
                 NULL, n5);
}
END_TEST

/* ZB-H1's rules: a pipeline to fill (pp >= 2), one model chunk per stage. */
START_TEST(test_zero_bubble_rules) {
    const char *n1[] = {"%s:6:13:", "the zb-h1 schedule needs pipeline parallelism (pp >= 2)",
                        NULL};
    expect_error(BASE "parallel:\n  pp: 1\n  schedule: zb-h1\ntraining: {}\n", NULL, n1);
    const char *n2[] = {"%s:7:19:", "virtual_stages 2 needs schedule: interleaved",
                        "the zb-h1 schedule runs one model chunk", NULL};
    expect_error(BASE "parallel:\n  pp: 4\n  schedule: zb-h1\n  virtual_stages: 2\n"
                      "training: {}\n",
                 NULL, n2);
}
END_TEST

/* ZB-V's: two chunks in a V (virtual_stages 2 and no other), a pipeline, 2 pp chunks dividing the
 * layers, no GPT-NeoX per-layer synchronisation. */
START_TEST(test_zb_v_rules) {
    const char *n1[] = {"%s:7:19:", "the zb-v schedule runs 2 model chunks per stage in a V",
                        "got 3", NULL};
    expect_error(BASE "parallel:\n  pp: 4\n  schedule: zb-v\n  virtual_stages: 3\n"
                      "training: {}\n",
                 NULL, n1);
    const char *n2[] = {"%s:6:13:", "the zb-v schedule needs pipeline parallelism (pp >= 2)", NULL};
    expect_error(BASE "parallel:\n  pp: 1\n  schedule: zb-v\ntraining: {}\n", NULL, n2);
    const char *n3[] = {"%s:5:7:", "2 x pp 8 = 16 chunks, which do not divide them", NULL};
    expect_error(BASE "parallel:\n  pp: 8\n  schedule: zb-v\ntraining: {}\n", NULL, n3);
    const char *n4[] = {"%s:10:27:", "synchronize_each_layer is GPT-NeoX's", "no zb-v schedule",
                        NULL};
    expect_error(BASE "parallel:\n  pp: 4\n  schedule: zb-v\ntraining:\n"
                      "  grad_accum: 8\n  recompute: full\n  synchronize_each_layer: true\n",
                 NULL, n4);
}
END_TEST

/* Sequence parallelism's rules: the sequence splits evenly over TP; no parallel residual. */
START_TEST(test_sequence_parallel_rules) {
    const char *n1[] = {"%s:6:22:", "splits the 2047 tokens over TP 8", NULL};
    expect_error(BASE "parallel:\n  tp: 8\n  sequence_parallel: true\n"
                      "training:\n  seq_len: 2047\n",
                 NULL, n1);
    const char *n2[] = {"sequence_parallel with gpt-neox-20b's parallel residual", NULL};
    const char *sets[] = {"model=gpt-neox-20b", NULL};
    expect_error(BASE "parallel:\n  tp: 8\n  sequence_parallel: true\ntraining: {}\n", sets, n2);
    const char *n3[] = {"%s:6:20:", "0 (off) or at least 2", NULL};
    expect_error(BASE "parallel:\n  tp: 8\n  tp_comm_overlap: 1\ntraining: {}\n", NULL, n3);
}
END_TEST

/* frontier.yaml with its first `from` replaced by `to`. */
static char *frontier_with(const char *from, const char *to) {
    g_autofree char *src = g_build_filename(SIM_SOURCE_DIR, "topologies", "frontier.yaml", NULL);
    g_autofree char *text = NULL;
    ck_assert(g_file_get_contents(src, &text, NULL, NULL));
    const char *at = strstr(text, from);
    ck_assert_msg(at, "frontier.yaml lacks '%s'", from);
    g_autofree char *head = g_strndup(text, at - text);
    return g_strconcat(head, to, at + strlen(from), NULL);
}

/* A topology's collectives.rings: each ring lists every GPU of the node once; NICs exist. */
static void expect_topology_error(const char *from, const char *to, const char *needle) {
    g_autofree char *joined = frontier_with(from, to);
    g_autofree char *path = write_temp_yaml(joined);
    TopologySpec spec;
    g_autoptr(GError) err = NULL;
    ck_assert_msg(!scenario_load_topology(path, NULL, &spec, &err), "expected an error for %s", to);
    ck_assert_msg(strstr(err->message, needle) && strstr(err->message, path),
                  "message '%s' lacks '%s' or the file", err->message, needle);
    g_unlink(path);
}

/* A topology file that loads or builds (topo_new, for a job of `nodes` nodes) with an error whose
 * message starts with "FILE" followed by `at` (":LINE:COLUMN: ") and contains needle. */
static void expect_machine_error(const char *text, int nodes, const char *at, const char *needle) {
    g_autofree char *path = write_temp_yaml(text);
    TopologySpec spec;
    g_autoptr(GError) err = NULL;
    if (scenario_load_topology(path, NULL, &spec, &err)) {
        Topology *t = topo_new(&spec, nodes, &err);
        ck_assert_msg(!t, "expected an error building %s for %d nodes", path, nodes);
        topo_spec_clear(&spec);
    }
    ck_assert_msg(err, "expected an error for %s", path);
    g_autofree char *prefix = g_strconcat(path, at, NULL);
    ck_assert_msg(g_str_has_prefix(err->message, prefix) && strstr(err->message, needle),
                  "message '%s' lacks the prefix '%s' or '%s'", err->message, prefix, needle);
    g_unlink(path);
}

#define TINY_HEAD                                                                                  \
    "name: tiny\n"                                                                                 \
    "device: mi250x-gcd\n"                                                                         \
    "node:\n"                                                                                      \
    "  gpus: 4\n"                                                                                  \
    "  link: {bandwidth: 50GB/s, latency: 1us}\n"

/* The machine builder's checks (topo_new) name the topology file's key, as the loader's do. */
START_TEST(test_topology_positions) {
    const char *nics = "  nics: {count: 1, attach: [0], bandwidth: 25GB/s, pcie_bandwidth: 50GB/s, "
                       "latency: 0us}\n";
    /* GPUs the links leave apart: node.links */
    expect_machine_error(TINY_HEAD "  links:\n    - [0, 1, 1]\n    - [2, 3, 1]\n", 1,
                         ":7:5: ", "topology tiny: GPU 0 cannot reach GPU 2 within 3 hops");
    /* a link to a GPU the node lacks, or to itself: the entry */
    expect_machine_error(TINY_HEAD "  links:\n    - [0, 1, 1]\n    - [2, 4, 1]\n", 1,
                         ":8:7: ", "link [2, 4, 1] must join two different GPUs in 0..3");
    expect_machine_error(TINY_HEAD "  links:\n    - [3, 3, 1]\n", 1,
                         ":7:7: ", "link [3, 3, 1] must join two different GPUs");
    expect_machine_error(TINY_HEAD "  links:\n    - [0, 1, 0]\n", 1,
                         ":7:7: ", "with at least one link");
    /* a NIC on a GPU the node lacks: the attach entry */
    expect_machine_error(
        TINY_HEAD "  switch: {bandwidth: 100GB/s}\n"
                  "  nics: {count: 2, attach: [0, 4], bandwidth: 25GB/s, pcie_bandwidth: 50GB/s, "
                  "latency: 0us}\n",
        1, ":7:32: ", "NIC 1 hangs off GPU 4, which a 4-GPU node lacks");
    /* no NICs for a job of two nodes: node */
    expect_machine_error(TINY_HEAD "  switch: {bandwidth: 100GB/s}\n", 2,
                         ":4:3: ", "topology tiny has no NICs, so it cannot span 2 nodes");
    /* a job larger than the machine: fabric.nodes, or fabric.groups for a full dragonfly */
    g_autofree char *small = g_strconcat(TINY_HEAD "  switch: {bandwidth: 100GB/s}\n", nics,
                                         "fabric: {kind: flat, latency: 2us, nodes: 2}\n", NULL);
    expect_machine_error(small, 3, ":8:43: ", "topology tiny has 2 nodes; the job asks for 3");
    g_autofree char *df = frontier_with("  nodes: 9408 ", "  #             ");
    expect_machine_error(df, 9473, ":58:11: ",
                         "topology frontier has 9472 nodes (74 groups of 128); the job asks for "
                         "9473");
    /* switches that cannot host every node's NICs evenly: fabric.switches_per_group */
    g_autofree char *sw = frontier_with("switches_per_group: 32", "switches_per_group: 30");
    expect_machine_error(sw, 2, ":60:23: ", "30 switches per group cannot host the 4 NICs");
}
END_TEST

START_TEST(test_bad_rings) {
    expect_topology_error("- [6, 7, 5, 4, 2, 3, 1, 0]", "- [6, 7, 5, 4, 2, 3, 1, 1]",
                          "GPU 1 appears twice in this ring");
    expect_topology_error("- [6, 7, 5, 4, 2, 3, 1, 0]", "- [6, 7, 5, 4, 2, 3, 1]",
                          "each of the node's 8 GPUs once");
    expect_topology_error("{nic_in: 0, gpus: [0, 1, 5, 4, 6, 7, 3, 2], nic_out: 1}",
                          "{nic_in: 4, gpus: [0, 1, 5, 4, 6, 7, 3, 2], nic_out: 1}",
                          "nic_in must be an integer in 0..3");
    expect_topology_error("{nic_in: 0, gpus: [0, 1, 5, 4, 6, 7, 3, 2], nic_out: 1}",
                          "{gpus: [0, 1, 5, 4, 6, 7, 3, 2], nic_out: 1}",
                          "each ring needs nic_in, gpus and nic_out");
    /* a dragonfly's link count in 64 bits (30000^2 x 4 does not fit an int), at the key */
    expect_topology_error("groups: 74", "groups: 30000",
                          ":58:11: 30000 groups of 32 switches, 4 global links between every pair: "
                          "3632640000 links");
}
END_TEST

/* Hostile nesting: a bounded depth and a message at the first level too deep, never a crash. */
START_TEST(test_deep_nesting) {
    g_autofree char *deep = g_strnfill(50000, '[');
    const char *n[] = {"%s:1:65:", "nested more than 64 deep", NULL};
    expect_error(deep, NULL, n);
    g_autofree char *maps = g_strnfill(200, '[');
    const char *n2[] = {"%s:4:74:", "nested more than 64 deep", NULL};
    g_autofree char *text = g_strconcat(BASE, "parallel: ", maps, NULL);
    expect_error(text, NULL, n2);
    /* exactly 64 levels load; 65 do not */
    g_autofree char *open64 = g_strnfill(64, '['), *close64 = g_strnfill(64, ']');
    g_autofree char *at64 = g_strconcat(open64, close64, NULL);
    g_autoptr(GError) err = NULL;
    ConfNode *root = conf_load_string(at64, "deep", &err);
    ck_assert_msg(root != NULL, "64 levels refused: %s", err ? err->message : "");
    conf_node_free(root);
    g_autofree char *at65 = g_strconcat("[", at64, "]", NULL);
    ck_assert_ptr_null(conf_load_string(at65, "deep", &err));
    ck_assert_msg(strstr(err->message, "deep:1:65:"), "message '%s'", err->message);
}
END_TEST

/* TP x PP past an int: a message with the product, not SIGFPE or a negative number. */
START_TEST(test_layout_overflow) {
    const char *n[] = {"--set parallel.tp=65536", "TP 65536 x PP 65536 = 4294967296", NULL};
    const char *sets[] = {"model.heads=65536",
                          "model.hidden=65536",
                          "model.ffn_hidden=65536",
                          "model.layers=65536",
                          "parallel.tp=65536",
                          "parallel.pp=65536",
                          NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n);
}
END_TEST

/* More work per stage than a program can hold (grad_accum x layers per stage past 2^24): a
 * message with the product, not an allocation that aborts. */
START_TEST(test_too_much_work) {
    const char *n[] = {"%s:6:", "1048576 micro-batches x 24 layers per stage", "at most 16777216",
                       NULL};
    expect_error(BASE "parallel: {tp: 8}\ntraining:\n  grad_accum: 1048576\n", NULL, n);
}
END_TEST

/* A NUL byte, in the file or as a "\0" escape, would cut the text short: refused where it is. */
START_TEST(test_nul) {
    const char *n[] = {"%s:4:1:", "a NUL character", NULL};
    expect_error(BASE "\"nodes\\0junk\": 2\nparallel: {}\ntraining: {}\n", NULL, n);
    const char *n2[] = {"%s:4:11:", "a NUL character", NULL};
    expect_error(BASE "training: \"x\\0\"\nparallel: {}\n", NULL, n2);
    /* a raw NUL: the rest of the file would be ignored */
    g_autofree char *path = write_temp_yaml(BASE);
    static const char raw[] = "parallel: {}\ntraining: {}\nnod\0es: 3\n";
    GString *g = g_string_new(BASE);
    g_string_append_len(g, raw, sizeof raw - 1);
    ck_assert(g_file_set_contents(path, g->str, (gssize)g->len, NULL));
    g_string_free(g, TRUE);
    g_autoptr(GError) err = NULL;
    ck_assert_ptr_null(conf_load_file(path, &err));
    g_autofree char *want = g_strdup_printf("%s:6:4: a NUL byte", path);
    ck_assert_msg(strstr(err->message, want), "message '%s' lacks '%s'", err->message, want);
    g_unlink(path);
}
END_TEST

/* parallel.hybrid_shard (FSDP HYBRID_SHARD) where it means nothing: refused at the key, with the
 * fix. */
START_TEST(test_hybrid_shard_rules) {
#define HS_PT "training:\n  framework: pytorch\n"
    const char *fw[] = {"%s:6:17:", "PyTorch FSDP's HYBRID_SHARD", "deepspeed",
                        "framework: pytorch", NULL};
    expect_error(BASE "parallel:\n  zero: 3\n  hybrid_shard: true\ntraining: {}\n", NULL, fw);
    const char *z[] = {"%s:6:17:", "parallel.zero 3 (HYBRID_SHARD) or 2", "zero is 0", NULL};
    expect_error(BASE "parallel:\n  zero: 0\n  hybrid_shard: true\n" HS_PT, NULL, z);
    const char *d[] = {"%s:6:17:", "shard group of 3", "does not divide DP 16", "node: 8", NULL};
    expect_error(BASE "parallel:\n  zero: 3\n  hybrid_shard: 3\n" HS_PT, NULL, d);
    const char *one[] = {"%s:6:17:", "shard group of 1", "shards nothing", NULL};
    expect_error(BASE "parallel:\n  zero: 2\n  hybrid_shard: 1\n" HS_PT, NULL, one);
    const char *node[] = {"%s:7:17:", "true shards over the data-parallel ranks of one node",
                          "TP 8", "there is 1", NULL};
    expect_error(BASE "parallel:\n  zero: 3\n  tp: 8\n  hybrid_shard: true\n" HS_PT, NULL, node);
    const char *v[] = {"%s:6:17:", "hybrid_shard", NULL};
    expect_error(BASE "parallel:\n  zero: 3\n  hybrid_shard: node\n" HS_PT, NULL, v);
    const char *moe[] = {"--set parallel.hybrid_shard=true", "mixture-of-experts", NULL};
    const char *sets[] = {"model=deepspeed-moe-1.3b-128", "parallel.hybrid_shard=true", NULL};
    expect_error(BASE "parallel:\n  zero: 2\n" HS_PT, sets, moe);
#undef HS_PT
}
END_TEST

/* FSDP's prefetch settings where they mean nothing (another framework, or no sharded stage):
 * refused at the key, with the fix; a value that is not one of theirs, at the key. */
START_TEST(test_fsdp_setting_rules) {
    const char *fw[] = {"%s:7:27:", "fsdp_backward_prefetch is PyTorch FSDP's setting", "deepspeed",
                        "training.framework: pytorch", NULL};
    expect_error(BASE "parallel:\n  zero: 3\ntraining:\n  fsdp_backward_prefetch: post\n", NULL,
                 fw);
    const char *z[] = {"%s:8:26:", "fsdp_forward_prefetch", "parallel.zero 3", "zero is 0", NULL};
    expect_error(BASE "parallel:\n  zero: 0\ntraining:\n  framework: pytorch\n"
                      "  fsdp_forward_prefetch: true\n",
                 NULL, z);
    const char *l[] = {"--set training.fsdp_limit_all_gathers=false", "megatron", NULL};
    const char *sets[] = {"training.framework=megatron", "training.fsdp_limit_all_gathers=false",
                          NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, l);
    const char *v[] = {"%s:8:27:", "fsdp_backward_prefetch", NULL};
    expect_error(BASE "parallel:\n  zero: 3\ntraining:\n  framework: pytorch\n"
                      "  fsdp_backward_prefetch: early\n",
                 NULL, v);
}
END_TEST

/* A model, topology or device named by a device path: refused, never read until memory runs out
 * (it hung; its input is kept as tests/fuzz/regressions/scenario/dev-zero-model). */
START_TEST(test_device_path) {
    const char *n[] = {"/dev/zero: cannot read", "not a regular file", NULL};
    const char *sets[] = {"model=/dev/zero", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n);
    const char *sets2[] = {"topology=/dev/zero", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets2, n);
    const char *n2[] = {"device '/dev/zero' not found", NULL}; /* devices: regular files only */
    const char *sets4[] = {"topology.device=/dev/zero", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets4, n2);
    const char *n3[] = {"/dev/null:1:1:", "empty", NULL};
    const char *sets3[] = {"topology=/dev/null", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets3, n3);
}
END_TEST

/* A size or rate past the largest double: refused where it is written, never "inf" in JSON. */
START_TEST(test_infinite_quantity) {
    const char *n[] = {"%s:5:16:", "'bucket_size' is too large ('1e308TiB')", NULL};
    expect_error(BASE "parallel:\n  bucket_size: 1e308TiB\ntraining: {}\n", NULL, n);
    const char *n2[] = {"--set topology.node.nics.bandwidth=1e308PB/s", "too large", NULL};
    const char *sets[] = {"topology.node.nics.bandwidth=1e308PB/s", NULL};
    expect_error(BASE "parallel: {}\ntraining: {}\n", sets, n2);
    double v;
    ck_assert(!conf_parse_bytes("1e999B", &v));
    ck_assert(!conf_parse_flops("1e300PFLOP/s", &v));
    ck_assert(conf_parse_bytes("1e300B", &v) && v == 1e300);
}
END_TEST

/* The exit status follows the error's domain and code: the input's faults (CONF_ERROR, the
 * machine's MACHINE_ERROR, an iteration past 64-bit picoseconds) are status 2, a deadlock the
 * simulator's own (status 3), whatever the message says. */
START_TEST(test_error_domains) {
    g_autoptr(GError) conf = g_error_new(CONF_ERROR, CONF_ERROR_INVALID, "internal-looking text");
    g_autoptr(GError) machine = g_error_new(MACHINE_ERROR, MACHINE_ERROR_INVALID, "x");
    g_autoptr(GError) over = g_error_new(EXEC_ERROR, EXEC_ERROR_OVERFLOW, "x");
    g_autoptr(GError) dead = g_error_new(EXEC_ERROR, EXEC_ERROR_DEADLOCK, "x");
    g_autoptr(GError) other = g_error_new(G_FILE_ERROR, G_FILE_ERROR_FAILED, "x");
    ck_assert(sim_error_is_input(conf));
    ck_assert(sim_error_is_input(machine));
    ck_assert(sim_error_is_input(over));
    ck_assert(!sim_error_is_input(dead));
    ck_assert(!sim_error_is_input(other));
}
END_TEST

int main(void) {
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_malformed_yaml);
    tcase_add_test(tc, test_error_domains);
    tcase_add_test(tc, test_unknown_key);
    tcase_add_test(tc, test_alias_key);
    tcase_add_test(tc, test_wrong_unit);
    tcase_add_test(tc, test_negative_size);
    tcase_add_test(tc, test_tp_not_dividing_heads);
    tcase_add_test(tc, test_ranks_mismatch);
    tcase_add_test(tc, test_batch_not_divisible);
    tcase_add_test(tc, test_missing_model);
    tcase_add_test(tc, test_missing_file_and_bad_set);
    tcase_add_test(tc, test_layers_not_dividing_pp);
    tcase_add_test(tc, test_interleaved_rules);
    tcase_add_test(tc, test_zero_bubble_rules);
    tcase_add_test(tc, test_zb_v_rules);
    tcase_add_test(tc, test_job_larger_than_machine);
    tcase_add_test(tc, test_sequence_parallel_rules);
    tcase_add_test(tc, test_framework_choices);
    tcase_add_test(tc, test_bad_rings);
    tcase_add_test(tc, test_topology_positions);
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_layout_overflow);
    tcase_add_test(tc, test_too_much_work);
    tcase_add_test(tc, test_nul);
    tcase_add_test(tc, test_infinite_quantity);
    tcase_add_test(tc, test_device_path);
    tcase_add_test(tc, test_hybrid_shard_rules);
    tcase_add_test(tc, test_fsdp_setting_rules);
    tcase_add_test(tc, test_parallel_keys_by_parallelism);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
