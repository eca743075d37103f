/* scenario: a YAML scenario, with the model and topology files it names and the command line's
 * --set overrides, validated into plain structs.
 *
 * For: everything a user can get wrong before the simulation starts. Every field has a unit and a
 * default documented in docs/scenarios.md; unknown keys, wrong units, negative sizes and impossible
 * layouts fail with FILE:LINE:COLUMN and what was expected (CONF_ERROR). */
#ifndef SIM_SCENARIO_H
#define SIM_SCENARIO_H

#include "conf.h"
#include "framework.h"
#include "model.h"
#include "schedule.h"
#include "topology.h"

/* ZeRO++ (Wang et al. 2023, arXiv 2306.10209) on top of ZeRO-3: parallel.zeropp, DeepSpeed's
 * zero_quantized_weights, zero_hpz_partition_size and zero_quantized_gradients. */
typedef struct {
    gboolean qwz; /* forward parameter allgathers in block-quantized int8 */
    int hpz;      /* secondary partition size in DP ranks (within a node); 0: hpZ off */
    gboolean qgz; /* gradients by the hierarchical int4 all-to-all instead of reduce-scatter */
    int local;    /* DP ranks of one intra-node group (hpZ partition; qgZ's first all-to-all);
                     0 when neither hpZ nor qgZ is on */
} ZeroPP;

/* parallel.cp_comm: TransformerEngine's cp_comm_type (Megatron-LM's --cp-comm-type): p2p, the
 * ring of KV exchanges overlapped with attention (AttnFuncWithCPAndKVP2P); all_gather, the KV
 * gathered before attention (AttnFuncWithCPAndKVAllGather). */
typedef enum { CP_COMM_P2P, CP_COMM_ALL_GATHER } CpComm;

/* training.fsdp_backward_prefetch: PyTorch FSDP1's BackwardPrefetch (scenario_fsdp.c) */
typedef enum { FSDP_BWD_PRE, FSDP_BWD_POST, FSDP_BWD_NONE } FsdpBackwardPrefetch;

/* sim.dedup_replicas: which ranks a run simulates (the representatives of sim/run/executor.c).
 * The values are sim_run's `dedup` argument too. */
typedef enum {
    DEDUP_OFF = 0,      /* false: every rank (--all-ranks) */
    DEDUP_ESTIMATE = 1, /* estimate: representatives, even where their replicas' pipeline sends
                           are uneven (UNEVEN COPIES in coll_streams.c: may overstate) */
    DEDUP_EXACT = 2,    /* true, the default: representatives where they are exact; a run whose
                           deduplicated sends turn out uneven is run again with every rank */
} Dedup;

