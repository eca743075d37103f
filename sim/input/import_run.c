/* import_run: the parallel and training sections of `sim import`'s scenario (import.c has the
 * sources of the names and defaults): TP, PP, ZeRO and its sizes, Megatron-LM's interleaving and
 * sequence parallelism, precision, batch, sequence length, recompute, and the nodes. */
#include <string.h>

#include "conf.h"
#include "import_internal.h"
#include "scenario_par.h"

/* The layers of the end stages: Megatron-LM's --decoder-first-pipeline-num-layers and
 * --decoder-last-pipeline-num-layers, or Megatron-DeepSpeed's --pp-partition-method (DeepSpeed's
 * PipelineModule partition_method): "type:transformer|embedding" weighs the embedding and the
 * head as a layer each, so where pp divides layers + 2 every stage holds (layers + 2) / pp parts
 * and the end stages one layer fewer; "uniform" and "type:transformer" split the layers
 * evenly. */
static gboolean write_stage_split(Im *im, GString *p, const Run *r, int64_t layers, GError **err) {
    ImportItem *first = im_take(im, "decoder_first_pipeline_num_layers", NULL),
               *last = im_take(im, "decoder_last_pipeline_num_layers", NULL),
               *method = im_take(im, "pp_partition_method", "partition_method", NULL);
    int64_t n;
    if (first) {
        if (!im_as_int(first, 1, 1 << 20, &n, err))
            return FALSE;
        im_put_int(p, "first_stage_layers", n, first->key);
    }
    if (last) {
        if (!im_as_int(last, 1, 1 << 20, &n, err))
            return FALSE;
        im_put_int(p, "last_stage_layers", n, last->key);
    }
    if (!method || first || last)
        return TRUE;
    g_autofree char *v = g_ascii_strdown(method->value, -1);
    g_strstrip(g_strdelimit(v, "'\"", ' '));
    if (!strcmp(v, "uniform") || !strcmp(v, "type:transformer"))
        return TRUE;
    if (strcmp(v, "type:transformer|embedding"))
        return im_fail(err, method,
                       "the simulator splits the layers evenly (uniform, type:transformer) or "
                       "as type:transformer|embedding does");
    if (r->pp < 2 || layers <= 0 || (layers + 2) % r->pp != 0 || (layers + 2) / r->pp < 2)
        return im_fail(err, method,
                       "type:transformer|embedding with pipeline parallelism %" G_GINT64_FORMAT
                       " and %" G_GINT64_FORMAT " layers: the simulator needs pp to divide the "
                       "layers + 2 parts (the embedding and the head weigh as a layer each)",
                       r->pp, layers);
    int64_t ends = (layers + 2) / r->pp - 1;
    im_put_int(p, "first_stage_layers", ends, method->key);
    im_put_int(p, "last_stage_layers", ends, method->key);
    return TRUE;
}

/* Megatron-LM's interleaved schedule (megatron/training/arguments.py): the model chunks per rank
 * come from --num-layers-per-virtual-pipeline-stage N as layers / (pp N), or directly from
 * --num-virtual-stages-per-pipeline-rank; and its --sequence-parallel. */
gboolean import_write_megatron_layout(Im *im, GString *p, const Run *r, int64_t layers,
                                      GError **err) {
    if (!write_stage_split(im, p, r, layers, err))
        return FALSE;
    if (!im_put_switch(im, p, "sequence_parallel", "sequence_parallel", err))
        return FALSE;
    ImportItem *per = im_take(im, "num_layers_per_virtual_pipeline_stage", NULL),
               *direct = im_take(im, "num_virtual_stages_per_pipeline_rank", NULL);
    int64_t v = 0, n;
    if (direct && !im_as_int(direct, 1, 1 << 20, &v, err))
        return FALSE;
    if (per) {
        if (!im_as_int(per, 1, 1 << 20, &n, err))
            return FALSE;
        if (layers <= 0 || layers % (r->pp * n) != 0)
            return im_fail(err, per,
                           "%" G_GINT64_FORMAT
                           " layers per virtual stage with pipeline parallelism "
                           "%" G_GINT64_FORMAT " needs a layer count that pp x %" G_GINT64_FORMAT
                           " divides (%" G_GINT64_FORMAT ")",
                           n, r->pp, n, layers);
        v = layers / (r->pp * n);
    }
    /* --no-overlap-p2p-communication: arguments.py's store_false into overlap_p2p_comm, which
     * only the interleaved schedule reads (parallel.overlap_p2p_comm, on there by default) */
    ImportItem *no_ov = im_take(im, "no_overlap_p2p_communication", NULL);
    gboolean off = FALSE;
    if (no_ov && !im_as_bool(no_ov, &off, err))
        return FALSE;
    if (v > 1) {
        ImportItem *from = per ? per : direct;
        im_put(p, "schedule", "interleaved", from->key);
        im_put_int(p, "virtual_stages", v, from->key);
        if (off)
            im_put(p, "overlap_p2p_comm", "false", no_ov->key);
    }
    return TRUE;
}

