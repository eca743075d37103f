/* net_solver: max-min fair rates for the flows a change can affect.
 *
 * Progressive filling (Bertsekas and Gallager, Data Networks, Sec. 6.5.2): raise every unfixed
 * flow's rate together; the first link to fill fixes the flows crossing it at its fair share
 * (remaining capacity / remaining weight); repeat. The link that fills next is the one of the
 * least share, the lowest id among equals, found with a heap (LAZY HEAP below). A solve fills the
 * flows of the change, closed over the links that fixed their rates (FILLED LINKS below), and
 * checks the tight links they share with flows outside; cost per solve is O(E log E) in the loads
 * E of those flows on tight links (COUPLING LISTS in network.c). Flows elsewhere keep their rates
 * and completion events. Slack links (SLACK_MARGIN in network_internal.h) cannot fill and stay
 * out.
 * For: network.c, which schedules a solve (net_solve) when flows start or end on tight links. */
#include "network_internal.h"

#include <string.h>

static inline gboolean item_before(const HeapItem *a, const HeapItem *b) {
    return a->share < b->share || (a->share == b->share && a->link < b->link);
}

static void heap_push(HeapVec *h, double share, int32_t link, uint32_t d) {
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 64;
        h->v = g_renew(HeapItem, h->v, h->cap);
    }
    HeapItem *a = h->v, it = {share, link, d};
    uint32_t i = h->n++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!item_before(&it, &a[p]))
            break;
        a[i] = a[p];
        i = p;
    }
    a[i] = it;
}

static HeapItem heap_pop(HeapVec *h) {
    HeapItem *a = h->v;
    HeapItem top = a[0], last = a[--h->n];
    uint32_t n = h->n, i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        const HeapItem *mp = &last;
        if (l < n && item_before(&a[l], mp)) {
            m = l;
            mp = &a[l];
        }
        if (r < n && item_before(&a[r], mp))
            m = r;
        if (m == i)
            break;
        a[i] = a[m];
        i = m;
    }
    if (n > 0)
        a[i] = last;
    return top;
}

/* FILLED LINKS. A change re-solves only the flows whose rates it can change, not every flow that
 * tight links join to them. In the rates in force every flow was fixed by one link that filled
 * (Link.filled); a flow's rate depends on the flows on its fixing link alone, and on theirs. So a
 * solve takes the flows of the change (a flow that starts; the flows on a filled link that one
 * leaves), closes the set over filled links (every flow on a filled link a solved flow crosses),
 * fills the tight links that only solved flows cross, and checks the rest: a tight link that a
 * flow outside the set also crosses must stay below capacity by SLACK_MARGIN with the new rates
 * and the outside flows' rates in force. Then the rates are those of the whole component, in every
 * bit: each outside flow keeps a filled link with no solved flow on it, so its rate stands; a
 * checked link cannot fill in the whole component's filling (the slack-link argument of
 * network.c, with final rates in place of bounds); and every link that fills carries solved
 * flows alone, fixed in the same order by the same subtractions as in the whole component, whose
 * other links never touch theirs. A checked link over its capacity, or a solved flow that none of
 * its links fixed (bound by checked links alone), brings every flow on those links into the set,
 * and the set is filled again. Every link a solve looks at is tight: it is reached through the
 * flows' coupling lists, and nothing in a solve turns a link slack. Where tight links that never
 * fill (a NIC two flows share, held far below its capacity by a global link) joined the flows of
 * many global links into one component, a change now re-solves the flows of one (docs/speed.md,
 * "Network solver"). */

/* Link d carries a flow outside the set: it is checked, not filled. */
static inline gboolean outside_flows(const Network *net, uint32_t d) {
    return net->lx[d].sw != net->lk[d].wtot;
}

/* Flow slot fs into the solved set, its tight links into the solve; a filled one brings its
 * flows (pushed on the stack). */
