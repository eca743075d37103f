/* Architectures as data: grouped-query attention, SwiGLU, RMSNorm, bias-free linears. The
 * shipped models' parameter counts to the parameter, each computed here independently from the
 * shapes of its Hugging Face config.json or its paper; operators, FLOPs and activation memory
 * against closed forms; the layout errors GQA adds. */
#include <glib/gstdio.h>
#include <string.h>

#include "util.h"

/* A Llama model (untied, RMSNorm, SwiGLU, no biases) from its config.json shapes:
 * embed_tokens and lm_head V x h each; per layer q_proj and o_proj h x h, k_proj and v_proj
 * (h kv / heads) x h, gate_proj, up_proj and down_proj h x ffn, two RMSNorm weights of h; the
 * final norm h. */
static int64_t llama_params(int64_t V, int64_t h, int64_t L, int64_t heads, int64_t kv,
                            int64_t ffn) {
    int64_t kvw = h / heads * kv;
    return 2 * V * h + L * (2 * h * h + 2 * h * kvw + 3 * h * ffn + 2 * h) + h;
}

static Scenario *load_model(const char *model) {
    g_autofree char *set = g_strdup_printf("model=%s", model);
    const char *sets[] = {set, "parallel.tp=1", "parallel.zero=0", NULL};
    return load_ok("1.3B_ddp.yaml", sets);
}

START_TEST(test_published_counts) {
    static const struct {
        const char *model;
        int64_t want;       /* the count the model file's comment cites */
        int64_t V, h, L, a; /* config.json: vocab_size, hidden_size, layers, heads */
        int64_t kv, ffn;    /* num_key_value_heads, intermediate_size */
    } cases[] = {
        {"llama-2-7b", 6738415616LL, 32000, 4096, 32, 32, 32, 11008},
        {"llama-2-13b", 13015864320LL, 32000, 5120, 40, 40, 40, 13824},
        {"llama-2-70b", 68976648192LL, 32000, 8192, 80, 64, 8, 28672},
        {"llama-3-8b", 8030261248LL, 128256, 4096, 32, 32, 8, 14336},
        {"llama-3-70b", 70553706496LL, 128256, 8192, 80, 64, 8, 28672},
        {"llama-3-405b", 405853388800LL, 128256, 16384, 126, 128, 8, 53248},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(Scenario) sc = load_model(cases[i].model);
        int64_t shapes =
            llama_params(cases[i].V, cases[i].h, cases[i].L, cases[i].a, cases[i].kv, cases[i].ffn);
        ck_assert_msg(shapes == cases[i].want, "%s: the shapes give %ld, the file cites %ld",
                      cases[i].model, (long)shapes, (long)cases[i].want);
        double p = model_params(&sc->model, 4096, 1);
        ck_assert_msg(p == (double)cases[i].want, "%s: P = %.0f, want %ld", cases[i].model, p,
                      (long)cases[i].want);
        ck_assert_int_eq(model_kv_heads(&sc->model), cases[i].kv);
    }
    /* GPT-3 175B (Brown et al. 2020, GPT-2's layer): Vh + sh + L(12h^2 + 13h) + 2h, tied */
    {
        g_autoptr(Scenario) sc = load_model("gpt-3-175b");
        int64_t V = 50257, h = 12288, L = 96, s = 2048;
        int64_t want = V * h + s * h + L * (12 * h * h + 13 * h) + 2 * h;
        ck_assert_int_eq(want, 174604259328LL);
        ck_assert_double_eq(model_params(&sc->model, 2048, 1), (double)want);
    }
    /* Megatron's 1T (Narayanan et al. 2021, Sec. 5.1): 12lh^2(1 + 13/(12h) + (V + s)/(12lh)),
     * 1008.0B in Table 1, plus the final LayerNorm's 2h */
    {
        g_autoptr(Scenario) sc = load_model("megatron-1t");
        int64_t V = 51200, h = 25600, l = 128, s = 2048;
        int64_t paper = 12 * l * h * h + 13 * l * h + (V + s) * h;
        ck_assert_int_eq(paper, 1008038707200LL);
        ck_assert_double_eq(model_params(&sc->model, 2048, 1), (double)(paper + 2 * h));
        ck_assert_double_eq(model_params(&sc->model, 2048, 8), (double)(paper + 2 * h));
    }
    /* models/gpt-1t.yaml, the GPT-NeoX-style 1T: Eq. 1 with the vocabulary padded to 128 x TP */
    {
        g_autoptr(Scenario) sc = load_model("gpt-1t");
        int64_t h = 25600, L = 128;
        ck_assert_double_eq(model_params(&sc->model, 2048, 8),
                            (double)(2 * 51200 * h + L * (12 * h * h + 8 * h) + 2 * h));
        ck_assert_double_eq(model_params(&sc->model, 2048, 8), 1009280665600.0);
    }
    /* models/mt-nlg-530b.yaml (Smith et al. 2022): Megatron's count, 12lh^2 + 13lh + (V + s)h plus
     * the final LayerNorm, with GPT-2's 50,257 entries padded to 51,200 at TP 8 */
    {
        g_autoptr(Scenario) sc = load_model("mt-nlg-530b");
        int64_t V = 51200, h = 20480, l = 105, s = 2048;
        ck_assert_double_eq(model_params(&sc->model, 2048, 8),
                            (double)(12 * l * h * h + 13 * l * h + (V + s) * h + 2 * h));
        ck_assert_double_eq(model_params(&sc->model, 2048, 8), 529600819200.0);
    }
    /* models/bloom-176b.yaml (BigScience's tr11 README and the BLOOM paper's 176,247M): the
     * padded 250,880 x h embedding, tied; 70 layers of 12h^2 + 13h; the embedding's LayerNorm
     * and the final one, 2h each; ALiBi adds none */
    {
        g_autoptr(Scenario) sc = load_model("bloom-176b");
        int64_t V = 250880, h = 14336, l = 70;
        int64_t want = V * h + l * (12 * h * h + 13 * h) + 4 * h;
        ck_assert_int_eq(want, 176247271424LL);
        ck_assert_double_eq(model_params(&sc->model, 2048, 1), (double)want);
        ck_assert_double_eq(model_params(&sc->model, 2048, 4), (double)want);
    }
}
END_TEST