/* Argument a's value (one of its entry's values) to key a->key of p */
static gboolean put_choice(GString *p, const ScenarioParArg *a, ImportItem *it, GError **err) {
    if (g_strv_contains(a->values, it->value)) {
        im_put(p, a->key, it->value, it->key);
        return TRUE;
    }
    g_autoptr(GString) list = g_string_new(NULL);
    for (int i = 0; a->values[i]; i++)
        g_string_append_printf(list, "%s%s",
                               i == 0             ? ""
                               : a->values[i + 1] ? ", "
                                                  : " or ",
                               a->values[i]);
    return im_fail(err, it, "expected %s (%s)", list->str, a->unmodelled);
}

/* The arguments of the parallelisms whose entries declare them (scenario_par.h, import_args:
 * context parallelism's) into p; r->mp and mp_label receive their sizes' product and labels. */
static gboolean write_par_args(Im *im, GString *p, Run *r, GError **err) {
    r->mp = 1;
    r->mp_label[0] = '\0';
    for (const ScenarioPar *const *e = scenario_pars; *e; e++) {
        const ScenarioParArg *a = (*e)->import_args;
        if (!a)
            continue;
        ImportItem *size = im_take(im, a->arg, NULL);
        int64_t n = 1;
        if (size && !im_as_int(size, 1, 1 << 20, &n, err))
            return FALSE;
        if (n > 1) {
            im_put_int(p, a->key, n, size->key);
            r->mp *= n;
            size_t at = strlen(r->mp_label);
            g_snprintf(r->mp_label + at, sizeof r->mp_label - at, " x %s %" G_GINT64_FORMAT,
                       (*e)->label, n);
        }
        for (a++; a->arg; a++) {
            ImportItem *it = im_take(im, a->arg, NULL);
            if (it && n == 1)
                it->used = FALSE; /* nothing to say at size 1: listed as not mapped */
            else if (it && !put_choice(p, a, it, err))
                return FALSE;
        }
    }
    return TRUE;
}