static void take_flow(Network *net, uint32_t fs, uint32_t st) {
    Flow *f = flow_at(net, fs);
    if (f->stamp == st || !f->live)
        return;
    f->stamp = st;
    if (f->lazy) /* on its exclusive links first (EXCLUSIVE LINKS in network.c) */
        net_flow_materialise(net, fs);
    vec_push(&net->comp_flows, fs);
    for (uint32_t j = 0; j < f->ntl; j++) { /* its loads on links that couple */
        const TightLoad *e = &f->tl[j];
        uint32_t m = e->d;
        LinkScratch *x = &net->lx[m];
        if (x->stamp != st) {
            x->stamp = st;
            x->sw = 0;
            vec_push(&net->comp_links, m);
            if (net->lk[m].filled || !net->local)
                vec_push(&net->stack, m);
        }
        x->sw += e->weight;
    }
}

/* Every flow on the links on the stack into the set, and on over filled links. */
static void take_stacked(Network *net, uint32_t st) {
    while (net->stack.n) {
        const Link *l = &net->lk[net->stack.v[--net->stack.n]];
        for (uint32_t k = 0; k < l->nfl; k++)
            take_flow(net, l->fl[k].flow, st);
    }
}

/* Links of one class: the same capacity and the same flows crossing them with the same weights.
 * Through a solve they keep the same remaining capacity and weight, bit for bit (the same
 * subtractions in the same order), so the same share: every time the heap would give one of them,
 * it gives the lowest id first, which fixes every flow on it and leaves the others spent (weight
 * exactly 0: integer sums) or re-filed stale exactly as it is. Only that one needs to be in the
 * heap; the others get skip. Classes of 2 to CLASS_MAX_FLOWS flows (a link one flow crosses is
 * its flow's: see net_solve; a crowded link stays alone). */
#define CLASS_MAX_FLOWS 8

static void link_classes(Network *net) {
    uint32_t size = 4;
    while (size < 2 * net->comp_links.n)
        size *= 2;
    if (net->ccls < size) {
        net->cls = g_renew(ClassSlot, net->cls, size);
        net->ccls = size;
    }
    for (uint32_t i = 0; i < size; i++)
        net->cls[i].d = UINT32_MAX;
    net->cls_key.n = 0;
    for (uint32_t c = 0; c < net->comp_links.n; c++) {
        uint32_t d = net->comp_links.v[c];
        const Link *l = &net->lk[d];
        if (net->lx[d].skip) /* checked, not filled (FILLED LINKS) */
            continue;
        if (!net->classes || l->nfl < 2 || l->nfl > CLASS_MAX_FLOWS)
            continue;
        uint32_t off = net->cls_key.n, n = l->nfl;
        for (uint32_t k = 0; k < n; k++) {
            vec_push(&net->cls_key, l->fl[k].flow);
            vec_push(&net->cls_key, l->fl[k].weight);
        }
        uint32_t *kv = net->cls_key.v + off;
        for (uint32_t i = 1; i < n; i++) { /* by flow slot */
            uint32_t f = kv[2 * i], w = kv[2 * i + 1], j = i;
            for (; j > 0 && kv[2 * (j - 1)] > f; j--) {
                kv[2 * j] = kv[2 * (j - 1)];
                kv[2 * j + 1] = kv[2 * j - 1];
            }
            kv[2 * j] = f;
            kv[2 * j + 1] = w;
        }
        uint64_t h;
        memcpy(&h, &l->cap, sizeof h);
        h = (h ^ n) * 1099511628211u;
        for (uint32_t i = 0; i < 2 * n; i++)
            h = (h ^ kv[i]) * 1099511628211u;
        h ^= h >> 29;
        for (uint32_t i = (uint32_t)h & (size - 1);; i = (i + 1) & (size - 1)) {
            ClassSlot *s = &net->cls[i];
            if (s->d == UINT32_MAX) {
                *s = (ClassSlot){h, d, off};
                break;
            }
            const Link *r = &net->lk[s->d];
            if (s->hash == h && r->nfl == n && r->cap == l->cap &&
                memcmp(net->cls_key.v + s->off, kv, sizeof(uint32_t) * 2 * n) == 0) {
                net->cls_key.n = off; /* the class's key is there already */
                if (l->id < r->id) {
                    net->lx[s->d].skip = 1;
                    s->d = d;
                } else {
                    net->lx[d].skip = 1;
                }
                break;
            }
        }
    }
}

/* Bring remaining up to now at the rate it has moved at since `last`. Only a rate change calls
 * this, so a flow's remaining bytes depend on its rates over time alone, not on how often a solve
 * happened to look at it (a solve that finds the same rate leaves it be). */
