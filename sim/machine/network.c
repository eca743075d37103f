/* network: flows, the links in use and their flow lists, the load builder, link statistics.
 * The max-min solver that sets the flows' rates is net_solver.c.
 *
 * A flow's completion event carries its version; a rate change bumps the version and moves the
 * event, so a superseded one is ignored. A flow alone on the links that couple (SLACK_MARGIN)
 * gets its rate here without a solve; otherwise the links it changes are marked dirty and solved
 * once at the end of the instant (a zero-delay solve event).
 *
 * EXCLUSIVE LINKS. Most links a borrowed load set loads are its own: a tensor-parallel group's
 * ring over its node's switch ports, a pipeline pair's NIC ports; no other set ever touches them.
 * While a set has one flow live, that flow alone is on them, so what it would write there
 * (its crossing, the weight and bound sums) changes no decision: it is alone on them, they join
 * no component but through it, and a solve that reaches the flow puts it there first
 * (net_flow_materialise, from the solver's collection walk), as does a second flow of the set or
 * another set's first use of one of the links. So the set's one live flow is `lazy`: activation and
 * completion skip its exclusive links, O(shared loads) instead of O(loads). Their byte counts
 * are kept once per set and weight (LoadInfo.acc): every exclusive link of a weight carries the
 * same flows in the same order, so the same sum, bit for bit, as per link; a link that stops
 * being exclusive takes that sum and goes on from it. Rates, times and statistics are the same
 * to the bit (test_exclusive_links_change_nothing). */
#include "network_internal.h"

#include <math.h>
#include <string.h>

#include "bigmem.h"

/* Room for cap links in lk, lx, lstat and lbytes, the links in use kept (bigmem.h: the links in
 * use are the first ones, so each huge page a link first touches serves the next thousands). */
static void links_reserve(Network *net, uint32_t cap) {
    Link *lk = bigmem_new0(cap, sizeof(Link)); /* 64-byte aligned, as Link needs */
    LinkScratch *lx = bigmem_new0(cap, sizeof(LinkScratch));
    LinkStat *lstat = bigmem_new0(cap, sizeof(LinkStat));
    if (net->nlk) { /* the links in use alone: the rest is zero both sides */
        memcpy(lk, net->lk, sizeof(Link) * net->nlk);
        memcpy(lx, net->lx, sizeof(LinkScratch) * net->nlk);
        memcpy(lstat, net->lstat, sizeof(LinkStat) * net->nlk);
    }
    bigmem_free(net->lk);
    bigmem_free(net->lx);
    bigmem_free(net->lstat);
    net->lk = lk;
    net->lx = lx;
    net->lstat = lstat;
    size_t stripes = ((size_t)cap + 7) / 8, used = ((size_t)net->nlk + 7) / 8;
    double *b = bigmem_new0(stripes * 8, NET_CLASSES * sizeof(double));
    if (used)
        memcpy(b, net->lbytes, used * 8 * NET_CLASSES * sizeof(double));
    bigmem_free(net->lbytes);
    net->lbytes = b;
    net->clk = cap;
}

/* A machine of up to this many links gets room for all of them at once (no copy as links come
 * into use): the arrays' pages cost nothing until a link is first used, and a run that uses many
 * links has them on huge pages (bigmem.h). Larger machines (up to TOPO_MAX_LINKS) start with room
 * for that many and grow, so that the reservation stays under 700 MB of address space. */
#define LINKS_RESERVED (1u << 22)

static void activate(Engine *eng, void *ctx, uint64_t slot);
static void on_flow_done(Engine *eng, void *ctx, uint64_t arg);
static void unearly(Network *net, LoadInfo *x);

/* READ AHEAD (engine.c): a flow's start or end reads its record first, fetched while the event
 * before it runs (arg: the slot in its low 32 bits, for both). */
static void hint_flow(const void *ctx, uint64_t arg) {
    const Network *net = ctx;
    const char *f = (const char *)flow_at(net, (uint32_t)arg);
    for (size_t b = 0; b < sizeof(Flow); b += 64)
        __builtin_prefetch(f + b);
}