gboolean import_write_parallel(Im *im, GString *p, Run *r, GError **err) {
    if (!im_int_of(im, p, "tp", 1, 1 << 20, 1, NULL, &r->tp, err, "model_parallel_size",
                   "tensor_model_parallel_size", NULL))
        return FALSE;
    ImportItem *pp = im_take(im, "pipe_parallel_size", "pipeline_model_parallel_size", NULL);
    r->pp = 1;
    if (pp) {
        if (!im_as_int(pp, 0, 1 << 20, &r->pp, err))
            return FALSE;
        /* GPT-NeoX: 0 runs without the pipeline engine, one stage */
        im_put_int(p, "pp", MAX(r->pp, 1), r->pp ? pp->key : "pipe_parallel_size 0: no pipeline");
        r->pp = MAX(r->pp, 1);
    }
    if (!write_par_args(im, p, r, err))
        return FALSE;
    /* Megatron-LM's FSDP. --use-megatron-fsdp (--use-custom-fsdp before its rename) with
     * --data-parallel-sharding-strategy (megatron/training/arguments.py, default no_shard):
     * optim_grads_params is Megatron-FSDP, zero 3 under framework megatron (framework.c), optim
     * the distributed optimizer's sharding (zero 1), no_shard plain DDP (zero 0); optim_grads
     * (ZeRO-2) is not modelled. --use-torch-fsdp2 wraps the model in PyTorch's FSDP2, whose
     * per-parameter sharding is not modelled (FSDP1 is: framework pytorch). Either, simulated as
     * Megatron's DDP, would be silently wrong: refused. */
    ImportItem *t2 = im_take(im, "use_torch_fsdp2", NULL), *mf = NULL;
    gboolean on = FALSE;
    if (t2 && !im_as_bool(t2, &on, err))
        return FALSE;
    if (on)
        return im_fail(err, t2,
                       "PyTorch FSDP2 (per-parameter sharding) is not modelled; Megatron-FSDP is "
                       "(--use-megatron-fsdp --data-parallel-sharding-strategy "
                       "optim_grads_params), and PyTorch FSDP1 (training.framework: pytorch "
                       "with parallel.zero 3 or 2)");
    static const char *const mfsdp[] = {"use_megatron_fsdp", "use_custom_fsdp"};
    for (size_t i = 0; i < G_N_ELEMENTS(mfsdp); i++) {
        ImportItem *it = im_take(im, mfsdp[i], NULL);
        gboolean yes = FALSE;
        if (it && !im_as_bool(it, &yes, err))
            return FALSE;
        if (yes)
            mf = it;
    }
    ImportItem *strat = im_take(im, "data_parallel_sharding_strategy", NULL);
    int fsdp_zero = -1; /* the zero stage Megatron-FSDP's strategy gives; -1: no Megatron-FSDP */
    if (mf) {
        static const char *const names[] = {"no_shard", "optim", "optim_grads",
                                            "optim_grads_params"};
        const char *v = strat ? strat->value : "no_shard";
        for (int z = 0; z < 4; z++)
            if (!strcmp(v, names[z]))
                fsdp_zero = z;
        if (fsdp_zero < 0)
            return im_fail(err, strat,
                           "expected no_shard, optim, optim_grads or optim_grads_params");
        if (fsdp_zero == 2)
            return im_fail(err, strat,
                           "Megatron-FSDP's optim_grads (ZeRO-2) is not modelled; "
                           "optim_grads_params (ZeRO-3) and optim are");
    } else if (strat) {
        strat->used = FALSE; /* without Megatron-FSDP it shards nothing: listed as not mapped */
    }
    /* expert parallelism: Megatron-LM's --expert-model-parallel-size, the scenario's parallel.ep
     * (the scenario checks it against the experts) */
    ImportItem *ep = im_take(im, "expert_model_parallel_size", NULL);
    int64_t v;
    if (ep) {
        if (!im_as_int(ep, 1, 1 << 20, &v, err))
            return FALSE;
        im_put_int(p, "ep", v, ep->key);
    }
    ImportItem *dist = im_take(im, "use_distributed_optimizer", NULL);
    if (fsdp_zero >= 0) {
        r->zero = fsdp_zero;
        g_autofree char *from = g_strdup_printf("%s, data_parallel_sharding_strategy %s", mf->key,
                                                strat ? strat->value : "no_shard");
        im_put_int(p, "zero", fsdp_zero, from);
    } else if (!im_int_of(im, p, "zero", 0, 3, dist ? 1 : 0, NULL, &r->zero, err,
                          "zero_optimization.stage", NULL)) {
        return FALSE;
    }
    if (dist && !strstr(p->str, "zero:"))
        im_put(p, "zero", "1", "use_distributed_optimizer: optimizer state sharded over DP");
    /* ZeRO-Offload and ZeRO-Infinity (DeepSpeed's zero_optimization.offload_optimizer and
     * offload_param, device cpu or nvme; the older cpu_offload and cpu_offload_params) move the
     * optimizer step to the host CPU and parameters over each node's CPU-GPU links: not modelled,
     * and simulating the run as GPU-resident ZeRO would be silently wrong */
    static const char *const offload[] = {
        "zero_optimization.offload_optimizer.device", "zero_optimization.offload_param.device",
        "zero_optimization.cpu_offload", "zero_optimization.cpu_offload_params"};
    for (size_t i = 0; i < G_N_ELEMENTS(offload); i++) {
        ImportItem *it = im_take(im, offload[i], NULL);
        if (!it || !g_ascii_strcasecmp(it->value, "none") ||
            !g_ascii_strcasecmp(it->value, "false"))
            continue;
        return im_fail(err, it,
                       "offloading to the host (ZeRO-Offload, ZeRO-Infinity) is not modelled: "
                       "the optimizer step on the CPU and the transfers over the CPU-GPU links "
                       "would be missing; set the device to none to simulate GPU-resident ZeRO");
    }
    static const struct {
        const char *key, *name;
        gboolean bytes; /* DeepSpeed gives elements; the scenario key is a size */
    } sizes[] = {
        {"bucket_size", "zero_optimization.reduce_bucket_size", TRUE},
        {"prefetch_bucket_size", "zero_optimization.stage3_prefetch_bucket_size", FALSE},
        {"max_live_parameters", "zero_optimization.stage3_max_live_parameters", FALSE},
        {"persistence_threshold", "zero_optimization.stage3_param_persistence_threshold", FALSE},
        {"max_reuse_distance", "zero_optimization.stage3_max_reuse_distance", FALSE}};
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        ImportItem *it = im_take(im, sizes[i].name, NULL);
        int64_t v;
        if (!it)
            continue;
        if (!im_as_int(it, 0, INT64_C(1) << 50, &v, err))
            return FALSE;
        g_autofree char *from =
            sizes[i].bytes ? g_strdup_printf("%s: %" G_GINT64_FORMAT " elements x %d bytes",
                                             it->key, v, r->elem_bytes)
                           : g_strdup(it->key);
        im_put_int(p, sizes[i].key, sizes[i].bytes ? v * r->elem_bytes : v, from);
    }
    return TRUE;
}