static inline void rebase(Flow *f, SimTime now) {
    if (f->rate > 0 && now > f->last)
        f->remaining -= f->rate * (double)(now - f->last) / (double)SIM_PS_PER_S;
    f->last = now;
}

/* Fill the set's links that carry its flows alone (skip set for the others by the caller). Each
 * fixed flow's new rate goes to nrate and its slot to net->order; a link that fixes one gets fill.
 * Returns the flows no link fixed. */
static uint32_t fill(Network *net) {
    for (uint32_t i = 0; i < net->comp_flows.n; i++) { /* reset scratch */
        Flow *f = flow_at(net, net->comp_flows.v[i]);
        f->fixed = FALSE;
        f->own_link = -1;
    }
    net->order.n = 0;
    /* LAZY HEAP. Each step fills the link of the least (share, id) among those with unfixed flows.
     * A share only grows as flows are fixed (a flow fixed at the least share leaves every other
     * link at least as much per unit of weight), but for rounding. So a link keeps one entry in
     * the heap, at or below its share (hkey: its last push), and is pushed again only when its
     * share falls below that (rounding) or when its entry comes out of the heap below its share
     * (re-filed at its share). An entry that comes out at its link's share is the least (share,
     * id) of all: every other link's entry is at or below its own share, and not before this one.
     * The same links fill in the same order as pushing every change, with far fewer pushes
     * (docs/speed.md, "Network solver"; test_solver_matches_textbook_filling fails on a stale
     * entry taken as current). */
    HeapVec *h = &net->heap;
    h->n = 0;
    link_classes(net);
    for (uint32_t i = 0; i < net->comp_links.n; i++) {
        uint32_t d = net->comp_links.v[i];
        const Link *l = &net->lk[d];
        LinkScratch *x = &net->lx[d];
        x->hkey = G_MAXDOUBLE; /* not in the heap */
        x->fill = 0;
        x->cap_left = l->cap;
        /* summing its crossings' weights in double gives this integer exactly (below 2^53) */
        x->wsum = (double)l->wtot;
        if (x->wsum <= 0 || x->skip) /* checked, or of a class another link stands for */
            continue;
        double share = x->cap_left / x->wsum;
        if (l->nfl == 1 && net->classes) { /* private: see below */
            Flow *f = flow_at(net, l->fl[0].flow);
            if (f->own_link < 0 || share < f->own_share ||
                (share == f->own_share && l->id < f->own_link)) {
                f->own_share = share;
                f->own_link = l->id;
                f->own_d = d;
            }
        } else {
            heap_push(h, share, l->id, d);
            x->hkey = share;
        }
    }
    /* A link only one flow crosses keeps its share until that flow is fixed, and is spent then
     * (its weight drops to 0): of a flow's private links only the first in the heap's order can
     * fix it, the rest would pop as spent. So only that one goes in: the same pops that matter,
     * in the same order, on heaps a fraction of the size (a DP ring's flow crosses thousands of
     * fabric links alone). */
    for (uint32_t i = 0; i < net->comp_flows.n; i++) {
        const Flow *f = flow_at(net, net->comp_flows.v[i]);
        if (f->own_link >= 0) {
            heap_push(h, f->own_share, f->own_link, f->own_d);
            net->lx[f->own_d].hkey = f->own_share;
        }
    }
    /* Once every flow is fixed, every link's weight is exactly 0 (integer sums) and what is left
     * in the heap would pop spent: stop there (most of a solve's pops, on 1T_full_frontier). */
    uint32_t unfixed = net->comp_flows.n;
    while (h->n && unfixed > 0) {
        HeapItem it = heap_pop(h);
        LinkScratch *x = &net->lx[it.d];
        if (x->wsum <= 0)
            continue;
        double share = MAX(x->cap_left, 0.0) / x->wsum;
        if (share > it.share) { /* grown since it was pushed: re-filed at its share */
            heap_push(h, share, it.link, it.d);
            x->hkey = share;
            continue;
        }
        const Link *l = &net->lk[it.d];
        double rate = MAX(x->cap_left, 0.0) * net->dunit / x->wsum; /* per stream */
        x->fill = 1;
        for (uint32_t k = 0; k < l->nfl; k++) {
            uint32_t fs = l->fl[k].flow;
            Flow *f = flow_at(net, fs);
            if (f->fixed)
                continue;
            f->fixed = TRUE;
            unfixed--;
            /* share is per unit of weight, rate per stream (unit 1: the same number) */
            f->nrate = rate;
            vec_push(&net->order, fs);
            /* its tight links, all in this solve (a slack one never fills: left out) */
            for (uint32_t j = 0; j < f->ntl; j++) {
                const TightLoad *e = &f->tl[j];
                uint32_t md = e->d;
                LinkScratch *m = &net->lx[md];
                m->cap_left -= per_unit(net, rate * e->weight);
                m->wsum -= e->weight;
                if (m == x || m->wsum <= 0 || m->skip)
                    continue;
                double sm = MAX(m->cap_left, 0.0) / m->wsum;
                if (sm < m->hkey) { /* below its entry (rounding): LAZY HEAP */
                    heap_push(h, sm, e->link, md);
                    m->hkey = sm;
                }
            }
        }
    }
    return unfixed;
}