Network *net_new(Engine *eng, const Topology *topo) {
    Network *net = g_new0(Network, 1);
    net->eng = eng;
    net->topo = topo;
    net->sharing = TRUE;
    net->classes = TRUE;
    net->exclusive = TRUE;
    net->local = TRUE;
    net->early = TRUE;
    net->nlinks = topo_links(topo);
    /* zeroed, not filled: a fresh mapping's pages stay untouched until a link is used, and on
     * huge pages (bigmem.h) a traffic that reaches every node, as a DP ring does, faults in one
     * page per 2 MiB instead of one per 4 KiB (at 9,408 nodes two arrays of 1.9 MB) */
    net->dense_of = bigmem_new0(MAX(net->nlinks, 1), sizeof(uint32_t));
    net->slot_of = bigmem_new0(MAX(net->nlinks, 1), sizeof(uint32_t));
    links_reserve(net, MIN((uint32_t)MAX(net->nlinks, 1), LINKS_RESERVED));
    net->builder = g_array_new(FALSE, FALSE, sizeof(NetLoad));
    net->unit = topo_stream_weight(topo);
    net->dunit = net->unit;
    net->info_of = g_hash_table_new(g_direct_hash, g_direct_equal);
    net->infos = g_ptr_array_new();
    net->arena = bigarena_new();
    engine_hint(eng, activate, hint_flow);
    engine_hint(eng, on_flow_done, hint_flow);
    return net;
}

void net_free(Network *net) {
    if (!net)
        return;
    for (uint32_t i = 0; i < net->nflows; i++) {
        Flow *f = flow_at(net, i);
        if (f->owned)
            g_free((NetLoad *)f->loads);
    }
    bigmem_free(net->lk);
    bigmem_free(net->lx);
    bigmem_free(net->lstat);
    bigmem_free(net->lbytes);
    bigmem_free(net->dense_of);
    g_hash_table_unref(net->info_of);
    g_ptr_array_unref(net->infos);
    bigarena_free(net->arena); /* the load sets' facts, coupling and crossing lists */
    bigmem_free(net->slot_of);
    bigmem_free(net->fl);
    g_free(net->free_slots.v);
    g_free(net->dirty.v);
    g_free(net->dflows.v);
    g_free(net->order.v);
    g_free(net->stack.v);
    g_free(net->comp_links.v);
    g_free(net->comp_flows.v);
    g_free(net->cls_key.v);
    g_free(net->cls);
    g_free(net->heap.v);
    g_array_unref(net->builder);
    g_free(net);
}

void net_set_solver_classes(Network *net, gboolean on) {
    net->classes = on;
}

void net_set_exclusive_links(Network *net, gboolean on) {
    net->exclusive = on;
}

void net_set_local_solves(Network *net, gboolean on) {
    net->local = on;
}

void net_set_early_activation(Network *net, gboolean on) {
    net->early = on;
}

uint64_t net_early_flows(const Network *net) {
    return net->early_flows;
}

void net_set_link_room(Network *net, uint32_t links) {
    g_assert(net->nlk == 0 && links > 0);
    links_reserve(net, links);
}

void net_set_sharing(Network *net, gboolean on) {
    net->sharing = on;
}

void net_set_flow_observer(Network *net, NetFlowFn fn, void *ctx) {
    net->flow_fn = fn;
    net->flow_ctx = ctx;
}

uint32_t net_flows_alive(const Network *net) {
    return net->nflows - net->free_slots.n;
}

uint64_t net_solves(const Network *net) {
    return net->solves;
}

uint64_t net_solved_links(const Network *net) {
    return net->solved_links;
}

/* A flow's bound in the links' sums: its rate alone rounded up, capped at 2^62 (a link of 2^61
 * bytes/s or more is never slack: link_dense). */
static inline uint64_t flow_ub(const Flow *f) {
    return f->lone < 0x1p62 ? (uint64_t)ceil(f->lone) : (uint64_t)1 << 62;
}

/* COUPLING LISTS. The solver's walk follows a flow's links that couple (tight ones, with the
 * shortcuts on) and fixes rates on them alone (a fraction of its loads: docs/speed.md, "Network
 * solver"). So each live flow keeps the list of its loads on such links (Flow.tl), and a
 * link that turns tight or slack moves all its crossings into or out of their flows' lists: O(flows
 * on it) per turn instead of O(loads) per flow per solve. Invariant: a live flow's list holds
 * exactly its loads that are on their link (not lazy) and on a link that couples; the order is any
 * (the solver's result does not depend on it: see net_solver.c). net_set_solver_classes must come
 * before the first flow. */
static inline void tl_add(Flow *f, uint32_t i) {
    f->tpos[i] = f->ntl;
    f->tl[f->ntl++] = (TightLoad){i, f->dl[i], f->loads[i].weight, f->loads[i].link};
}

