/* net_stats: what the network's links carried, read after a run (net_busiest_links). The flows
 * and their byte counts are network.c's; nothing here runs during a simulation. */
#include "network_internal.h"

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

GArray *net_links_extrapolate(const Network *c, const Network *b, const Network *a, int64_t k) {
    g_autoptr(GArray) sa = net_busiest_links(a, G_MAXINT);
    g_autoptr(GArray) sb = net_busiest_links(b, G_MAXINT);
    g_autoptr(GHashTable) ta = stats_by_id(sa);
    g_autoptr(GHashTable) tb = stats_by_id(sb);
    GArray *all = g_array_new(FALSE, FALSE, sizeof(NetLinkStat));
    guint found = 0; /* of a's and b's links, those c carried too */
    gboolean ok = TRUE;
    for (uint32_t i = 0; ok && i < c->nlk; i++) {
        NetLinkStat s = link_stat(c, i);
        if (s.bytes <= 0)
            continue;
        const NetLinkStat *p = g_hash_table_lookup(ta, &s.link),
                          *q = g_hash_table_lookup(tb, &s.link);
        found += (p != NULL) + (q != NULL);
        s.bytes = 0;
        for (int cl = 0; ok && cl < NET_CLASSES; cl++) {
            double x = p ? p->by_class[cl] : 0, y = q ? q->by_class[cl] : 0;
            double d = s.by_class[cl] - y;
            ok = y - x == d;
            s.by_class[cl] += (double)k * d;
            s.bytes += s.by_class[cl];
        }
        s.busy_s = s.bytes / c->lk[i].cap;
        g_array_append_val(all, s);
    }
    if (!ok || found != sa->len + sb->len) { /* a link a or b loaded and c did not: no step */
        g_array_unref(all);
        return NULL;
    }
    g_array_sort(all, cmp_stat);
    return all;
}
