/* network: moves bytes between GPUs over the topology's routes.
 *
 * For: "send this many bytes from GPU a to GPU b, tell me when they have arrived". A transfer may
 * stand for a pipelined series of `steps` equal chunks (a ring collective's traffic over one edge),
 * each paying the route's latency once.
 * Not for: which transfers a collective needs (collectives.c).
 *
 * For now every transfer runs at its route's bottleneck bandwidth, undisturbed by others; link
 * sharing (max-min fairness) replaces the inside of net_transfer, not its callers. */
#ifndef SIM_NETWORK_H
#define SIM_NETWORK_H

#include "engine.h"
#include "topology.h"

typedef struct Network Network;

typedef void (*NetDoneFn)(void *ctx, uint64_t arg);

Network *net_new(Engine *eng, const Topology *topo);
void net_free(Network *net);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Network, net_free)

/* Time one uncontended transfer takes: steps x route latency + bytes / bottleneck bandwidth,
 * rounded to the nearest picosecond. */
SimTime net_transfer_time(const Network *net, int src, int dst, double bytes, int steps);

/* Start a transfer of `bytes` (total over all steps) from GPU src to GPU dst; done(ctx, arg) runs
 * when the last byte has arrived. */
void net_transfer(Network *net, int src, int dst, double bytes, int steps, NetDoneFn done,
                  void *ctx, uint64_t arg);

/* Bytes moved so far, over the inter-node fabric and within nodes. */
double net_bytes_network(const Network *net);
double net_bytes_local(const Network *net);

#endif