static inline void tl_del(Flow *f, uint32_t i) {
    uint32_t p = f->tpos[i];
    TightLoad last = f->tl[--f->ntl]; /* the last fills in */
    f->tl[p] = last;
    f->tpos[last.load] = p;
}

/* Link l turns tight (t) or slack: its crossings' loads go into or out of their flows' lists
 * (with the shortcuts off every link couples, and nothing moves). */
static __attribute__((noinline)) void link_turn(Network *net, Link *l, uint8_t t) {
    l->tight = t;
    if (!net->classes)
        return;
    for (uint32_t k = 0; k < l->nfl; k++) {
        Flow *g = flow_at(net, l->fl[k].flow);
        if (t)
            tl_add(g, l->fl[k].load);
        else
            tl_del(g, l->fl[k].load);
    }
}

/* Link l's tightness after its bound sum changed. A link with no flow left on it turns without
 * a call (a lone flow's links, at its end). */
static inline void link_retight(Network *net, Link *l) {
    uint8_t t = !(link_ubsum(l) < l->slack_below);
    if (t == l->tight)
        return;
    if (l->nfl == 0)
        l->tight = t;
    else
        link_turn(net, l, t);
}

/* The lk index of link id, making it on first use (lk may move: hold indices, not pointers). */
static uint32_t link_dense(Network *net, int32_t id) {
    if (net->dense_of[id])
        return net->dense_of[id] - 1;
    if (net->nlk == net->clk) /* more than LINKS_RESERVED in use */
        links_reserve(net, MIN(2 * net->clk, (uint32_t)net->nlinks));
    uint32_t d = net->nlk++;
    double cap = topo_link_capacity(net->topo, id);
    /* a link of 2^61 bytes/s or more is never slack: ub is capped at 2^62 (flow_ub) */
    double lim = cap * net->dunit;
    net->lk[d] = (Link){.id = id,
                        .cap = cap,
                        /* an integer below x is below ceil(x), and x < 2^61 fits */
                        .slack_below =
                            lim > 0 && lim < 0x1p61 ? (uint64_t)ceil(lim * (1 - SLACK_MARGIN)) : 0};
    net->lx[d] = (LinkScratch){0};
    net->lstat[d] = (LinkStat){LINK_UNUSED, 0}; /* its byte counts: zero from links_reserve */
    net->dense_of[id] = d + 1;
    return d;
}

/* A link's crossing list doubles in the arena (ARENA PIECES), the old piece left there: at most
 * as many bytes again as the lists' final sizes. */
static void crossing_add(Network *net, Link *l, Crossing c) {
    if (l->nfl == l->cfl) {
        uint32_t cap = l->cfl ? 2 * l->cfl : 4;
        l->fl = bigarena_regrow(net->arena, l->fl, l->nfl, cap, sizeof(Crossing));
        l->cfl = cap;
    }
    l->fl[l->nfl++] = c;
}

/* --- load builder -------------------------------------------------------------------------- */

void net_loads_reset(Network *net) {
    for (guint i = 0; i < net->builder->len; i++)
        net->slot_of[g_array_index(net->builder, NetLoad, i).link] = 0;
    g_array_set_size(net->builder, 0);
}

static void load_add(Network *net, int32_t id, uint32_t w) {
    if (net->slot_of[id]) {
        g_array_index(net->builder, NetLoad, net->slot_of[id] - 1).weight += w;
    } else {
        net->slot_of[id] = net->builder->len + 1;
        NetLoad ld = {id, w};
        g_array_append_val(net->builder, ld);
    }
}

/* O(links) per path; an adaptive in-group split adds 3 loads: the direct link (1 unit of the
 * stream's S - 1), the source switch's out-port and the destination's in-port (S - 2 units each),
 * as topology.c says. */
void net_loads_add_path(Network *net, const TopoPath *path) {
    for (int i = 0; i < path->n; i++)
        load_add(net, path->link[i], net->unit);
    if (path->spread_group < 0)
        return;
    int g = path->spread_group, a = path->spread_a, b = path->spread_b;
    load_add(net, topo_local_link(net->topo, g, a, b), 1);
    load_add(net, topo_port_link(net->topo, g, a, TRUE), net->unit - 1);
    load_add(net, topo_port_link(net->topo, g, b, FALSE), net->unit - 1);
}