/* Whether the file sets key to DeepSpeed's "auto" (im_take passes over such a setting). */
static gboolean is_auto(const Im *im, const char *key) {
    for (guint i = 0; i < im->items->len; i++) {
        const ImportItem *it = im->items->pdata[i];
        if (!strcmp(it->key, key) && !strcmp(it->value, "auto"))
            return TRUE;
    }
    return FALSE;
}

gboolean import_write_precision(Im *im, GString *t, Run *r, GError **err) {
    ImportItem *fp16 = im_take(im, "fp16.enabled", "fp16", NULL),
               *bf16 = im_take(im, "bf16.enabled", "bf16", NULL),
               *prec = im_take(im, "precision", NULL),
               *fp8 = im_take(im, "fp8_format", "fp8", "fp8_hybrid", "fp8_e4m3", NULL);
    gboolean on16 = FALSE, onb = FALSE;
    if ((fp16 && !im_as_bool(fp16, &on16, err)) || (bf16 && !im_as_bool(bf16, &onb, err)))
        return FALSE;
    const char *name = NULL, *from = NULL;
    if (fp8) {
        name = "fp8", from = fp8->key;
    } else if (prec) {
        g_autofree char *low = g_ascii_strdown(prec->value, -1);
        name = strstr(low, "bf") ? "bf16" : strstr(low, "16") ? "fp16" : "fp32";
        from = prec->key;
    } else if (onb || on16) {
        name = onb ? "bf16" : "fp16", from = (onb ? bf16 : fp16)->key;
    } else if (im->fmt == IMPORT_HF) {
        ImportItem *dt = im_take(im, "torch_dtype", NULL);
        name = "bf16";
        im_chose(im, "precision", "bf16",
                 dt ? "torch_dtype is the checkpoint's, not the training's"
                    : "config.json says nothing of training precision");
        from = "default";
    } else if (is_auto(im, "fp16.enabled") || is_auto(im, "bf16.enabled")) {
        /* the Hugging Face Trainer fills "auto" from its --bf16 / --fp16 (transformers
         * integrations/deepspeed.py, trainer_config_process): the training is in half precision
         * when the config leaves it to the Trainer; bf16 on the GPUs modelled */
        name = "bf16";
        im_chose(im, "precision", "bf16",
                 "fp16 / bf16 \"auto\": the Hugging Face Trainer's --bf16 or --fp16 decides; "
                 "bf16 assumed (--set training.precision=fp16 or fp32 otherwise)");
        from = "default";
    } else {
        name = "fp32";
        im_chose(im, "precision", "fp32", "neither fp16 nor bf16 is enabled");
        from = "default";
    }
    r->elem_bytes = strcmp(name, "fp32") ? 2 : 4;
    im_put(t, "precision", name, from);
    return TRUE;
}

