/* gathers: ZeRO-3's and FSDP's parameter gathers before each unit's use, planned per stage (the
 * window each framework prefetches in), coalesced as each framework calls them, with the Python
 * hooks they run per module or unit. Part of building a stage's program (workload.c). */
#include "workload_internal.h"
#include "zeropp.h"

/* --- ZeRO-3 parameters ---------------------------------------------------------------------- */

/* Parameters of unit u that are gathered (not kept whole under DeepSpeed's
 * stage3_param_persistence_threshold): fills sizes with its gathered tensors, returns how many. */
static int gathered_tensors(const Builder *b, const ParamUnit *u, double *sizes, int max) {
    double all[32];
    int n = model_unit_tensors(&b->sc->model, u, b->sc->seq_len, b->sc->tp, all, 32), k = 0;
    for (int i = 0; i < n; i++)
        if (all[i] >= b->sc->persist_elems && k < max)
            sizes[k++] = all[i];
    return k;
}

static double gathered_params(const Builder *b, const ParamUnit *u) {
    double sizes[32], sum = 0;
    int n = gathered_tensors(b, u, sizes, 32);
    for (int i = 0; i < n; i++)
        sum += sizes[i];
    return sum;
}

/* DeepSpeed does not release a module's parameters after a use when the module is used again
 * within stage3_max_reuse_distance elements of the trace (partitioned_param_coordinator.py
 * __params_to_release: it walks the trace from the released module on, counting every
 * parameter's ds_numel, and keeps each parameter met before the count reaches the distance). Use
 * j of a unit is therefore kept whole from its previous use p when the parameters of uses p..j-1
 * add up to less than the distance (a forward's last layers and the head before their backward,
 * the embedding from one micro-batch's backward to the next forward): it gathers nothing, and its
 * gathered parameters stay in the buffers over uses p+1..j (kept, a difference array). */
static void reuse_plan(Builder *b, double *kept) {
    const Scenario *sc = b->sc;
    guint n = b->uses->len;
    if (sc->max_reuse_elems <= 0)
        return;
    g_autofree double *cum = g_new0(double, n + 1); /* parameters of uses 0..j-1 */
    g_autofree gint64 *last = g_new(gint64, b->units->len);
    for (guint i = 0; i < b->units->len; i++)
        last[i] = -1;
    for (guint j = 0; j < n; j++) {
        UnitUse *u = &g_array_index(b->uses, UnitUse, j);
        const ParamUnit *pu = &g_array_index(b->units, ParamUnit, u->unit);
        cum[j + 1] = cum[j] + pu->params;
        gint64 p = last[u->unit];
        if (p >= 0 && cum[j] - cum[p] < sc->max_reuse_elems && !u->kept) {
            u->kept = TRUE;
            kept[p + 1] += gathered_params(b, pu);
            kept[j + 1] -= gathered_params(b, pu);
        }
        last[u->unit] = j;
    }
}

/* --- FSDP's root unit ----------------------------------------------------------------------- */

/* PyTorch FSDP1 (torch 2.0-2.4, torch/distributed/fsdp) wraps what the auto-wrap policy names
 * (transformer_auto_wrap_policy: each layer) in FullyShardedDataParallel instances of their own;
 * the parameters left over (the embedding, the final norm and the head, tied or not) belong to
 * the instance wrapping the whole model, which flattens its module's parameters less the nested
 * instances' FlatParameters (_init_utils.py _init_param_handle_from_module ->
 * _get_orig_params: "any FlatParameter s (which may be present due to nested FSDP wrapping)"
 * are skipped) and which _runtime_utils.py _lazy_init makes the root (state._is_root). They are
 * one FlatParameter: one allgather, one reduce-scatter. Per stage: the stage's units that are
 * not layers (both with one stage; the embedding or the head alone at the ends of a pipeline). */