void net_loads_scale(Network *net, uint32_t factor) {
    for (guint i = 0; i < net->builder->len; i++)
        g_array_index(net->builder, NetLoad, i).weight *= factor;
}

void net_loads_add(Network *net, const NetLoad *loads, int n) {
    for (int i = 0; i < n; i++)
        load_add(net, loads[i].link, loads[i].weight);
}

double net_loads_link_pace(const Network *net, int32_t link) {
    uint32_t s = net->slot_of[link];
    uint32_t w = s ? g_array_index(net->builder, NetLoad, s - 1).weight : net->unit;
    return topo_link_capacity(net->topo, link) * net->dunit / (double)MAX(w, 1u);
}

const NetLoad *net_loads_get(Network *net, int *n) {
    *n = (int)net->builder->len;
    return (const NetLoad *)net->builder->data;
}

/* --- flows --------------------------------------------------------------------------------- */

/* Per stream: capacity x unit / weight at the tightest link (unit 1: capacity / weight). */
static double alone_rate(const Network *net, const NetLoad *loads, int n) {
    double r = G_MAXDOUBLE;
    for (int i = 0; i < n; i++)
        r = MIN(r, topo_link_capacity(net->topo, loads[i].link) * net->dunit / loads[i].weight);
    return r;
}

double net_loads_alone_rate(const Network *net, const NetLoad *loads, int n) {
    return alone_rate(net, loads, n);
}

SimTime net_time_at_rate(double bytes, double rate, SimTime latency) {
    if (bytes <= 0) /* no loads: rate G_MAXDOUBLE, so bytes / rate rounds to 0 ps as well */
        return latency;
    return sim_time_add(latency, sim_time_from_s(bytes / rate));
}

SimTime net_flow_time_alone(const Network *net, const NetLoad *loads, int n, double bytes,
                            SimTime latency) {
    return net_time_at_rate(bytes, alone_rate(net, loads, n), latency);
}

void net_schedule_finish(Network *net, guint32 slot) {
    Flow *f = flow_at(net, slot);
    f->version++;
    SimTime dt = f->rate > 0 ? sim_time_from_s(MAX(f->remaining, 0.0) / f->rate) : SIM_TIME_MAX / 4;
    uint64_t arg = (uint64_t)f->version << 32 | slot;
    if (f->ev_armed) {
        engine_move(net->eng, f->ev, dt, arg);
    } else {
        f->ev = engine_schedule_movable(net->eng, dt, on_flow_done, net, arg);
        f->ev_armed = 1;
    }
}

/* A solve at the end of this instant (one, however many changes come before it). */
static void schedule_solve(Network *net) {
    if (!net->solve_pending) {
        net->solve_pending = TRUE;
        engine_schedule(net->eng, 0, net_solve, net, 0);
    }
}

/* Lk index d lost a flow: its flows are solved again if it fixed rates (FILLED LINKS in
 * net_solver.c). */
static void mark_dirty(Network *net, uint32_t d) {
    if (net->lk[d].filled || !net->local)
        vec_push(&net->dirty, d);
    schedule_solve(net);
}

/* The rate net_solve gives a flow alone on its links, by the same arithmetic (so the same bits):
 * the link of the smallest share capacity / weight (lowest id among equals) fills first and
 * fixes it at capacity x unit / weight. O(loads). */
static double lone_rate(const Network *net, const NetLoad *loads, const uint32_t *dl, int n) {
    double best = 0;
    int32_t best_link = -1;
    for (int i = 0; i < n; i++) {
        double share = net->lk[dl[i]].cap / (double)loads[i].weight;
        if (best_link < 0 || share < best || (share == best && loads[i].link < best_link)) {
            best = share;
            best_link = loads[i].link;
        }
    }
    for (int i = 0; i < n; i++)
        if (loads[i].link == best_link)
            return MAX(net->lk[dl[i]].cap, 0.0) * net->dunit / (double)loads[i].weight;
    return G_MAXDOUBLE; /* no loads */
}

/* Put a registered flow's load i on its link: its crossing, weight and bound (ub: flow_ub), and
 * the load on its coupling list if the link couples (COUPLING LISTS). Returns whether it is alone
 * there or the link does not couple. */
