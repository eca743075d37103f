/* network: uncontended transfers over topology routes; one engine event per transfer. */
#include "network.h"

#include <math.h>

typedef struct {
    NetDoneFn done;
    void *ctx;
    uint64_t arg;
} Pending;

struct Network {
    Engine *eng;
    const Topology *topo;
    GArray *pending;    /* Pending, indexed by slot */
    GArray *free_slots; /* guint indices of reusable Pending slots */
    double bytes_network;
    double bytes_local;
};

Network *net_new(Engine *eng, const Topology *topo) {
    Network *net = g_new0(Network, 1);
    net->eng = eng;
    net->topo = topo;
    net->pending = g_array_new(FALSE, FALSE, sizeof(Pending));
    net->free_slots = g_array_new(FALSE, FALSE, sizeof(guint));
    return net;
}

void net_free(Network *net) {
    if (!net)
        return;
    g_array_unref(net->pending);
    g_array_unref(net->free_slots);
    g_free(net);
}

SimTime net_transfer_time(const Network *net, int src, int dst, double bytes, int steps) {
    TopoRoute r = topo_route(net->topo, src, dst);
    return (SimTime)steps * r.latency +
           (SimTime)llround(bytes * (double)SIM_PS_PER_S / r.bandwidth);
}

static void on_arrive(Engine *eng, void *ctx, uint64_t slot) {
    (void)eng;
    Network *net = ctx;
    Pending p = g_array_index(net->pending, Pending, slot);
    guint s = (guint)slot;
    g_array_append_val(net->free_slots, s);
    p.done(p.ctx, p.arg);
}

void net_transfer(Network *net, int src, int dst, double bytes, int steps, NetDoneFn done,
                  void *ctx, uint64_t arg) {
    g_assert(src != dst && bytes >= 0 && steps >= 1);
    TopoRoute r = topo_route(net->topo, src, dst);
    if (r.network)
        net->bytes_network += bytes;
    else
        net->bytes_local += bytes;
    Pending p = {done, ctx, arg};
    guint slot;
    if (net->free_slots->len) {
        slot = g_array_index(net->free_slots, guint, net->free_slots->len - 1);
        g_array_set_size(net->free_slots, net->free_slots->len - 1);
        g_array_index(net->pending, Pending, slot) = p;
    } else {
        slot = net->pending->len;
        g_array_append_val(net->pending, p);
    }
    engine_schedule(net->eng, net_transfer_time(net, src, dst, bytes, steps), on_arrive, net, slot);
}

double net_bytes_network(const Network *net) {
    return net->bytes_network;
}

double net_bytes_local(const Network *net) {
    return net->bytes_local;
}