/* A layer's tensors add up to its parameters on every TP rank, with none empty. */
START_TEST(test_tensors_add_up) {
    const char *models[] = {"llama-3-70b", "llama-2-7b", "gpt-3-175b", "gpt-neox-20b",
                            "bloom-176b"};
    for (size_t i = 0; i < G_N_ELEMENTS(models); i++) {
        g_autoptr(Scenario) sc = load_model(models[i]);
        for (int tp = 1; tp <= 8; tp *= 2) {
            g_autoptr(GArray) units = model_stage_units(&sc->model, 2048, tp, 1, 0);
            for (guint u = 0; u < units->len; u++) {
                const ParamUnit *pu = &g_array_index(units, ParamUnit, u);
                double sizes[32], sum = 0;
                int n = model_unit_tensors(&sc->model, pu, 2048, tp, sizes, 32);
                for (int k = 0; k < n; k++) {
                    ck_assert_msg(sizes[k] > 0, "%s unit %u tensor %d is empty", models[i], u, k);
                    sum += sizes[k];
                }
                ck_assert_msg(sum == pu->params, "%s tp %d unit %u: tensors %.0f, unit %.0f",
                              models[i], tp, u, sum, pu->params);
            }
        }
    }
    /* a Llama layer: q, k, v, o, gate+up, down, two RMSNorm weights and nothing else */
    g_autoptr(Scenario) sc = load_model("llama-3-70b");
    ParamUnit layer = {UNIT_LAYER, 0, 0};
    double sizes[32];
    ck_assert_int_eq(model_unit_tensors(&sc->model, &layer, 2048, 8, sizes, 32), 6);
    ck_assert_double_eq(sizes[0], (8192.0 * 8192 + 2 * 8192.0 * 1024) / 8);
    ck_assert_double_eq(sizes[2], 8192.0 * 2 * 28672 / 8);
}
END_TEST