typedef struct {
    char *path;        /* scenario file as given */
    char *description; /* free text from the file, may be NULL */
    char **sets;       /* the --set overrides applied, in order (NULL-terminated; NULL: none) */
    ModelConfig model;
    TopologySpec topo;
    int nodes;
    int gpus;       /* nodes x GPUs per node */
    int tp, pp, dp; /* tp x cp x pp x dp = gpus; dp without cp (Megatron's data-parallel size) */
    int zero;       /* 0 = DDP, 1, 2, 3 */
    int ep;         /* expert parallelism (parallel.ep): divides dp and the experts; 1 without */
    int cp;         /* context parallelism (parallel.cp, par_cp.c): 1 without; tp x cp x pp x dp =
                       gpus */
    CpComm cp_comm; /* parallel.cp_comm: how the KV reach the other CP ranks */
    PipeSchedule schedule;
    gboolean sequence_parallel; /* parallel.sequence_parallel: Megatron-LM's --sequence-parallel
                                   (Korthikanti et al. 2022); no effect at tp 1 */
    int tp_overlap_chunks; /* parallel.tp_comm_overlap: 0 off, else the chunks each producer GEMM
                              is split into, its collective's share issued after each (T3, Pati
                              et al. 2024; Megatron-LM's --tp-comm-overlap) */
    int virtual_stages;    /* parallel.virtual_stages: model chunks per pipeline stage under the
                              interleaved schedule (Megatron's
                              --num-layers-per-virtual-pipeline-stage = layers / (pp v)); 1 for
                              the others */
    gboolean pp_scatter_gather; /* parallel.pipeline_scatter_gather: each pipeline send split
                                   over the TP ranks and gathered at the receiver: 2021-2022
                                   Megatron-LM's scatter_gather_tensors_in_pipeline, DeepSpeed's
                                   partitioned pipeline tensors (its default: framework.h
                                   pipe_partitioned; workload.c p2p_task, pp_receive) */
    gboolean overlap_p2p_comm;  /* parallel.overlap_p2p_comm: Megatron-LM's overlap_p2p_comm under
                                   the interleaved schedule (pipeline sends and receives posted
                                   without waiting); FALSE: its batched, synchronised calls */
    FrameworkId framework;      /* training.framework: whose bucketing, overlap and prefetch */
    double bucket_bytes;        /* gradient bucket (DDP, ZeRO reduction), bytes */
    double prefetch_elems;      /* ZeRO-3: stage3_prefetch_bucket_size, elements (0: no prefetch) */
    double max_live_elems;      /* ZeRO-3: stage3_max_live_parameters, elements */
    double max_reuse_elems;   /* ZeRO-3: stage3_max_reuse_distance, elements (0: release always) */
    double persist_elems;     /* ZeRO-3: stage3_param_persistence_threshold, elements: smaller
                                 tensors stay whole on every rank (DeepSpeed) */
    ZeroPP zpp;               /* ZeRO++ switches (all off by default) */
    int fsdp_shard;           /* parallel.hybrid_shard: data-parallel ranks of one FSDP shard
                                 group (HYBRID_SHARD, _HYBRID_SHARD_ZERO2; divides dp, at least 2,
                                 less than dp); 0: off, one group of every DP rank (FULL_SHARD,
                                 SHARD_GRAD_OP) */
    gboolean comms_logger;    /* DeepSpeed's comms_logger: a device-wide synchronize after every
                                 deepspeed.comm call (workload.c) */
    gboolean sync_each_layer; /* GPT-NeoX synchronize_each_layer: device-wide synchronize at every
                                 checkpointed layer's forward and backward boundaries */
    int micro_batch;          /* sequences per micro-batch per rank */
    int grad_accum;           /* micro-batches per rank per iteration */
    int64_t global_batch;     /* sequences per iteration: micro_batch x grad_accum x dp (the CP
                                 ranks of a replica share its sequences) */
    int seq_len;              /* tokens per sequence */
    double token_budget;      /* tokens to train on (training.token_budget), 0: none given; the
                                 report's time to train */
    ConfNode *resolved;       /* the tree it was loaded from (scenario_resolve), owned: the JSON
                                 report's resolved_scenario */
    Precision precision;
    Recompute recompute;
    Dedup dedup_replicas;   /* simulate one data-parallel replica and count it dp times */
    gboolean contention;    /* links shared max-min fairly (else each flow alone) */
    gboolean group_in_step; /* tensor-parallel ranks in step run as one (GROUPS IN STEP, gang.c) */
    gboolean detailed;      /* collectives step by step (else one aggregated flow) */
    gboolean steady_state;  /* a 1F1B pipeline's repeating micro-batches extrapolated from one
                               short run where they repeat (STEADY STATE, sim/run/steady.c) */
    gboolean host;          /* host dispatch modelled (topology node.host); off: kernels start
                               when their GPU dependencies allow */
    gboolean interference;  /* compute slowed while communication runs (device interference) */

    /* PyTorch FSDP1's prefetch settings (scenario_fsdp.c; what they change: gathers.c) */
    FsdpBackwardPrefetch fsdp_bwd_prefetch; /* training.fsdp_backward_prefetch */
    gboolean fsdp_fwd_prefetch;             /* training.fsdp_forward_prefetch */
    gboolean fsdp_limit_gathers;            /* training.fsdp_limit_all_gathers: FSDP's rate
                                               limiter, two unit gathers in flight */
} Scenario;

/* The scenario's tree with the sets applied and the model, topology and device files it names
 * read in (what scenario_load validates; `sim --print-scenario` writes it). NULL and err on a file
 * or set error; the tree is not validated. */
ConfNode *scenario_resolve(const char *path, char *const *sets, GError **err);

/* For a scenario with an `import:` key: the comment block `sim import` writes for that file
 * (what was not mapped, the defaults chosen), for the caller to print; NULL when there is no
 * import (or it fails: loading the scenario reports that). */
char *scenario_import_notes(const char *path);

/* Load path, apply sets ("KEY=VALUE", NULL-terminated, may be NULL) in order, validate. */
Scenario *scenario_load(const char *path, char *const *sets, GError **err);
void scenario_free(Scenario *s);

