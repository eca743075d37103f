/* net_stats: what the network's links carried, read after a run (net_busiest_links). The flows
 * and their byte counts are network.c's; nothing here runs during a simulation. */
#include "network_internal.h"
#include "steps.h"

static gint cmp_stat(gconstpointer a, gconstpointer b) {
    const NetLinkStat *x = a, *y = b;
    if (x->busy_s != y->busy_s)
        return x->busy_s > y->busy_s ? -1 : 1;
    return (x->link > y->link) - (x->link < y->link);
}

/* Link i's bytes by class, their sum and its busy time. */
static NetLinkStat link_stat(const Network *net, uint32_t i) {
    const Link *l = &net->lk[i];
    NetLinkStat s = {l->id, 0, 0, {0}};
    const LinkStat *ls = &net->lstat[i];
    const double *acc = NULL; /* an exclusive link's: its owner's (EXCLUSIVE LINKS) */
    if (ls->owner >= 0) {
        const LoadInfo *x = g_ptr_array_index(net->infos, ls->owner);
        acc = x->acc[x->wc[ls->owner_load]];
    }
    for (int c = 0; c < NET_CLASSES; c++) {
        s.by_class[c] = acc ? acc[c] : *link_bytes(net, c, i);
        s.bytes += s.by_class[c];
    }
    s.busy_s = s.bytes / l->cap;
    return s;
}

GArray *net_busiest_links(const Network *net, int max) {
    GArray *all = g_array_new(FALSE, FALSE, sizeof(NetLinkStat));
    for (uint32_t i = 0; i < net->nlk; i++) {
        NetLinkStat s = link_stat(net, i);
        if (s.bytes <= 0)
            continue;
        if (max > 64) {
            g_array_append_val(all, s);
            continue;
        }
        /* the few first kept in order as they come: cmp_stat is a total order (link ids are
         * unique), so the same list as sorting all and keeping the first max */
        guint at = all->len;
        while (at > 0 && cmp_stat(&s, &g_array_index(all, NetLinkStat, at - 1)) < 0)
            at--;
        if ((int)at < max) {
            g_array_insert_val(all, at, s);
            if ((int)all->len > max)
                g_array_set_size(all, max);
        }
    }
    g_array_sort(all, cmp_stat);
    if ((int)all->len > max)
        g_array_set_size(all, max);
    return all;
}

/* STEADY STATE (sim/run/steady.c): the links that carried bytes, keyed by id. */
static GHashTable *stats_by_id(GArray *all) {
    GHashTable *t = g_hash_table_new(g_int_hash, g_int_equal);
    for (guint i = 0; i < all->len; i++) {
        NetLinkStat *s = &g_array_index(all, NetLinkStat, i);
        g_hash_table_insert(t, &s->link, s);
    }
    return t;
}

/* A link's bytes of class cl in a cut (0 where it had carried nothing then). */
static double cut_bytes(GHashTable *t, int32_t link, int cl) {
    const NetLinkStat *s = g_hash_table_lookup(t, &link);
    return s ? s->by_class[cl] : 0.0;
}

GArray *net_links_extrapolate(const Network *net, GArray *a, GArray *b, GArray *c, int64_t k) {
    g_autoptr(GHashTable) ta = stats_by_id(a);
    g_autoptr(GHashTable) tb = stats_by_id(b);
    g_autoptr(GHashTable) tc = stats_by_id(c);
    GArray *all = g_array_new(FALSE, FALSE, sizeof(NetLinkStat));
    gboolean ok = TRUE;
    for (uint32_t i = 0; ok && i < net->nlk; i++) {
        NetLinkStat s = link_stat(net, i);
        if (s.bytes <= 0)
            continue;
        s.bytes = 0;
        for (int cl = 0; ok && cl < NET_CLASSES; cl++) {
            double x = cut_bytes(ta, s.link, cl), y = cut_bytes(tb, s.link, cl),
                   z = cut_bytes(tc, s.link, cl), d = z - y;
            ok = steps_even(x, y, z);
            s.by_class[cl] += (double)k * d;
            s.bytes += s.by_class[cl];
        }
        s.busy_s = s.bytes / net->lk[i].cap;
        g_array_append_val(all, s);
    }
    if (!ok) {
        g_array_unref(all);
        return NULL;
    }
    g_array_sort(all, cmp_stat);
    return all;
}