/* The links the set does not fill alone (outside flows on them) must stay below capacity by
 * SLACK_MARGIN at the new rates (FILLED LINKS); a solved flow no link fixed is bound there. Every
 * flow on an offending link goes into the set. Returns whether the set grew. */
static gboolean check(Network *net, uint32_t st) {
    uint32_t nl = net->comp_links.n;
    for (uint32_t c = 0; c < nl; c++) {
        uint32_t d = net->comp_links.v[c];
        if (!outside_flows(net, d))
            continue;
        const Link *l = &net->lk[d];
        /* the sum of rate x weight against capacity x unit: a link's sum in its own units */
        double load = 0;
        for (uint32_t k = 0; k < l->nfl; k++) {
            const Flow *g = flow_at(net, l->fl[k].flow);
            double r = g->stamp == st ? (g->fixed ? g->nrate : G_MAXDOUBLE) : g->rate;
            load += r * l->fl[k].weight;
        }
        if (load < l->cap * net->dunit * (1 - SLACK_MARGIN))
            continue;
        vec_push(&net->stack, d);
    }
    if (!net->stack.n)
        return FALSE;
    take_stacked(net, st);
    return TRUE;
}

void net_solve(Engine *eng, void *ctx, uint64_t arg) {
    (void)arg;
    Network *net = ctx;
    SimTime now = engine_now(eng);
    net->solve_pending = FALSE;
    net->solves++;
    uint32_t st = ++net->stamp;
    net->comp_links.n = 0;
    net->comp_flows.n = 0;
    net->stack.n = 0;
    for (uint32_t i = 0; i < net->dflows.n; i++) /* flows that started */
        take_flow(net, net->dflows.v[i], st);
    net->dflows.n = 0;
    for (uint32_t i = 0; i < net->dirty.n; i++) /* filled links flows left: their flows */
        vec_push(&net->stack, net->dirty.v[i]);
    net->dirty.n = 0;
    take_stacked(net, st);
    for (;;) {
        for (uint32_t i = 0; i < net->comp_links.n; i++) { /* checked: outside flows on it */
            uint32_t d = net->comp_links.v[i];
            net->lx[d].skip = outside_flows(net, d);
        }
        uint32_t unfixed = fill(net);
        if (!check(net, st)) {
            /* every flow has a tight link that fixes it alone (its rate alone's), or one checked */
            g_assert(unfixed == 0);
            break;
        }
    }
    net->solved_links += net->comp_links.n;
    for (uint32_t i = 0; i < net->comp_links.n; i++) {
        uint32_t d = net->comp_links.v[i];
        net->lk[d].filled = net->lx[d].fill;
    }
    /* the new rates, in the order they were fixed (that of the whole component's filling) */
    for (uint32_t i = 0; i < net->order.n; i++) {
        uint32_t fs = net->order.v[i];
        Flow *f = flow_at(net, fs);
        double old = f->rate;
        if (old != f->nrate || old == 0) { /* progress at the old rate, up to now */
            rebase(f, now);
            f->rate = f->nrate;
            net_schedule_finish(net, fs);
        }
    }
}
