/* model: the study's Eq. 1 to the parameter, vocabulary padding, and memory verdicts. */
#include <math.h>

#include "model.h"
#include "util.h"

/* Eq. 1 written out independently: P = 2Vh + [sh] + L(12h^2 + 8h) + 2h. */
static int64_t eq1(int64_t L, int64_t h, int64_t V, int64_t s, gboolean learned) {
    return 2 * V * h + (learned ? s * h : 0) + L * (12 * h * h + 8 * h) + 2 * h;
}

START_TEST(test_eq1_all_models) {
    static const struct {
        const char *model;
        int64_t L, h, V;
    } cases[] = {
        {"gpt-neox-19m", 6, 512, 50304},    {"gpt-neox-125m", 12, 768, 50304},
        {"gpt-neox-1.3b", 24, 2048, 50304}, {"gpt-neox-13b", 40, 5120, 50304},
        {"gpt-neox-20b", 44, 6144, 50304},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *set = g_strdup_printf("model=%s", cases[i].model);
        const char *sets[] = {set, "parallel.tp=1", "parallel.zero=0", NULL};
        g_autoptr(Scenario) sc = load_ok("1.3B_ddp.yaml", sets);
        double p = model_params(&sc->model, sc->seq_len, 1);
        int64_t want = eq1(cases[i].L, cases[i].h, cases[i].V, 2048, FALSE);
        ck_assert_msg(p == (double)want, "%s: P = %.0f, Eq. 1 gives %ld", cases[i].model, p,
                      (long)want);
        /* learned positions add exactly s*h */
        sc->model.pos_emb = POS_LEARNED;
        ck_assert_double_eq(model_params(&sc->model, 2048, 1),
                            (double)eq1(cases[i].L, cases[i].h, cases[i].V, 2048, TRUE));
    }
}
END_TEST

START_TEST(test_vocab_padding) {
    g_autoptr(Scenario) sc = load_ok("1.3B_ddp.yaml", NULL);
    ck_assert_int_eq(model_padded_vocab(&sc->model, 1), 50304);
    ck_assert_int_eq(model_padded_vocab(&sc->model, 2), 50432);
    const char *sets[] = {"model=gpt-neox-20b", NULL};
    g_autoptr(Scenario) s20 = load_ok("1.3B_ddp.yaml", sets);
    ck_assert_int_eq(model_padded_vocab(&s20->model, 2), 50432); /* the reference's 20B figure */
}
END_TEST