static void root_prepare(Builder *b) {
    const Scenario *sc = b->sc;
    gboolean keep = sc->zero == 2 && b->fw->zero2_gathers_in_forward;
    b->fsdp_root = b->fw->gather == GATHER_FLAT_UNIT && b->unit_buckets && (sc->zero == 3 || keep);
    b->root_units = 0;
    b->root_params = 0;
    for (guint i = 0; b->fsdp_root && i < b->units->len; i++) {
        const ParamUnit *u = &g_array_index(b->units, ParamUnit, i);
        if (u->kind == UNIT_LAYER)
            continue;
        if (b->root_units++ == 0)
            b->root_first = i;
        b->root_params += gathered_params(b, u);
    }
    g_assert(b->root_units <= 2);
}

/* When the root's flat parameter is whole, over the stage's uses (whole[j]: during use j):
 * - _runtime_utils.py _pre_forward_unshard gathers it at the root's forward (its first unit's),
 *   issued there: nothing prefetches it (forward_prefetch False), and _root_pre_forward first
 *   makes the unshard stream wait for the compute stream (_wait_for_computation_stream), so its
 *   allgather starts after the compute before it (front = itself).
 * - _post_forward_reshard does not free it: free_unsharded_flat_param is `not state._is_root and
 *   handle._sharding_strategy in RESHARD_AFTER_FORWARD_HANDLE_STRATEGIES` ("Do not free the
 *   root's parameters in the post-forward for FULL_SHARD with the intention that they are
 *   immediately used for backward computation"), under FULL_SHARD and HYBRID_SHARD alike, so the
 *   head's forward, the head's backward and the embedding's backward gather nothing
 *   (FlatParamHandle.unshard returns at once when not needs_unshard(), _flat_param.py).
 * - Its _post_backward_hook runs once its gradient is whole, after the last of its units'
 *   backward (the embedding's with one stage): _post_backward_reshard frees it, since
 *   _should_free_in_backward is `state._sync_gradients or ... ` (FSDP syncs every micro-batch
 *   here), and _reduce_grad reduce-scatters it (grads.c grads_unit).
 * - A backward use that finds it sharded (the next micro-batch's backward after the previous
 *   one's reshard: GPipe, or pipelines with several micro-batches in flight) gathers it in its
 *   _pre_backward_hook, prefetched by the use before under BACKWARD_PRE when that one is a
 *   backward of the same micro-batch (front j - 1), else issued there (front j: under
 *   BACKWARD_POST the use before's post-backward hook issues it, at the same point; under None
 *   its own pre-backward hook, after the reduce-scatter before it, as fsdp_order). */
static void root_plan(Builder *b, gboolean *whole) {
    gboolean on = FALSE; /* the root's unsharded flat parameter exists */
    FsdpBackwardPrefetch bp = b->sc->fsdp_bwd_prefetch;
    for (guint j = 0; j < b->uses->len; j++) {
        UnitUse *u = &g_array_index(b->uses, UnitUse, j);
        if (u->root) {
            const UnitUse *p = j > 0 ? &g_array_index(b->uses, UnitUse, j - 1) : NULL;
            gboolean prefetched = u->bwd && p && p->bwd && !p->root && p->micro == u->micro;
            /* BACKWARD_POST prefetches it after the use before, as fsdp_order; None not at all */
            prefetched = prefetched && bp == FSDP_BWD_PRE;
            if (u->bwd && !on && bp == FSDP_BWD_NONE)
                u->wait = WAIT_REDUCE;
            u->kept = on;
            u->front = on || prefetched ? (j > 0 ? j - 1 : 0) : j;
            on = TRUE;
        }
        whole[j] = on;
        if (u->root && u->bwd && u->unit == b->root_first)
            on = FALSE; /* the post-backward reshard */
    }
}

/* --- FSDP's prefetch settings --------------------------------------------------------------- */

