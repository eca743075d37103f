/* scenario_tp: tensor parallelism's part of the scenario (scenario_par.h): parallel.tp,
 * sequence_parallel and tp_comm_overlap, and what the model and the other keys must allow.
 *
 * For: reading and checking; what tensor and sequence parallelism run is par_tp.c's (with its
 * sources). */
#include "scenario_par.h"

static const char *const keys[] = {"tp", "sequence_parallel", "tp_comm_overlap", NULL};

static gboolean load(const ConfNode *par, Scenario *s, GError **err) {
    s->tp = 1;
    return conf_int32(par, "tp", FALSE, 1, 1 << 20, &s->tp, err) &&
           conf_bool(par, "sequence_parallel", FALSE, &s->sequence_parallel, err) &&
           conf_int32(par, "tp_comm_overlap", FALSE, 0, 64, &s->tp_overlap_chunks, err);
}

static int size(const Scenario *s) {
    return s->tp;
}

/* Megatron-LM splits the heads, the key/value groups and the MLP width over the TP ranks. */
static gboolean check_layout(const ConfNode *root, Scenario *s, GError **err) {
    const ModelConfig *m = &s->model;
    const ConfNode *tpn = scenario_at(root, "parallel", "tp");
    if (m->heads % s->tp != 0)
        return conf_fail(err, CONF_ERROR_INVALID, tpn,
                         "tensor parallelism %d does not divide the %d attention heads of %s; "
                         "use a TP size that divides %d",
                         s->tp, m->heads, m->name, m->heads);
    if (model_kv_heads(m) % s->tp != 0)
        return conf_fail(err, CONF_ERROR_INVALID, tpn,
                         "tensor parallelism %d does not divide the %d key/value heads of %s "
                         "(Megatron-LM splits the query groups over TP ranks); use a TP size "
                         "that divides %d",
                         s->tp, model_kv_heads(m), m->name, model_kv_heads(m));
    if (m->ffn_hidden % s->tp != 0)
        return conf_fail(err, CONF_ERROR_INVALID, tpn,
                         "tensor parallelism %d does not divide the MLP width %d of %s", s->tp,
                         m->ffn_hidden, m->name);
    return TRUE;
}

static gboolean check(const ConfNode *root, Scenario *s, GError **err) {
    if (s->sequence_parallel && s->model.parallel_residual)
        return conf_fail(
            err, CONF_ERROR_INVALID, scenario_at(root, "parallel", "sequence_parallel"),
            "sequence_parallel with %s's parallel residual is not modelled (Megatron-LM "
            "runs sequence parallelism on sequential residual blocks)",
            s->model.name);
    if (s->tp_overlap_chunks == 1)
        return conf_fail(err, CONF_ERROR_VALUE, scenario_at(root, "parallel", "tp_comm_overlap"),
                         "tp_comm_overlap is the number of chunks a producer GEMM is split into: "
                         "0 (off) or at least 2");
    if (s->sequence_parallel && s->seq_len % s->tp != 0) /* Megatron-LM's arguments.py rule */
        return conf_fail(err, CONF_ERROR_INVALID,
                         scenario_at(root, "parallel", "sequence_parallel"),
                         "sequence parallelism splits the %d tokens over TP %d, which does not "
                         "divide them; choose seq_len a multiple of tp",
                         s->seq_len, s->tp);
    return TRUE;
}

const ScenarioPar scenario_par_tp = {.name = "tp",
                                     .keys = keys,
                                     .load = load,
                                     .size = size,
                                     .label = "TP",
                                     .label_always = TRUE,
                                     .check_layout = check_layout,
                                     .check = check};