/* Sharded parameters of all stages and TP ranks add up to P when vector params are zero. */
START_TEST(test_sharding_adds_up) {
    const char *sets[] = {"model.layer_vector_params_h=0", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_tp_pp.yaml", sets);
    double sum = 0;
    for (int s = 0; s < 2; s++)
        sum += 4 * model_stage_params(&sc->model, 2048, 4, 2, s);
    /* the final layer norm (2h) is replicated on the 4 TP ranks of the last stage */
    ck_assert_double_eq(sum - 3 * 2.0 * 2048, model_params(&sc->model, 2048, 4));
}
END_TEST

START_TEST(test_memory_verdicts) {
    /* The study: 13B with plain DDP runs out of memory on a 64 GB GCD; ZeRO makes it fit. */
    const char *ddp[] = {"model=gpt-neox-13b", "nodes=1", "parallel.zero=0", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_ddp.yaml", ddp);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    const SimSummary *sa = sim_summary(ra);
    ck_assert_msg(sa->memory.total_bytes > a->topo.device.hbm_capacity,
                  "13B DDP needs %.3g bytes, capacity %.3g", sa->memory.total_bytes,
                  a->topo.device.hbm_capacity);
    /* 16 bytes per parameter: 2 weights + 2 gradients + 12 Adam (ZeRO paper) */
    double p = model_params(&a->model, 2048, 1);
    ck_assert_double_eq_tol(sa->memory.params_bytes + sa->memory.grads_bytes +
                                sa->memory.optimizer_bytes,
                            16.0 * p, 1.0);
    const char *z3[] = {"model=gpt-neox-13b", "nodes=2", "parallel.zero=3", NULL};
    g_autoptr(Scenario) b = load_ok("1.3B_ddp.yaml", z3);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    const SimSummary *sb = sim_summary(rb);
    ck_assert_int_eq(b->gpus, 16);
    ck_assert_msg(sb->memory.total_bytes < b->topo.device.hbm_capacity,
                  "13B ZeRO-3 on 16 GCDs needs %.3g bytes", sb->memory.total_bytes);
    ck_assert_double_eq_tol(sb->memory.optimizer_bytes, 12.0 * p / 16, 1.0);
}
END_TEST

START_TEST(test_activation_memory) {
    /* Korthikanti et al. 2022 without dropout (probability 0 in every shipped model): a layer
     * keeps sbh(8 + 24/t + 2as/(ht)); full recompute keeps 2sbh per layer + one layer's working
     * set. */
    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", NULL);
    MemoryCase c = {.seq_len = 2048,
                    .micro_batch = 4,
                    .tp = 8,
                    .pp = 1,
                    .vpp = 1,
                    .dp = 1,
                    .prec = PREC_FP16,
                    .rc = RECOMPUTE_NONE,
                    .inflight = 1,
                    .ends_inflight = 1};
    ModelMemory none = model_memory(&sc->model, &c);
    c.rc = RECOMPUTE_FULL;
    ModelMemory full = model_memory(&sc->model, &c);
    double sbh = 2048.0 * 4 * 2048;
    double layer = sbh * (8 + 24.0 / 8 + 2.0 * 16 * 2048 / (2048.0 * 8));
    /* logits over the vocabulary padded to a multiple of 128 x 8 = 51200 */
    double extra = 4.0 * sbh / 8 * (1.0 + 51200.0 / 2048);
    ck_assert_double_eq_tol(none.activations_bytes, 24 * layer + extra, 1.0);
    ck_assert_double_eq_tol(full.activations_bytes, 24 * 2 * sbh + layer + extra, 1.0);
}
END_TEST

/* Dropout of probability 0 stores no mask and no output (PyTorch returns the input; the compute
 * side runs no dropout kernel). 1.3B at 2048 tokens, micro-batch 4, TP 1: a layer keeps
 * sbh(32 + 2as/h) = 64 sbh = 1 GiB, not Korthikanti's sbh(34 + 5as/h) = 114 sbh = 1.78 GiB; with
 * both probabilities > 0 the paper's figure, plus the embedding's mask, comes back. And
 * 1.3B_ddp without recomputation then fits: 24 GiB of layers + 4sbh(1 + V/h) of head + 16 bytes
 * per parameter = 46.67 GiB of 59.6 (65.44 GiB with the masks: did not fit). */
START_TEST(test_dropout_free_activations) {
    const char *sets[] = {"training.recompute=none", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_ddp.yaml", sets);
    double sbh = 2048.0 * 4 * 2048, a = 16, s = 2048, h = 2048;
    double head = 4.0 * sbh * (1.0 + 50304.0 / 2048);
    MemoryCase c = {.seq_len = 2048,
                    .micro_batch = 4,
                    .tp = 1,
                    .pp = 1,
                    .vpp = 1,
                    .dp = 1,
                    .prec = PREC_FP16,
                    .rc = RECOMPUTE_NONE,
                    .inflight = 1,
                    .ends_inflight = 1};
    ModelMemory m0 = model_memory(&sc->model, &c);
    double layer0 = sbh * (32 + 2 * a * s / h);
    ck_assert_double_eq(layer0, 1024.0 * 1024 * 1024);
    ck_assert_msg(fabs(m0.activations_bytes - (24 * layer0 + head)) < 1.0,
                  "activations %.0f, closed form %.0f", m0.activations_bytes, 24 * layer0 + head);
    ModelConfig drop = sc->model;
    drop.attention_dropout = drop.hidden_dropout = 0.1;
    ModelMemory m1 = model_memory(&drop, &c);
    double layer1 = sbh * (34 + 5 * a * s / h);
    ck_assert_double_eq_tol(m1.activations_bytes, 24 * layer1 + sbh + head, 1.0);

    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *sum = sim_summary(run);
    double p = model_params(&sc->model, 2048, 1);
    /* plus DeepSpeed's flat allreduce bucket of 5e8 fp16 elements */
    ck_assert_double_eq(sum->memory.buffers_bytes, 5e8 * 2);
    ck_assert_double_eq_tol(sum->memory.total_bytes, 16 * p + 24 * layer0 + head + 1e9, 1.0);
    ck_assert_msg(sum->memory.total_bytes < sc->topo.device.hbm_capacity, "%.2f GiB does not fit",
                  sum->memory.total_bytes / 1073741824.0);
    ck_assert_double_eq_tol(sum->memory.total_bytes / 1073741824.0, 47.61, 0.005);
}
END_TEST

/* GPipe runs every forward before any backward (build_stage), pp = 1 included: all m micro-batches
 * are in flight, head logits too. 1.3B DDP, 4 micro-batches of 4, full recompute: 4 x 24 layer
 * inputs (2sbh each) + one layer's working set + 4 heads; 1F1B keeps one micro-batch. */
START_TEST(test_gpipe_inflight) {
    double sbh = 2048.0 * 4 * 2048, layer = sbh * (32 + 2.0 * 16);
    double head = 4.0 * sbh * (1.0 + 50304.0 / 2048);
    const char *gp[] = {"parallel.schedule=gpipe", "training.grad_accum=4", NULL};
    const char *fb[] = {"parallel.schedule=1f1b", "training.grad_accum=4", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_ddp.yaml", gp);
    g_autoptr(Scenario) b = load_ok("1.3B_ddp.yaml", fb);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    double ga = sim_summary(ra)->memory.activations_bytes;
    double gb = sim_summary(rb)->memory.activations_bytes;
    ck_assert_msg(fabs(ga - (4 * (24 * 2 * sbh + head) + layer)) < 1.0, "GPipe %.0f, want %.0f", ga,
                  4 * (24 * 2 * sbh + head) + layer);
    ck_assert_double_eq_tol(gb, 24 * 2 * sbh + head + layer, 1.0);
}
END_TEST

/* GPT-NeoX's logged TFLOP/s (megatron/logging.py, get_flops) on 20B_tp8.yaml: global batch 8 of
 * 2048 tokens, 44 layers, hidden 6144, vocabulary padded for TP 8 to 51200, activations
 * checkpointed (factor 4), 16 GPUs. The same run's model FLOPs use the same padded vocabulary;
 * without recomputation GPT-NeoX counts 3 where it counts 4. */
START_TEST(test_neox_flops) {
    g_autoptr(Scenario) sc = load_ok("20B_tp8.yaml", NULL);
    ck_assert_int_eq(sc->recompute, RECOMPUTE_FULL);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const SimSummary *sum = sim_summary(run);
    double B = 8, s = 2048, L = 44, h = 6144, V = 51200, world = 16;
    double it = (double)sum->iteration / (double)SIM_PS_PER_S;
    /* get_flops, in its order of operations */
    double flops = 24 * 4 * B * s * L * (h * h) * (1.0 + (s / (6.0 * h)) + (V / (16.0 * L * h)));
    ck_assert_int_eq(sc->global_batch, 8);
    ck_assert_int_eq(sc->gpus, 16);
    ck_assert_msg(sum->neox_flops == flops, "neox_flops %.17g, get_flops %.17g", sum->neox_flops,
                  flops);
    double tflops = flops / (it * world) / 1e12;
    ck_assert_msg(fabs(sum->neox_tflops_per_gpu - tflops) <= 1e-12 * tflops,
                  "neox TFLOP/s %.17g, get_flops %.17g", sum->neox_tflops_per_gpu, tflops);
    /* model FLOPs: 3 x (L(24bsh^2 + 4bs^2h) + 2bshV), V padded for the run's TP 8 */
    double model = 3 * B * (L * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * V);
    ck_assert_msg(fabs(sum->model_flops - model) <= 1e-12 * model, "model_flops %.17g, want %.17g",
                  sum->model_flops, model);
    const char *none[] = {"training.recompute=none", NULL};
    g_autoptr(Scenario) sn = load_ok("20B_tp8.yaml", none);
    g_autoptr(SimRun) rn = run_ok(sn, -1);
    ck_assert_double_eq_tol(sum->neox_flops / sim_summary(rn)->neox_flops, 4.0 / 3.0, 1e-15);
    /* for the same time, GPT-NeoX's figure under full recompute is 4/3 of the 3x count */
    double three = 24 * 3 * B * s * L * (h * h) * (1.0 + (s / (6.0 * h)) + (V / (16.0 * L * h)));
    ck_assert_double_eq_tol(sum->neox_tflops_per_gpu / (three / (it * world) / 1e12), 4.0 / 3.0,
                            1e-12);
}
END_TEST

int main(void) {
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_eq1_all_models);
    tcase_add_test(tc, test_vocab_padding);
    tcase_add_test(tc, test_sharding_adds_up);
    tcase_add_test(tc, test_memory_verdicts);
    tcase_add_test(tc, test_activation_memory);
    tcase_add_test(tc, test_dropout_free_activations);
    tcase_add_test(tc, test_gpipe_inflight);
    tcase_add_test(tc, test_neox_flops);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