/* When FSDP1 (torch 2.0-2.4, torch/distributed/fsdp/_runtime_utils.py) gathers layer use j, and
 * what that gather waits for (u->front, u->wait); returns the layer units whole in the buffers
 * while it runs (their gathered parameters; the root's are counted apart). Every gather goes
 * through _unshard on the unshard stream, which waits for no compute (but in _root_pre_forward's
 * _wait_for_computation_stream, the root's gather); what holds it back is when the host issues
 * it and, with limit_all_gathers, _unshard's `state._free_event_queue.dequeue_if_needed()` and
 * `event.synchronize()`: the host blocks until the free event of the reshard two before it has
 * passed (_limiter_utils.py _FreeEventQueue: _max_num_inflight_all_gathers 2; _reshard records
 * the event on the compute stream after the unit's use). The executor's host does not block on
 * a task's dependencies, so the model puts that wait on the gather itself.
 * - Forward (_pre_forward_unshard gathers the unit unless prefetched, then _prefetch_handle in
 *   _PrefetchMode.FORWARD, which with forward_prefetch gathers the next unit in the recorded
 *   forward order before the current unit's forward runs): each gather waits for the reshard
 *   two gathers back, so without forward_prefetch gather j follows the end of use j - 2's
 *   compute (issued at use j - 1: the default, unchanged), with it the end of use j - 3's,
 *   issued at use j - 1 before its compute: three units whole instead of two. Without
 *   limit_all_gathers nothing waits: gather j is issued at use j (use j - 1 with
 *   forward_prefetch) and runs once the gather stream is free, as far ahead of the compute as
 *   the host is; the plan counts the pass's units up to j whole (an upper bound: how many are
 *   whole at once depends on how far the gathers run ahead of the compute that frees them).
 * - Backward (_pre_backward_hook gathers the unit unless prefetched, then _prefetch_handle in
 *   BACKWARD_PRE state; _post_backward_hook -> _post_backward_reshard reshards it, then
 *   _prefetch_handle in BACKWARD_POST state; _get_handle_to_prefetch picks the next unit in
 *   backward order only when `state.backward_prefetch` matches that state). One process group's
 *   NCCL collectives run one after another in issue order (api.py BackwardPrefetch: "contend
 *   for the same per-device NCCL stream"), and the reduce-scatter of the unit before is issued
 *   (_post_backward_hook, after its backward) before the gather is:
 *   - BACKWARD_PRE: gather j is issued at use j - 1's pre-backward hook, behind use j - 2's
 *     reduce-scatter, which starts as use j - 2's backward ends: front j - 1 after the compute
 *     before it (the default, unchanged; the limiter holds nothing further back here, so
 *     limit_all_gathers off changes nothing in backward). Two units whole.
 *   - BACKWARD_POST: issued in use j - 1's post-backward hook, after its gradient exists and
 *     before its reduce-scatter: gather j starts as use j - 1's backward ends (front j, after
 *     the compute before it), sharing the links with that reduce-scatter; use j - 1 is
 *     resharded first ("frees the current set of parameters before allocating memory for the
 *     next set"): one unit whole.
 *   - None: gathered in use j's own pre-backward hook, issued after use j - 1's reduce-scatter,
 *     which NCCL runs first: gather j waits for that reduce-scatter (WAIT_REDUCE), and use j's
 *     compute for the gather ("no overlap"). One unit whole.
 * What is not modelled: the limiter's block of the host (the kernels issued after it wait too,
 * which matters where the host is the bottleneck); the host's issue order without
 * forward_prefetch (FSDP issues gather j after use j - 1's kernels, the model before them). */