static inline gboolean load_on(Network *net, Flow *f, uint32_t slot, int i, uint64_t ub) {
    Link *l = &net->lk[f->dl[i]];
    uint32_t w = f->loads[i].weight;
    crossing_add(net, l, (Crossing){slot, w, (uint32_t)i});
    l->wtot += w;
    if (!net->sharing)
        return TRUE;
    gboolean was = couples(net, l); /* a link only turns tight as its sum grows */
    unsigned __int128 u = link_ubsum(l) + (unsigned __int128)ub * w;
    link_set_ubsum(l, u);
    if (!was && l->nfl == 1 && !(u < l->slack_below)) { /* its own crossing turns it */
        l->tight = 1;
        was = TRUE;
    } else {
        link_retight(net, l); /* a turn lists every crossing, this one too */
    }
    if (was)
        tl_add(f, (uint32_t)i);
    return l->nfl == 1 || !couples(net, l);
}

void net_flow_materialise(Network *net, guint32 slot) {
    Flow *f = flow_at(net, slot);
    LoadInfo *x = f->info;
    g_assert(f->lazy && x && x->lazy == (int32_t)slot);
    g_assert(f->last <= engine_now(net->eng)); /* not early: unearly() comes first */
    uint64_t ub = flow_ub(f);
    for (uint32_t k = 0; k < x->nexcl; k++)
        load_on(net, f, slot, (int)x->eidx[k], ub);
    f->lazy = 0;
    x->lazy = -1;
}

/* Link d is used by a flow with its own loads or by another load set than its owner: no longer
 * exclusive. Its owner's lazy flow goes on it first; it takes its owner's byte counts. */
static void link_share(Network *net, uint32_t d) {
    LinkStat *ls = &net->lstat[d];
    if (ls->owner >= 0) {
        LoadInfo *x = g_ptr_array_index(net->infos, ls->owner);
        unearly(net, x);
        if (x->lazy >= 0)
            net_flow_materialise(net, (guint32)x->lazy);
        for (int c = 0; c < NET_CLASSES; c++)
            *link_bytes(net, c, d) = x->acc[x->wc[ls->owner_load]][c];
        x->excl[ls->owner_load] = 0;
        x->sidx[x->n - x->nexcl] = ls->owner_load;                        /* one more shared */
        uint32_t k = x->epos[ls->owner_load], last = x->eidx[--x->nexcl]; /* the last fills in */
        x->eidx[k] = last;
        x->epos[last] = k;
    }
    ls->owner = LINK_SHARED;
}

/* A live flow's coupling list (COUPLING LISTS), empty, its block kept with the slot. */
static void flow_lists(Network *net, Flow *f) {
    f->ntl = 0;
    if ((uint32_t)f->n > f->tl_cap) {
        /* a power of 2 (n <= INT_MAX: it fits): a slot's old pieces (ARENA PIECES) are at most
         * its last */
        size_t cap = 4;
        while (cap < (size_t)f->n)
            cap *= 2;
        f->tl_cap = (uint32_t)cap;
        f->tl = bigarena_alloc(net->arena, cap * (sizeof(TightLoad) + sizeof(uint32_t)));
    }
    f->tpos = (uint32_t *)(f->tl + f->tl_cap);
}

/* EARLY ACTIVATION. A borrowed flow whose set's links are all exclusive (EXCLUSIVE LINKS), with
 * no other flow of the set live or waiting out its latency, is activated when it starts, as of
 * the end of its latency (its `last`): activate() would find it alone, make it the set's lazy flow
 * and give it its lone rate, all the same whenever it runs, and nothing reads the flow or those
 * links before then but a second flow of the set activating or a link becoming shared. So its
 * completion is scheduled at start + latency + bytes / lone, the same picosecond, and one event
 * (the activation's) is saved. If either of those comes while it is still early (its `last` in
 * the future), unearly() puts it back to where it would be, waiting to activate at `last`.
 * docs/speed.md, "Early activation". */
static gboolean early_ok(const Network *net, const LoadInfo *x, int n, double bytes, double lone,
                         SimTime latency) {
    if (!x || n <= 0 || x->nexcl != (uint32_t)n || bytes <= 0 || !net->sharing || !net->classes ||
        !net->early || x->live || x->lazy >= 0 || x->waiting || !(lone > 0))
        return FALSE;
    SimTime now = engine_now(net->eng), dt = sim_time_from_s(bytes / lone);
    return latency < SIM_TIME_MAX / 4 && dt < SIM_TIME_MAX / 4 && now < SIM_TIME_MAX / 4;
}