/* Load a topology alone (for `sim collective`): ref is a name under topologies/ or a path; sets
 * ("KEY=VALUE", keys relative to the topology, a leading "topology." allowed) refine it. On success
 * fills *out (clear it with topo_spec_clear). */
gboolean scenario_load_topology(const char *ref, char *const *sets, TopologySpec *out,
                                GError **err);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Scenario, scenario_free)

/* A topology's `device:` block n into d (scenario_device.c): a mapping, or a scalar naming a
 * device file, which scenario_load_device_file (scenario.c) finds and loads. */
ConfNode *scenario_load_device_file(const ConfNode *ref, GError **err);
gboolean scenario_load_device(const ConfNode *n, DeviceSpec *d, GError **err);

/* The topology's `collectives.rings` block n (may be NULL) into t->coll.rings_node and
 * rings_nodes (scenario_rings.c); needs t's gpus_per_node and nics. */
/* scenario_topology.c: a topology file's node, fabric and collectives blocks. */
/* scenario_moe.c: the model's moe mapping (n may be NULL: a dense model). parallel.ep and its
 * checks are expert parallelism's entry of scenario_par.h. */
gboolean scenario_load_moe(const ConfNode *n, ModelConfig *m, GError **err);
/* The node of key `key` in section `sect` of root, else the section's, else root: where an error
 * about the key points. */
const ConfNode *scenario_at(const ConfNode *root, const char *sect, const char *key);
/* The keys of the parallel block, each parallelism's, are read and checked by its entry of
 * scenario_par.h (scenario_tp.c, scenario_cp.c, scenario_pipe.c, scenario_moe.c, scenario_dp.c).
 * What the reports say of them beyond tp, pp and dp, from the same entries in their order: */
typedef struct {
    const char *key; /* the JSON key in the report's parallel block */
    double num;      /* its value where str is NULL */
    const char *str;
} ScenarioParKey;
#define SCENARIO_PAR_KEYS 10 /* at most this many in all */
/* The keys of the parallelisms the scenario turns on into keys; returns how many */
int scenario_par_report(const Scenario *s, ScenarioParKey *keys);
/* Their part of the text report's layout line into buf (n bytes), "" where none adds one */
void scenario_par_describe(const Scenario *s, char *buf, size_t n);
/* sim search's dimensions beyond tp, pp and dp: the parallelisms the scenario opens to it by
 * setting their size above 1 (scenario_par.h, search_fits). Their names (the key parallel.NAME,
 * the table's column) into names, in table order; returns how many. */
#define SCENARIO_SEARCH_DIMS 4
int scenario_search_dims(const Scenario *s, const char **names);
/* Whether size (a power of 2 above 1) of search dimension name fits s's model and batch */
gboolean scenario_search_fits(const Scenario *s, const char *name, int size);

gboolean scenario_load_topology_spec(const ConfNode *n, TopologySpec *t, GError **err);
gboolean scenario_load_rings(const ConfNode *n, TopologySpec *t, GError **err);

/* The topology's `collectives.model` block n (may be NULL: no model) into t->coll.model_*
 * (scenario_rings.c). */
gboolean scenario_load_coll_model(const ConfNode *n, TopologySpec *t, GError **err);

/* parallel.zeropp (scenario_zeropp.c): the block par (may hold no zeropp key) into s->zpp,
 * checked against the layout already in s (zero, dp, tp, GPUs per node). It, hybrid_shard and
 * scenario_load_fsdp are read by data parallelism's entry (scenario_dp.c). */
gboolean scenario_load_zeropp(const ConfNode *par, Scenario *s, GError **err);
/* scenario_zeropp.c: parallel.hybrid_shard from the block par into s->fsdp_shard (after the
 * framework, zero and the layout are known). */
gboolean scenario_load_hybrid_shard(const ConfNode *par, Scenario *s, GError **err);
/* scenario_fsdp.c: training.fsdp_backward_prefetch, fsdp_forward_prefetch and
 * fsdp_limit_all_gathers from the block tr (after the framework and zero are known). */
#define SCENARIO_FSDP_KEYS                                                                         \
    "fsdp_backward_prefetch", "fsdp_forward_prefetch", "fsdp_limit_all_gathers"
gboolean scenario_load_fsdp(const ConfNode *tr, Scenario *s, GError **err);
const char *scenario_fsdp_bwd_prefetch_name(FsdpBackwardPrefetch p);

const char *scenario_precision_name(Precision p);
const char *scenario_recompute_name(Recompute r);

#endif