static double fsdp_order(Builder *b, guint j, const double *wp, double params) {
    const Scenario *sc = b->sc;
    UnitUse *u = &g_array_index(b->uses, UnitUse, j);
    const UnitUse *p = j > 0 ? &g_array_index(b->uses, UnitUse, j - 1) : NULL;
    double before = p && !p->root ? wp[j - 1] : 0; /* the default: use j - 1's and its own */
    u->front = j > 0 ? j - 1 : 0;
    if (!u->bwd && !sc->fsdp_limit_gathers) {
        u->front = sc->fsdp_fwd_prefetch ? u->front : j;
        u->wait = WAIT_NOTHING;
        double live = params; /* the pass's forward uses up to j */
        for (guint k = j; k > 0; k--) {
            const UnitUse *q = &g_array_index(b->uses, UnitUse, k - 1);
            if (q->bwd || q->micro != u->micro)
                break;
            live += q->root ? 0 : wp[k - 1];
        }
        return live;
    }
    if (!u->bwd && sc->fsdp_fwd_prefetch) {
        u->wait = j >= 3 ? WAIT_USE : WAIT_NOTHING;
        u->wait_use = j >= 3 ? j - 3 : 0;
        const UnitUse *q = j > 1 ? &g_array_index(b->uses, UnitUse, j - 2) : NULL;
        return before + (q && !q->root ? wp[j - 2] : 0) + params;
    }
    if (u->bwd && sc->fsdp_bwd_prefetch != FSDP_BWD_PRE) {
        u->front = j;
        u->wait = sc->fsdp_bwd_prefetch == FSDP_BWD_NONE ? WAIT_REDUCE : WAIT_ISSUE;
        return params;
    }
    return before + params;
}

/* ZeRO-3's (and FSDP's) parameter uses, planned before the program is built: a unit's forward,
 * and its recomputation and backward (one use), in program order. The gathers of use j are issued
 * when use front(j) starts (after the compute before it):
 * - DeepSpeed's PartitionedParameterCoordinator (partitioned_param_coordinator.py,
 *   fetch_sub_module) prefetches from its recorded trace while fewer than
 *   stage3_max_live_parameters are available: front(j) is the oldest use such that the
 *   parameters of uses front(j)..j and those kept whole at j (reuse distance) fit in that
 *   limit; with stage3_prefetch_bucket_size 0 nothing is prefetched and front(j) = j. Tensors
 *   under stage3_param_persistence_threshold are gathered once at start-up and stay whole (they
 *   count in the buffers, never in a gather). A use within stage3_max_reuse_distance of the
 *   unit's previous one gathers nothing (reuse_plan).
 * - FSDP (framework.c): front(j) = j - 1, the unit before it (its defaults; fsdp_order: its
 *   prefetch settings); with SHARD_GRAD_OP a unit gathered
 *   for its forward stays whole until its backward, which gathers nothing. The embedding and
 *   the head are the root's one flat parameter, whole from the micro-batch's forward to its
 *   last backward (root_plan).
 * The gathered buffers peak at the largest window plus what is kept whole (FSDP SHARD_GRAD_OP:
 * every unit; FULL_SHARD: the root over the micro-batch). */
