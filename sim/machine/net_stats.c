/* net_stats: what the network's links carried, read after a run (net_busiest_links). The flows
 * and their byte counts are network.c's; nothing here runs during a simulation. */
#include "network_internal.h"

static gint cmp_stat(gconstpointer a, gconstpointer b) {
    const NetLinkStat *x = a, *y = b;
    if (x->busy_s != y->busy_s)
        return x->busy_s > y->busy_s ? -1 : 1;
    return (x->link > y->link) - (x->link < y->link);
}

GArray *net_busiest_links(const Network *net, int max) {
    GArray *all = g_array_new(FALSE, FALSE, sizeof(NetLinkStat));
    for (uint32_t i = 0; i < net->nlk; i++) {
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