gboolean import_write_training(Im *im, GString *t, Run *r, GError **err) {
    if (!im_int_of(im, t, "micro_batch", 1, 1 << 20, 1, "the file gives no micro-batch", &r->micro,
                   err, "train_micro_batch_size_per_gpu", "micro_batch_size", NULL) ||
        !im_int_of(im, t, "grad_accum", 1, 1 << 24, 0, NULL, &r->accum, err,
                   "gradient_accumulation_steps", "gas", NULL))
        return FALSE;
    ImportItem *gb = im_take(im, "train_batch_size", "global_batch_size", NULL);
    r->global = 0;
    if (gb && !im_as_int(gb, 1, INT64_C(1) << 40, &r->global, err))
        return FALSE;
    if (gb && !r->accum) {
        im_put_int(t, "global_batch", r->global, gb->key);
    } else if (gb) { /* both: accumulation written; the global batch fixes DP (nodes) */
        /* DeepSpeed refuses a batch that is not micro x accumulation x DP (its config.py,
         * _batch_assertion); a 63 with micro 2 and accumulation 2 was dropped without a word */
        if (r->global % (r->micro * r->accum) != 0)
            return im_fail(err, gb,
                           "the global batch must be micro-batch %" G_GINT64_FORMAT
                           " x accumulation %" G_GINT64_FORMAT " x data-parallel size, as "
                           "DeepSpeed checks; %" G_GINT64_FORMAT
                           " is no multiple of %" G_GINT64_FORMAT,
                           r->micro, r->accum, r->global, r->micro * r->accum);
        r->global_dp = gb;
    }
    ImportItem *seq = im_take(im, "seq_length", "seq_len", NULL);
    if (seq) {
        if (!im_as_int(seq, 1, 1 << 24, &r->seq, err))
            return FALSE;
        im_put_int(t, "seq_len", r->seq, seq->key);
    } else {
        ImportItem *maxp = im_take(im, "max_position_embeddings", "n_positions", NULL);
        int64_t mp = 2048;
        if (maxp && !im_as_int(maxp, 1, 1 << 24, &mp, err))
            return FALSE;
        r->seq = MIN(mp, 8192);
        g_autofree char *why = g_strdup_printf("no training sequence length; %s",
                                               maxp ? "max_position_embeddings, at most 8192"
                                                    : "the scenario default");
        g_autofree char *s = g_strdup_printf("%" G_GINT64_FORMAT, r->seq);
        im_chose(im, "seq_len", s, why);
        im_put(t, "seq_len", s, "default");
    }
    ImportItem *ck = im_take(im, "checkpoint_activations", NULL),
               *gran = im_take(im, "recompute_granularity", NULL),
               *sel = im_take(im, "recompute_activations", NULL);
    gboolean on = FALSE;
    if (gran) {
        g_autofree char *low = g_ascii_strdown(gran->value, -1);
        if (strcmp(low, "full") && strcmp(low, "selective"))
            return im_fail(err, gran, "expected full or selective");
        im_put(t, "recompute", low, gran->key);
    } else if (sel) {
        if (!im_as_bool(sel, &on, err))
            return FALSE;
        im_put(t, "recompute", on ? "selective" : "none", sel->key);
    } else if (ck) {
        if (!im_as_bool(ck, &on, err))
            return FALSE;
        im_put(t, "recompute", on ? "full" : "none", ck->key);
    }
    ImportItem *sync = im_take(im, "synchronize_each_layer", NULL);
    if (sync) {
        if (!im_as_bool(sync, &on, err))
            return FALSE;
        im_put(t, "synchronize_each_layer", on ? "true" : "false", sync->key);
    }
    /* DeepSpeed's communication logger (its config's comms_logger section, which GPT-NeoX passes
     * through): a device synchronisation around every logged call */
    ImportItem *logger = im_take(im, "comms_logger.enabled", NULL);
    if (logger) {
        if (!im_as_bool(logger, &on, err))
            return FALSE;
        im_put(t, "comms_logger", on ? "true" : "false", logger->key);
    }
    im_put(t, "framework", im->fmt == IMPORT_MEGATRON ? "megatron" : "deepspeed",
           im->fmt == IMPORT_MEGATRON ? "Megatron-LM arguments"
           : im->fmt == IMPORT_HF     ? "default"
                                      : "GPT-NeoX and DeepSpeed run DeepSpeed");
    if (im->fmt == IMPORT_HF)
        im_chose(im, "framework", "deepspeed", "config.json names no trainer");
    return TRUE;
}