void gathers_plan(Builder *b, const GArray *passes) {
    const Scenario *sc = b->sc;
    gboolean keep = sc->zero == 2 && b->fw->zero2_gathers_in_forward;
    root_prepare(b);
    if ((sc->zero != 3 && !keep) || sc->dp <= 1)
        return;
    b->uses = g_array_new(FALSE, FALSE, sizeof(UnitUse));
    for (guint p = 0; p < passes->len; p++) {
        const PassRef *pr = &g_array_index(passes, PassRef, p);
        if (pr->wgrad) /* dW = A^T dC reads no parameters */
            continue;
        guint lo = b->chunk_first[pr->chunk], hi = b->chunk_first[pr->chunk + 1];
        for (guint k = lo; k < hi; k++) {
            guint unit = pr->fwd ? k : hi - 1 - (k - lo);
            UnitUse use = {.unit = unit,
                           .micro = pr->micro,
                           .bwd = !pr->fwd,
                           .kept = keep && !pr->fwd,
                           .root = b->fsdp_root &&
                                   g_array_index(b->units, ParamUnit, unit).kind != UNIT_LAYER,
                           .gathered = NO_TASK,
                           .wait = WAIT_ISSUE,
                           .done = NO_TASK,
                           .dp0 = NO_TASK,
                           .rs = NO_TASK};
            g_array_append_val(b->uses, use);
        }
    }
    guint n = b->uses->len, first = 0;
    double live = 0, persistent = 0, all = 0;
    g_autofree gboolean *seen = g_new0(gboolean, b->units->len);
    for (guint i = 0; i < b->units->len; i++) {
        const ParamUnit *pu = &g_array_index(b->units, ParamUnit, i);
        all += pu->params;
        persistent += pu->params - gathered_params(b, pu);
    }
    /* wp[j]: what use j gathers; kept[j]: a difference array of the parameters DeepSpeed keeps
     * whole between two uses of a unit (reuse distance, below) */
    g_autofree double *wp = g_new0(double, n), *kept = g_new0(double, n + 1);
    g_autofree gboolean *whole = g_new0(gboolean, n); /* FSDP's root, during each use */
    if (b->fw->gather == GATHER_COORDINATOR)
        reuse_plan(b, kept);
    if (b->fsdp_root)
        root_plan(b, whole);
    double kept_live = 0;
    for (guint j = 0; j < n; j++) {
        UnitUse *u = &g_array_index(b->uses, UnitUse, j);
        u->again = seen[u->unit];
        seen[u->unit] = TRUE;
        double params = gathered_params(b, &g_array_index(b->units, ParamUnit, u->unit));
        if (u->root) /* the root's gather is all its units' */
            params = b->root_params;
        wp[j] = u->kept ? 0 : params;
        kept_live += kept[j];
        if (b->fw->gather == GATHER_FLAT_UNIT) {
            /* use j's gather is issued as use j - 1 starts: the two in the buffers then, the
             * root's counted apart while whole in either (root_plan); FSDP's prefetch settings
             * move it (fsdp_order) */
            const UnitUse *p = j > 0 ? &g_array_index(b->uses, UnitUse, j - 1) : NULL;
            double root = whole[j] || (p && whole[j - 1]) ? b->root_params : 0;
            double layers =
                u->root ? (p && !p->root ? wp[j - 1] : 0) : fsdp_order(b, j, wp, params);
            live = keep ? all : layers + root;
        } else {
            /* DeepSpeed prefetches up to stage3_max_live_parameters less __n_available_params,
             * which counts every fetched parameter not yet released, those the reuse distance
             * keeps whole included (fetch_sub_module, __all_gather_params, __release_param) */
            live += wp[j];
            while (first < j && live + kept_live > sc->max_live_elems)
                live -= wp[first++];
            if (sc->prefetch_elems <= 0) {
                first = j;
                live = wp[j];
            }
            u->front = first;
        }
        b->pg->gathered_peak = MAX(b->pg->gathered_peak, live + kept_live + persistent);
    }
}

/* Gather `n` elements of the use's parameters with one allgather (ZeRO++: its qwZ / hpZ steps) on
 * the gather stream after `after`; returns the last task. */
static guint32 gather_call(Builder *b, const UnitUse *u, const ParamUnit *pu, double n,
                           guint32 after) {
    ZppStep steps[ZPP_MAX_STEPS]; /* ZeRO++ qwZ / hpZ: quantized or within the node */
    int ns = zeropp_gather_steps(b->sc, b->dev, n, b->pe, u->again, steps);
    if (ns > 0)
        return emit_steps(b, STREAM_DP_GATHER, steps, ns, PHASE_PARAMS, unit_layer(b, pu), u->micro,
                          after);
    /* FSDP HYBRID_SHARD: _runtime_utils.py _unshard -> FlatParamHandle.unshard
     * (_flat_param.py _all_gather_flat_param) gathers over the handle's process_group, which
     * _init_utils.py _init_process_group_state_for_hybrid_shard makes the shard group
     * (DIM_DP_INTRA) */
    Dim dim = b->sc->fsdp_shard > 0 ? DIM_DP_INTRA : b->grad_dim;
    return collective_on(b, STREAM_DP_GATHER, COLL_ALLGATHER, dim, n * b->pe, PHASE_PARAMS,
                         unit_layer(b, pu), u->micro, after);
}