static void activate_early(Network *net, guint32 slot, SimTime latency) {
    Flow *f = flow_at(net, slot);
    LoadInfo *x = f->info;
    f->last = engine_now(net->eng) + latency;
    f->live = TRUE;
    flow_lists(net, f);
    x->live++;
    f->lazy = 1;
    x->lazy = (int32_t)slot;
    f->rate = f->lone;
    f->version++; /* as net_schedule_finish, from the end of the latency */
    SimTime dt = sim_time_from_s(f->remaining / f->rate);
    f->ev = engine_schedule_movable(net->eng, latency + dt, on_flow_done, net,
                                    (uint64_t)f->version << 32 | slot);
    f->ev_armed = 1;
    net->early_flows++;
}

/* Set x's lazy flow, if it is still early, back to waiting for its activation. */
static void unearly(Network *net, LoadInfo *x) {
    Flow *f = x->lazy >= 0 ? flow_at(net, (guint32)x->lazy) : NULL;
    SimTime now = engine_now(net->eng);
    if (!f || f->last <= now) /* none, or activated as of now: as activate() left it */
        return;
    guint32 slot = (guint32)x->lazy;
    f->version++; /* its completion event is stale */
    f->ev_armed = 0;
    /* no rate until it activates: the solve that places it then must schedule its completion,
     * which it does only for a flow whose rate changes or is 0 (net_solver.c). Left at its lone
     * rate, a solve that gave it that same rate scheduled nothing and the flow never ended. */
    f->rate = 0;
    f->live = FALSE;
    f->lazy = 0;
    x->live--;
    x->lazy = -1;
    x->waiting++;
    net->early_flows--;
    engine_schedule(net->eng, f->last - now, activate, net, slot);
}

static void activate(Engine *eng, void *ctx, uint64_t slot) {
    Network *net = ctx;
    Flow *f = flow_at(net, slot);
    f->last = engine_now(eng);
    if (f->info)
        f->info->waiting--;
    if (f->n == 0 || f->bytes <= 0) { /* nothing to move: done now */
        f->rate = G_MAXDOUBLE;
        f->remaining = 0;
        net_schedule_finish(net, (guint32)slot);
        return;
    }
    f->live = TRUE;
    uint64_t ub = flow_ub(f);
    flow_lists(net, f);
    /* its set's only live flow stays off the set's exclusive links (EXCLUSIVE LINKS above); a
     * second one puts the first on them */
    LoadInfo *x = f->info;
    if (x) {
        unearly(net, x);
        if (x->lazy >= 0)
            net_flow_materialise(net, (guint32)x->lazy);
        if (x->live++ == 0 && x->nexcl > 0 && net->sharing && net->classes) {
            f->lazy = 1;
            x->lazy = (int32_t)slot;
        }
    }
    gboolean alone = TRUE;                 /* no other flow on a link that couples */
    const gboolean sharing = net->sharing; /* a local: stores to links may alias the network */
    if (f->lazy) /* its set's shared loads alone (it is alone on the others) */
        for (uint32_t k = 0, n = x->n - x->nexcl; k < n; k++)
            alone &= load_on(net, f, (uint32_t)slot, (int)x->sidx[k], ub);
    else
        for (int i = 0; i < f->n; i++)
            alone &= load_on(net, f, (uint32_t)slot, i, ub);
    if (!sharing) {
        f->rate = alone_rate(net, f->loads, f->n);
        net_schedule_finish(net, (guint32)slot);
        return;
    }
    if (alone) { /* its own component: what a solve would give it, without one */
        f->rate = f->lone;
        net_schedule_finish(net, (guint32)slot);
        return;
    }
    vec_push(&net->dflows, (uint32_t)slot); /* the solve starts from it and its tight links */
    schedule_solve(net);
}