static const ModelOp *find_op(GArray *ops, const char *name) {
    for (guint i = 0; i < ops->len; i++)
        if (strcmp(g_array_index(ops, ModelOp, i).name, name) == 0)
            return &g_array_index(ops, ModelOp, i);
    return NULL;
}

/* Llama-3 70B at TP 8: the QKV GEMM is (h + 2 kv d)/t wide, SwiGLU's input GEMM 2 ffn/t, its
 * product one element-wise kernel; no bias kernels; RMSNorm kernels; and the GEMM FLOPs of every
 * rank and layer add up to model_forward_flops' closed form. */
START_TEST(test_gqa_swiglu_ops) {
    const char *sets[] = {"model=llama-3-70b", "model.attention=standard", "parallel.tp=8", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_ddp.yaml", sets);
    const ModelConfig *m = &sc->model;
    int b = 1, s = 4096, t = 8;
    double h = 8192, kvw = 1024, f = 28672, bs = (double)b * s, e = 2;
    g_autoptr(GArray) attn = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    g_autoptr(GArray) mlp = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    g_autoptr(GArray) head = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(m, SEG_ATTN, PASS_FWD, b, s, t, PREC_BF16, attn);
    model_segment_ops(m, SEG_MLP, PASS_FWD, b, s, t, PREC_BF16, mlp);
    model_segment_ops(m, SEG_HEAD, PASS_FWD, b, s, t, PREC_BF16, head);
    const ModelOp *qkv = find_op(attn, "qkv"), *fc1 = find_op(mlp, "mlp_fc1");
    ck_assert(qkv && fc1 && find_op(mlp, "swiglu") && find_op(attn, "rmsnorm"));
    ck_assert_int_eq(qkv->n, (8192 + 2 * 1024) / 8);
    ck_assert_int_eq(fc1->n, 2 * 28672 / 8);
    ck_assert_double_eq(find_op(mlp, "swiglu")->bytes, 3.0 * bs * f / t * e);
    ck_assert_double_eq(find_op(attn, "rotary")->bytes, 2.0 * bs * (h + kvw) / t * e);
    ck_assert(!find_op(mlp, "mlp_bias") && !find_op(mlp, "gelu") && !find_op(attn, "layernorm"));
    ck_assert(find_op(mlp, "residual") && !find_op(mlp, "bias_residual"));
    double gemm = 0;
    for (guint i = 0; i < attn->len; i++)
        gemm += g_array_index(attn, ModelOp, i).flops;
    for (guint i = 0; i < mlp->len; i++)
        gemm += g_array_index(mlp, ModelOp, i).flops;
    double want_layer = 2 * bs * (2 * h * h + 2 * h * kvw + 3 * h * f) + 4 * bs * s * h;
    ck_assert_double_eq_tol(gemm * t, want_layer, want_layer * 1e-12);
    double logits = find_op(head, "logits")->flops * t;
    ck_assert_double_eq(logits, 2 * bs * h * 128256);
    double fwd = model_forward_flops(m, b, s, t);
    ck_assert_double_eq_tol(fwd, 80 * want_layer + logits, fwd * 1e-12);
    /* backward: the fused gate+up GEMM's two gradients, SwiGLU's gradient kernel */
    g_autoptr(GArray) mlpb = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(m, SEG_MLP, PASS_BWD, b, s, t, PREC_BF16, mlpb);
    ck_assert_int_eq(find_op(mlpb, "mlp_fc1_wgrad")->n, 2 * 28672 / 8);
    ck_assert_double_eq(find_op(mlpb, "swiglu_bwd")->bytes, 5.0 * bs * f / t * e);
    ck_assert(find_op(mlpb, "rmsnorm_bwd") != NULL);
}
END_TEST

/* BLOOM's attention and embedding (Megatron-DeepSpeed's): ALiBi's scores come from a baddbmm
 * onto the expanded bias, the s^2 scores written and read once more than the plain product's,
 * in the forward only (the bias has no gradient), and not in the fused kernel (which adds the
 * bias on chip); no rotary kernel. The embedding's LayerNorm runs as a layer's norm: forward
 * reads and writes b s h, backward reads two and writes one. */
START_TEST(test_alibi_embed_norm_ops) {
    const char *sets[] = {"model=bloom-176b", "parallel.tp=4", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_ddp.yaml", sets);
    const ModelConfig *m = &sc->model;
    int b = 2, s = 2048, t = 4;
    double bsh = (double)b * s * 14336, scores = (double)b * 112 / t * s * s, e = 2;
    g_autoptr(GArray) fwd = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    g_autoptr(GArray) bwd = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(m, SEG_ATTN, PASS_FWD, b, s, t, PREC_BF16, fwd);
    model_segment_ops(m, SEG_ATTN, PASS_BWD, b, s, t, PREC_BF16, bwd);
    ck_assert(find_op(fwd, "alibi") && !find_op(fwd, "rotary") && !find_op(bwd, "alibi"));
    ck_assert_double_eq(find_op(fwd, "alibi")->bytes, 2.0 * scores * e);
    g_autoptr(GArray) emb = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    g_autoptr(GArray) embb = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(m, SEG_EMBED, PASS_FWD, b, s, t, PREC_BF16, emb);
    model_segment_ops(m, SEG_EMBED, PASS_BWD, b, s, t, PREC_BF16, embb);
    ck_assert_double_eq(find_op(emb, "layernorm")->bytes, 2.0 * bsh * e);
    ck_assert_double_eq(find_op(embb, "layernorm_bwd")->bytes, 3.0 * bsh * e);
    /* without the embedding norm, none; with the fused kernel, no ALiBi kernel */
    ModelConfig plain = *m;
    plain.embed_norm = FALSE;
    plain.attention = ATTN_FLASH;
    g_autoptr(GArray) emb0 = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    g_autoptr(GArray) flash = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(&plain, SEG_EMBED, PASS_FWD, b, s, t, PREC_BF16, emb0);
    model_segment_ops(&plain, SEG_ATTN, PASS_FWD, b, s, t, PREC_BF16, flash);
    ck_assert(!find_op(emb0, "layernorm") && !find_op(flash, "alibi"));
    ck_assert_int_eq(emb0->len + 1, emb->len);
}
END_TEST

/* Korthikanti's per-layer activations with GQA and SwiGLU (model_memory's derivation):
 * sbh(8 + (2 + 4 kv/heads + 2 + 6 ffn/h)/t) bytes at 2-byte activations, no s^2 term with the
 * fused kernel; the head adds 4sbh/t (1 + V/h). */
START_TEST(test_gqa_swiglu_activations) {
    const char *sets[] = {"model=llama-3-8b", "parallel.tp=8", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_ddp.yaml", sets);
    double s = 8192, b = 1, h = 4096, t = 8, f = 14336, V = 128256, L = 32, sbh = s * b * h;
    double layer = sbh * (8 + (2 + 4 * 8.0 / 32 + 2 + 6 * f / h) / t);
    double head = 4 * sbh / t * (1 + V / h);
    MemoryCase c = {.seq_len = 8192,
                    .micro_batch = 1,
                    .tp = 8,
                    .pp = 1,
                    .vpp = 1,
                    .dp = 1,
                    .prec = PREC_BF16,
                    .rc = RECOMPUTE_NONE,
                    .inflight = 1,
                    .ends_inflight = 1};
    ModelMemory mm = model_memory(&sc->model, &c);
    ck_assert_double_eq_tol(mm.activations_bytes, L * layer + head, 1.0);
    /* selective recomputation keeps the same (the fused kernel has no s^2 term to drop) */
    c.rc = RECOMPUTE_SELECTIVE;
    ModelMemory sel = model_memory(&sc->model, &c);
    ck_assert_double_eq_tol(sel.activations_bytes, L * layer + head, 1.0);
}
END_TEST

/* Writing GPT-NeoX's defaults out changes nothing: 1.3B with kv_heads = heads, gelu, layernorm,
 * bias: the same parameters and the same byte-identical report. */
START_TEST(test_neox_defaults_explicit) {
    const char *plain[] = {"parallel.tp=2", NULL};
    const char *expl[] = {"parallel.tp=2",        "model.kv_heads=16", "model.mlp=gelu",
                          "model.norm=layernorm", "model.bias=true",   NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_ddp.yaml", plain);
    g_autoptr(Scenario) b = load_ok("1.3B_ddp.yaml", expl);
    ck_assert_double_eq(model_params(&a->model, 2048, 2), model_params(&b->model, 2048, 2));
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    g_autofree char *ja = json_of(ra);
    g_autofree char *jb = json_of(rb);
    /* the overrides list and resolved_scenario (the keys as written) differ; every figure from
     * the model on must not */
    char *ra_end = strstr(ja, "\"resolved_scenario\""),
         *rb_end = strstr(jb, "\"resolved_scenario\"");
    ck_assert(ra_end && rb_end);
    *ra_end = *rb_end = '\0';
    ck_assert_str_eq(strstr(ja, "\"model\""), strstr(jb, "\"model\""));
    ck_assert_str_eq(strstr(ra_end + 1, "\"sim\": {"), strstr(rb_end + 1, "\"sim\": {"));
}
END_TEST

/* GQA's layout errors, with their place in the file. */
START_TEST(test_gqa_errors) {
    g_autoptr(GError) err = NULL;
    g_autofree char *path = write_temp_yaml("model: llama-3-8b\ntopology: frontier\nnodes: 4\n"
                                            "parallel:\n  tp: 16\ntraining: {}\n");
    g_autoptr(Scenario) sc = scenario_load(path, NULL, &err);
    ck_assert(sc == NULL && err != NULL);
    g_autofree char *where = g_strdup_printf("%s:5:7:", path);
    ck_assert_msg(strstr(err->message, where) && strstr(err->message, "8 key/value heads"),
                  "message: %s", err->message);
    g_unlink(path);
    g_clear_error(&err);
    const char *sets[] = {"model.kv_heads=3", NULL};
    g_autofree char *p2 = write_temp_yaml("model: llama-3-8b\ntopology: frontier\nnodes: 1\n");
    g_autoptr(Scenario) sc2 = scenario_load(p2, (char *const *)sets, &err);
    ck_assert(sc2 == NULL && err != NULL);
    ck_assert_msg(strstr(err->message, "--set model.kv_heads=3") &&
                      strstr(err->message, "do not divide the 32 query heads"),
                  "message: %s", err->message);
    g_unlink(p2);
}
END_TEST

/* The two Llama-3 70B scenarios run, fit, and their breakdown adds up; the parameter count in
 * the report is the published one. */
START_TEST(test_llama_scenarios_run) {
    static const char *files[] = {"llama3_70b_frontier.yaml", "llama3_70b_dgx_h100.yaml"};
    for (size_t f = 0; f < G_N_ELEMENTS(files); f++) {
        g_autoptr(Scenario) sc = load_ok(files[f], NULL);
        ck_assert_int_eq(sc->tp * sc->pp * sc->dp, 512);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        const SimSummary *s = sim_summary(run);
        const RankTimes *c = &s->critical;
        ck_assert_msg(c->compute + c->exposed + c->bubble == s->iteration, "%s: breakdown",
                      files[f]);
        ck_assert_msg(s->memory.total_bytes < sc->topo.device.hbm_capacity, "%s: %.3g bytes",
                      files[f], s->memory.total_bytes);
        ck_assert_double_eq(s->params, 70553706496.0);
        ck_assert_msg(s->mfu > 0.1 && s->mfu < 0.8, "%s: MFU %.3f", files[f], s->mfu);
    }
}
END_TEST

/* Precision. bf16 on the MI250X runs at the fp16 matrix rate: the same iteration to the
 * picosecond. fp8 on the H100 (Transformer Engine style): a linear GEMM runs at the fp8 peak
 * (1,979 TFLOP/s dense, NVIDIA H100 datasheet), so a compute-bound one takes exactly half its bf16
 * time (within the tile choice); casts and amax bookkeeping appear as memory-bound kernels;
 * attention's core and the logits stay bf16. fp8 on a device without an fp8 peak is an error at
 * training.precision. */
START_TEST(test_precision) {
    const char *fp16[] = {"training.precision=fp16", NULL};
    const char *bf16[] = {"training.precision=bf16", NULL};
    g_autoptr(Scenario) a = load_ok("1.3B_ddp.yaml", fp16);
    g_autoptr(Scenario) b = load_ok("1.3B_ddp.yaml", bf16);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    g_autoptr(SimRun) rb = run_ok(b, -1);
    ck_assert_int_eq(sim_summary(ra)->iteration, sim_summary(rb)->iteration);

    const char *fp8[] = {"training.precision=fp8", NULL};
    g_autoptr(Scenario) sc = load_ok("llama3_70b_dgx_h100.yaml", fp8);
    const DeviceSpec *d = &sc->topo.device;
    ck_assert_double_eq(d->peak_flops[PREC_FP8], 1979e12);
    int bs = 8192, t = 8;
    double h = 8192;
    g_autoptr(GArray) lo = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    g_autoptr(GArray) hi = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(&sc->model, SEG_MLP, PASS_FWD, 1, bs, t, PREC_FP8, lo);
    model_segment_ops(&sc->model, SEG_MLP, PASS_FWD, 1, bs, t, PREC_BF16, hi);
    const ModelOp *g8 = find_op(lo, "mlp_fc1"), *g16 = find_op(hi, "mlp_fc1");
    ck_assert(g8->fp8 && !g16->fp8 && g8->flops == g16->flops);
    DeviceOpCost c8 = device_op_cost(d, g8, PREC_FP8), c16 = device_op_cost(d, g16, PREC_FP8);
    ck_assert(c8.bound == DEVICE_BOUND_COMPUTE && c16.bound == DEVICE_BOUND_COMPUTE);
    /* half the time but for the fp8 K loop's per-tile steps (K = h, k_overhead x 2 against
     * k_overhead: device.c fp8_k_loop), within 0.1%: the fastest tile and K split are chosen
     * again at the new rate */
    double kloop = (h + 2.0 * d->k_overhead) / (h + d->k_overhead);
    ck_assert_double_eq_tol(c8.compute_s, 0.5 * kloop * c16.compute_s, 1e-3 * c16.compute_s);
    /* the casts of fc1's input (bs x h) and, a kernel of its own, its weight (h x 2 ffn / t) with
     * transposes: 2 + 1 + 1 bytes per element */
    double fin = 2.0 * 28672 / t;
    ck_assert_double_eq(find_op(lo, "fp8_cast")->bytes, 4.0 * bs * h);
    const ModelOp *wc = find_op(lo, MODEL_FP8_WEIGHT_CAST);
    ck_assert(wc != NULL && model_op_is_weight_cast(wc));
    ck_assert_double_eq(wc->bytes, 4.0 * h * fin);
    ck_assert(find_op(lo, "fp8_amax") != NULL && !find_op(hi, "fp8_cast"));
    g_autoptr(GArray) attn = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    g_autoptr(GArray) head = g_array_new(FALSE, FALSE, sizeof(ModelOp));
    model_segment_ops(&sc->model, SEG_ATTN, PASS_FWD, 1, bs, t, PREC_FP8, attn);
    model_segment_ops(&sc->model, SEG_HEAD, PASS_FWD, 1, bs, t, PREC_FP8, head);
    ck_assert(find_op(attn, "qkv")->fp8 && !find_op(attn, "flash_attention")->fp8);
    ck_assert(!find_op(head, "logits")->fp8);
    /* the whole run: faster than bf16, same memory (weights and activations stay bf16) */
    g_autoptr(Scenario) s16 = load_ok("llama3_70b_dgx_h100.yaml", NULL);
    g_autoptr(SimRun) r8 = run_ok(sc, -1);
    g_autoptr(SimRun) r16 = run_ok(s16, -1);
    ck_assert(sim_summary(r8)->critical.compute < 0.8 * sim_summary(r16)->critical.compute);
    ck_assert_double_eq(sim_summary(r8)->memory.total_bytes, sim_summary(r16)->memory.total_bytes);

    g_autoptr(GError) err = NULL;
    g_autofree char *path = write_temp_yaml("model: llama-3-8b\ntopology: frontier\nnodes: 1\n"
                                            "parallel: {}\ntraining:\n  precision: fp8\n");
    g_autoptr(Scenario) bad = scenario_load(path, NULL, &err);
    ck_assert(bad == NULL && err != NULL);
    g_autofree char *where = g_strdup_printf("%s:6:14:", path);
    ck_assert_msg(strstr(err->message, where) && strstr(err->message, "fp8 matrix peak"),
                  "message: %s", err->message);
    g_unlink(path);
}
END_TEST

/* Compute time of stage `stage`'s tasks of one phase, layer and micro-batch. */
static double phase_s(const SimRun *run, int stage, Phase ph, int layer, int micro) {
    const Program *pg = workload_program(sim_workload(run), stage);
    SimTime t = 0;
    for (guint32 i = 0; i < pg->ntasks; i++) {
        const Task *k = &pg->tasks[i];
        if (k->kind == TASK_COMPUTE && k->phase == ph && k->layer == layer && k->micro == micro)
            t += k->duration;
    }
    return (double)t / SIM_PS_PER_S;
}

/* Seconds of the fp8 weight casts (MODEL_FP8_WEIGHT_CAST) in ops, added to *casts. */
static int add_casts(const DeviceSpec *d, GArray *ops, double *casts) {
    int n = 0;
    for (guint i = 0; i < ops->len; i++)
        if (model_op_is_weight_cast(&g_array_index(ops, ModelOp, i))) {
            *casts +=
                (double)device_op_time(d, &g_array_index(ops, ModelOp, i), PREC_FP8) / SIM_PS_PER_S;
            n++;
        }
    return n;
}

/* Transformer Engine's fp8 weight casts (MODEL_FP8_WEIGHT_CAST, a kernel per linear layer): under
 * Megatron-LM, which tells TE each model chunk's first micro-batch, a layer's forward in
 * micro-batch 0 takes exactly its weight casts longer than in micro-batch 1, and its
 * recomputation casts nothing; under a framework that does not (DeepSpeed) every forward and
 * recomputation casts. For a dense layer, a dense layer of the interleaved schedule's second
 * chunk, one under context parallelism (whose body leaves the casts to the walker) and a MoE
 * layer (the experts' casts in place of the dense MLP's). */
START_TEST(test_fp8_weight_cache) {
    static const struct {
        const char *file;
        const char *sets[6];
        int layer; /* a layer of stage 1 */
        gboolean moe;
    } cases[] = {
        {"llama3_70b_dgx_h100.yaml", {"training.precision=fp8", NULL}, 11, FALSE},
        {"llama3_70b_dgx_h100.yaml",
         {"training.precision=fp8", "parallel.schedule=interleaved", "parallel.virtual_stages=2",
          NULL},
         46, /* chunk 1 of stage 1: layers (8 + 1) x 5 .. + 4 */
         FALSE},
        {"llama3_70b_dgx_h100.yaml", {"training.precision=fp8", "parallel.cp=2", NULL}, 11, FALSE},
        {"mixtral_8x7b_frontier.yaml",
         {"training.precision=fp8", "topology=dgx-h100", "training.framework=megatron",
          "parallel.ep=4", NULL}, /* 2 experts a rank: casts unlike one dense MLP's */
         9,
         TRUE},
    };
    for (size_t v = 0; v < G_N_ELEMENTS(cases); v++) {
        g_autoptr(Scenario) a = load_ok(cases[v].file, cases[v].sets);
        const DeviceSpec *d = &a->topo.device;
        double casts = 0;
        int n = 0;
        for (Segment seg = SEG_ATTN; seg <= SEG_MLP; seg++) {
            g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(ModelOp));
            if (seg == SEG_MLP && cases[v].moe)
                for (int p = 0; p < MOE_PART_COUNT; p++)
                    model_moe_ops(&a->model, p, PASS_FWD, a->micro_batch, a->seq_len, a->tp, a->ep,
                                  PREC_FP8, ops);
            else
                model_segment_ops(&a->model, seg, PASS_FWD, a->micro_batch, a->seq_len / a->cp,
                                  a->tp, PREC_FP8, ops);
            n += add_casts(d, ops, &casts);
        }
        ck_assert_msg(n >= 4 && casts > 0, "case %zu: %d casts", v, n);
        g_autoptr(SimRun) run = run_ok(a, -1);
        int l = cases[v].layer;
        double f0 = phase_s(run, 1, PHASE_FWD, l, 0), f1 = phase_s(run, 1, PHASE_FWD, l, 1);
        ck_assert_msg(fabs(f0 - f1 - casts) < 1e-11, "case %zu: micro 0 - 1 = %.9g s, casts %.9g s",
                      v, f0 - f1, casts);
        ck_assert_double_eq_tol(phase_s(run, 1, PHASE_RECOMPUTE, l, 0), f1, 1e-12);
        ck_assert_double_eq_tol(phase_s(run, 1, PHASE_RECOMPUTE, l, 1), f1, 1e-12);
    }
    /* DeepSpeed: every forward and recomputation casts */
    const char *ds[] = {"training.precision=fp8", "training.framework=deepspeed",
                        "training.synchronize_each_layer=false", NULL};
    const char *meg[] = {"training.precision=fp8", NULL};
    g_autoptr(Scenario) c = load_ok("llama3_70b_dgx_h100.yaml", ds);
    g_autoptr(Scenario) a = load_ok("llama3_70b_dgx_h100.yaml", meg);
    g_autoptr(SimRun) rc = run_ok(c, -1);
    g_autoptr(SimRun) ra = run_ok(a, -1);
    double f0 = phase_s(ra, 1, PHASE_FWD, 11, 0), g0 = phase_s(rc, 1, PHASE_FWD, 11, 0);
    ck_assert_double_eq_tol(g0, f0, 1e-12);
    ck_assert_double_eq_tol(phase_s(rc, 1, PHASE_FWD, 11, 1), f0, 1e-12);
    ck_assert_double_eq_tol(phase_s(rc, 1, PHASE_RECOMPUTE, 11, 3), f0, 1e-12);
}
END_TEST

int main(void) {
    Suite *s = suite_create("arch");
    TCase *tc = tcase_create("arch");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_published_counts);
    tcase_add_test(tc, test_tensors_add_up);
    tcase_add_test(tc, test_gqa_swiglu_ops);
    tcase_add_test(tc, test_alibi_embed_norm_ops);
    tcase_add_test(tc, test_gqa_swiglu_activations);
    tcase_add_test(tc, test_neox_defaults_explicit);
    tcase_add_test(tc, test_gqa_errors);
    tcase_add_test(tc, test_llama_scenarios_run);
    tcase_add_test(tc, test_precision);
    tcase_add_test(tc, test_fp8_weight_cache);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