/* The program reaches the next ZeRO-3 use: issue the gathers of every use whose window starts
 * here (after the compute before it), and return the last gather this use waits for. Each use's
 * parameters are coalesced: FSDP's flat parameter is one allgather; DeepSpeed's coordinator
 * gathers each fetch's parameters with one all_gather_coalesced (partition_parameters.py), a fetch
 * taking tensors until it holds stage3_prefetch_bucket_size elements (one tensor each without
 * prefetch). */
guint32 gathers_use(Builder *b) {
    if (!b->uses)
        return NO_TASK;
    guint now = b->use_next++;
    g_assert(now < b->uses->len);
    UnitUse *cur = &g_array_index(b->uses, UnitUse, now), *prev = now > 0 ? cur - 1 : NULL;
    if (prev) { /* what the use before ran: its compute, and a reduction it issued */
        prev->done = b->last_compute;
        prev->rs = b->last_dp != prev->dp0 ? b->last_dp : NO_TASK;
    }
    cur->dp0 = b->last_dp;
    for (; b->gather_next < b->uses->len; b->gather_next++) {
        UnitUse *u = &g_array_index(b->uses, UnitUse, b->gather_next);
        if (u->front > now)
            break;
        if (u->kept)
            continue;
        guint32 after = b->last_compute; /* WAIT_ISSUE */
        if (u->wait == WAIT_USE) {
            g_assert(u->wait_use < now);
            after = g_array_index(b->uses, UnitUse, u->wait_use).done;
        } else if (u->wait == WAIT_NOTHING) {
            after = NO_TASK;
        } else if (u->wait == WAIT_REDUCE && prev && prev->rs != NO_TASK) {
            after = prev->rs;
        }
        const ParamUnit *pu = &g_array_index(b->units, ParamUnit, u->unit);
        if (u->root) { /* FSDP's root: one flat parameter over its units */
            u->gathered = gather_call(b, u, pu, b->root_params, after);
            continue;
        }
        double sizes[32], open = 0;
        int n = gathered_tensors(b, pu, sizes, 32);
        for (int k = 0; k < n; k++) {
            open += sizes[k];
            if (b->fw->gather == GATHER_FLAT_UNIT ? k + 1 < n
                                                  : open < b->sc->prefetch_elems && k + 1 < n)
                continue;
            u->gathered = gather_call(b, u, pu, open, after);
            open = 0;
        }
    }
    return g_array_index(b->uses, UnitUse, now).gathered;
}

/* ZeRO-3's (FSDP's) Python hooks for one use of unit u (framework_gather_hooks) go to the first
 * compute task the use emitted, from task index `from` on: the host runs them as it issues the
 * unit's work (Task.hooks, executor.c). FSDP's root runs its pair once per pass over all its
 * units (_pre_forward / _post_forward around the root's forward, _pre_backward_hook and
 * _post_backward_hook around its backward): one on each of its two units, both on a lone one. */
void gathers_hooks(Builder *b, const ParamUnit *u, guint32 from) {
    if (!b->uses)
        return;
    int hooks = framework_gather_hooks(b->sc->framework, model_unit_modules(&b->sc->model, u));
    if (b->fsdp_root && u->kind != UNIT_LAYER)
        hooks /= b->root_units;
    for (guint32 i = from; i < b->tasks.n; i++) {
        Task *t = &((Task *)b->tasks.v)[i];
        if (t->kind == TASK_COMPUTE) {
            t->hooks = (unsigned)MIN(t->hooks + hooks, 127);
            return;
        }
    }
}