static void flow_start(Network *net, const NetLoad *loads, LoadInfo *info, const uint32_t *dl,
                       double lone, gboolean owned, int n, double bytes, SimTime latency, int cls,
                       NetDoneFn done, void *ctx, uint64_t arg) {
    g_assert(bytes >= 0 && latency >= 0 && cls >= 0 && cls < NET_CLASSES);
    for (int i = 0; net->flow_fn && i < n; i++) {
        double cap = topo_link_capacity(net->topo, loads[i].link);
        if (cap > 0)
            net->flow_fn(net->flow_ctx, loads[i].link,
                         per_unit(net, bytes * loads[i].weight) / cap * SIM_PS_PER_S,
                         engine_now(net->eng) + latency, engine_now(net->eng));
    }
    Flow f = {0};
    f.loads = loads;
    f.info = info;
    f.dl = dl;
    f.lone = lone;
    f.owned = (uint8_t)owned;
    f.n = n;
    f.cls = cls;
    f.bytes = f.remaining = bytes;
    f.done = done;
    f.ctx = ctx;
    f.arg = arg;
    guint32 slot;
    if (net->free_slots.n) {
        slot = net->free_slots.v[--net->free_slots.n];
        const Flow *old = flow_at(net, slot);
        f.version = old->version;
        f.tl = old->tl; /* the slot's list block, for reuse */
        f.tl_cap = old->tl_cap;
        *flow_at(net, slot) = f;
    } else {
        if (net->nflows == net->cflows)
            net->fl = bigmem_double(net->fl, &net->cflows, sizeof(Flow), "flows");
        slot = net->nflows++;
        *flow_at(net, slot) = f;
    }
    if (early_ok(net, info, n, bytes, lone, latency)) {
        activate_early(net, slot, latency);
        return;
    }
    if (info)
        info->waiting++;
    engine_schedule(net->eng, latency, activate, net, slot);
}

/* The lk index of each load's link, making links on first use. */
static void dense_all(Network *net, const NetLoad *loads, int n, uint32_t *dl) {
    for (int i = 0; i < n; i++)
        dl[i] = link_dense(net, loads[i].link);
}

void net_flow(Network *net, const NetLoad *loads, int n, double bytes, SimTime latency, int cls,
              NetDoneFn done, void *ctx, uint64_t arg) {
    /* one block: the loads' copy, then their lk indices */
    size_t nn = (size_t)MAX(n, 0);
    NetLoad *copy = g_malloc(MAX(nn * (sizeof(NetLoad) + sizeof(uint32_t)), 1));
    if (nn)
        memcpy(copy, loads, nn * sizeof(NetLoad));
    uint32_t *dl = (uint32_t *)(copy + nn);
    dense_all(net, copy, n, dl);
    for (int i = 0; i < n; i++) /* its links are no load set's alone */
        if (net->lstat[dl[i]].owner != LINK_SHARED)
            link_share(net, dl[i]);
    flow_start(net, copy, NULL, dl, lone_rate(net, copy, dl, n), TRUE, n, bytes, latency, cls, done,
               ctx, arg);
}

/* A borrowed load set's info: its links (made on first use), its rate alone, and its claim on
 * every link no one has used yet (exclusive); a link some other set claimed is shared from now. */
static LoadInfo *info_new(Network *net, const NetLoad *loads, int n) {
    /* one piece (ARENA PIECES): the facts, then five arrays of words and two of bytes by load */
    size_t nn = (size_t)MAX(n, 0), m = MAX(nn, 1);
    char *p = bigarena_alloc(net->arena, sizeof(LoadInfo) + m * (5 * sizeof(uint32_t) + 2));
    LoadInfo *x = (LoadInfo *)p;
    G_STATIC_ASSERT(sizeof(LoadInfo) % sizeof(uint32_t) == 0);
    *x = (LoadInfo){.lazy = -1, .n = (uint32_t)nn};
    uint32_t *w = (uint32_t *)(p + sizeof(LoadInfo));
    x->dl = w;
    x->eidx = w + m;
    x->sidx = w + 2 * m;
    x->epos = w + 3 * m;
    x->wval = w + 4 * m;
    x->excl = (uint8_t *)(w + 5 * m);
    x->wc = x->excl + m;
    memset(x->excl, 0, m);
    dense_all(net, loads, n, x->dl);
    x->lone = lone_rate(net, loads, x->dl, n);
    int32_t id = (int32_t)net->infos->len;
    g_ptr_array_add(net->infos, x);
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < x->nw && x->wval[k] != loads[i].weight)
            k++;
        gboolean own = x->nw < G_MAXUINT8 || k < x->nw; /* too many weights to keep apart: shared */
        if (k == x->nw && own)
            x->wval[x->nw++] = loads[i].weight;
        x->wc[i] = own ? (uint8_t)k : 0;
        LinkStat *ls = &net->lstat[x->dl[i]];
        if (own && ls->owner == LINK_UNUSED && net->exclusive) {
            ls->owner = id;
            ls->owner_load = (uint32_t)i;
            x->excl[i] = 1;
            x->epos[i] = x->nexcl;
            x->eidx[x->nexcl++] = (uint32_t)i;
        } else {
            link_share(net, x->dl[i]);
            x->sidx[i - x->nexcl] = (uint32_t)i; /* loads 0..i-1 are listed, one way or other */
        }
    }
    size_t acc = sizeof *x->acc * (size_t)MAX(x->nw, 1);
    x->acc = memset(bigarena_alloc(net->arena, acc), 0, acc);
    return x;
}