/* Nodes: given, or the fewest that hold TP x PP x DP, DP from the global batch when the file
 * gives it with the micro-batch and accumulation (DeepSpeed's train_batch_size =
 * micro x accumulation x DP), else 1. */
gboolean import_nodes_for(Im *im, const ImportOptions *opt, const Run *r, int64_t *nodes,
                          GError **err) {
    ImportItem *nn = im_take(im, "nnodes", NULL); /* torchrun's, before the script */
    /* the nodes given: the global batch no longer sets DP; listed as not mapped, not dropped */
    if ((opt->nodes > 0 || nn) && r->global_dp)
        r->global_dp->used = FALSE;
    if (opt->nodes > 0) {
        *nodes = opt->nodes;
        if (nn)
            nn->used = FALSE;
        return TRUE;
    }
    if (nn) {
        if (!im_as_int(nn, 1, 1 << 24, nodes, err))
            return FALSE;
        g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, *nodes);
        im_chose(im, "nodes", v, "torchrun's --nnodes");
        return TRUE;
    }
    TopologySpec topo;
    if (!scenario_load_topology(opt->topology ? opt->topology : "frontier", NULL, &topo, err))
        return FALSE;
    int64_t gpn = topo.gpus_per_node, dp = 1;
    topo_spec_clear(&topo);
    if (r->global_dp)
        dp = r->global / (r->micro * r->accum);
    /* each factor up to 2^20 (DP 2^40): their product may not fit in 64 bits */
    double ranks = (double)r->tp * (double)r->mp * (double)r->pp * (double)dp;
    if (ranks > (double)(1 << 20) * (double)gpn) { /* a scenario's nodes: 1 to 2^20 */
        g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE,
                    "%s: TP %" G_GINT64_FORMAT "%s x PP %" G_GINT64_FORMAT " x DP %" G_GINT64_FORMAT
                    " needs %.4g GPUs, more than 1048576 nodes of %" G_GINT64_FORMAT " hold",
                    im->path, r->tp, r->mp_label, r->pp, dp, ranks, gpn);
        return FALSE;
    }
    /* the fewest nodes that hold the ranks and whose GPUs the model-parallel size divides (the
     * scenario's DP is GPUs / (TP x PP), every GPU a rank): DP grows where it must */
    int64_t model = r->tp * r->mp * r->pp; /* at most ranks: it fits */
    *nodes = ((int64_t)ranks + gpn - 1) / gpn;
    while ((*nodes * gpn) % model != 0)
        (*nodes)++;
    int64_t dp_run = *nodes * gpn / model;
    g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, *nodes);
    g_autofree char *grown = dp_run > dp
                                 ? g_strdup_printf(", DP %" G_GINT64_FORMAT " to fill them", dp_run)
                                 : g_strdup("");
    g_autofree char *why = g_strdup_printf(
        "the fewest that hold TP %" G_GINT64_FORMAT "%s x PP %" G_GINT64_FORMAT
        " x DP %" G_GINT64_FORMAT " at %" G_GINT64_FORMAT " GPUs per node%s%s; --nodes N sets it",
        r->tp, r->mp_label, r->pp, dp, gpn, dp > 1 ? " (DP from the global batch)" : "", grown);
    im_chose(im, "nodes", v, why);
    return TRUE;
}