void net_flow_borrowed(Network *net, const NetLoad *loads, int n, NetLoadSet *set, double bytes,
                       SimTime latency, int cls, NetDoneFn done, void *ctx, uint64_t arg) {
    LoadInfo *info = set ? (LoadInfo *)*set : NULL;
    if (!info) {
        info = g_hash_table_lookup(net->info_of, loads);
        if (!info) {
            info = info_new(net, loads, n);
            g_hash_table_insert(net->info_of, (gpointer)loads, info);
        }
        if (set)
            *set = (NetLoadSet)info;
    }
    flow_start(net, loads, info, info->dl, info->lone, FALSE, n, bytes, latency, cls, done, ctx,
               arg);
}

void net_transfer(Network *net, int src, int dst, double bytes, SimTime latency, int cls,
                  NetDoneFn done, void *ctx, uint64_t arg) {
    TopoPath p;
    topo_path(net->topo, src, dst, topo_pair_salt(src, dst), &p);
    net_loads_reset(net);
    net_loads_add_path(net, &p);
    int n;
    const NetLoad *loads = net_loads_get(net, &n);
    net_flow(net, loads, n, bytes, latency, cls, done, ctx, arg);
}

/* Take a flow's load i off its link (the reverse of load_on), adding its bytes to the link's
 * count where counted (an exclusive link's: its set's acc, in on_flow_done). */
static inline void load_off(Network *net, const Flow *f, uint32_t slot, uint32_t i, uint64_t ub,
                            gboolean counted) {
    uint32_t d = f->dl[i], w = f->loads[i].weight;
    Link *l = &net->lk[d];
    if (counted)
        *link_bytes(net, f->cls, d) += per_unit(net, f->bytes * w);
    Crossing *fl = l->fl;
    for (uint32_t c = 0, m = l->nfl; c < m; c++)
        if (fl[c].flow == slot) { /* the last takes its place */
            fl[c] = fl[--l->nfl];
            break;
        }
    l->wtot -= w;
    if (l->nfl == 0) /* fixes nobody now */
        l->filled = 0;
    if (!net->sharing)
        return;
    /* the flows left on a link that coupled them to this one (slack now or not) are solved
     * again if it fixed their rates; a link it leaves empty, or that was slack, changes nobody's */
    if (l->nfl > 0 && couples(net, l))
        mark_dirty(net, d);
    link_set_ubsum(l, link_ubsum(l) - (unsigned __int128)ub * w);
    link_retight(net, l); /* only to slack: the flows left lose it from their lists */
}

static void on_flow_done(Engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    Network *net = ctx;
    guint32 slot = (guint32)(arg & 0xffffffffu), version = (guint32)(arg >> 32);
    Flow *f = flow_at(net, slot);
    if (f->version != version || f->done == NULL)
        return; /* superseded (a rate change moves the event: not expected) */
    f->ev_armed = 0;
    if (f->live) {
        uint64_t ub = flow_ub(f);
        const double bytes = f->bytes;
        const int cls = f->cls;
        LoadInfo *x = f->info;
        const uint8_t *excl = x && x->nexcl ? x->excl : NULL;
        if (f->lazy) /* its set's shared loads alone (it is not on the others) */
            for (uint32_t k = 0, n = x->n - x->nexcl; k < n; k++)
                load_off(net, f, slot, x->sidx[k], ub, TRUE);
        else
            for (int i = 0; i < f->n; i++)
                load_off(net, f, slot, (uint32_t)i, ub, !(excl && excl[i]));
        if (excl) /* what each exclusive link of a weight adds, the same sum as per link */
            for (int k = 0; k < x->nw; k++)
                x->acc[k][cls] += per_unit(net, bytes * x->wval[k]);
        if (x) {
            x->live--;
            if (f->lazy)
                x->lazy = -1;
        }
    }
    NetDoneFn done = f->done;
    void *dctx = f->ctx;
    uint64_t darg = f->arg;
    f->done = NULL;
    f->live = FALSE;
    f->lazy = 0;
    if (f->owned)
        g_free((NetLoad *)f->loads);
    f->loads = NULL;
    f->dl = NULL;
    vec_push(&net->free_slots, slot);
    done(dctx, darg);
}
