/* network: moves bytes over the topology's links, sharing each link max-min fairly among the
 * flows crossing it.
 *
 * For: flows. A flow loads a set of links, each with a weight (how many of the flow's parallel
 * streams cross it), waits its latency, then moves `bytes` on every stream at a common rate r;
 * a link of weight w carries w x r. Rates are max-min fair (progressive filling, as in SimGrid's
 * lmm solver) and recomputed, whenever a flow starts or ends, for the flows whose rates the change
 * can move (net_solver.c). A single transfer is a flow of one stream; a ring collective in the
 * aggregated mode is one flow whose streams are its ring edges.
 * Not for: which flows a collective needs (collectives.c) or what they mean.
 *
 * With sharing off, every flow runs at its own bottleneck (capacity / weight) whatever else is in
 * flight: the uncontended model, kept for comparison. */
#ifndef SIM_NETWORK_H
#define SIM_NETWORK_H

#include "engine.h"
#include "topology.h"

#define NET_CLASSES 8 /* traffic classes a caller may tag flows with (the workload's dims) */

typedef struct Network Network;

typedef void (*NetDoneFn)(void *ctx, uint64_t arg);

typedef struct {
    int32_t link;    /* topology link id */
    uint32_t weight; /* streams of the flow crossing it, in units of 1/topo_stream_weight of a
                        stream (1 unit = 1 stream except under adaptive dragonfly routing, where
                        an in-group split loads its direct link with 1 unit of S - 1) */
} NetLoad;

Network *net_new(Engine *eng, const Topology *topo);
void net_free(Network *net);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Network, net_free)

/* Testing: off, the solver puts every link in its heap instead of one per flow's private links
 * and one per link class (net_solve), and slack links join components like any other; the rates
 * must come out the same, bit for bit. */
void net_set_solver_classes(Network *net, gboolean on);
/* Testing: off (before any flow), no link is a load set's alone and every flow goes on all its
 * links, counted per link (network.c, EXCLUSIVE LINKS); rates, times and link bytes must come
 * out the same, bit for bit. */
void net_set_exclusive_links(Network *net, gboolean on);
/* Testing: off, a solve takes every flow that tight links join to a change, as before the
 * solver's filled links (net_solver.c, FILLED LINKS); the rates must come out the same, bit for
 * bit, with more links looked at. */
void net_set_local_solves(Network *net, gboolean on);
/* Testing: off, every flow's activation is an event of its own (network.c, EARLY ACTIVATION);
 * rates, times and link bytes must come out the same, bit for bit, with more events. */
void net_set_early_activation(Network *net, gboolean on);
/* Flows activated when they started (EARLY ACTIVATION): one engine event fewer each. */
uint64_t net_early_flows(const Network *net);
/* Testing: before any flow, room for only `links` links at first (default: every link of the
 * machine up to 4 M), so that the arrays grow by doubling as links are first used; nothing else
 * may change. */
void net_set_link_room(Network *net, uint32_t links);
/* Contention on (default) or off. */
void net_set_sharing(Network *net, gboolean on);
/* fn(ctx, link, time, from, now) for every load of every flow as the flow starts (NULL: none,
 * the default): the time its bytes keep the link busy at its full capacity (bytes per stream x
 * weight / unit / capacity, picoseconds), when they may start moving (now + latency), and now.
 * Under any sharing a link carries no more than its capacity, so it is busy at least that long
 * after `from` (sim.c, LOWER BOUND). */
typedef void (*NetFlowFn)(void *ctx, int32_t link, double time, SimTime from, SimTime now);
void net_set_flow_observer(Network *net, NetFlowFn fn, void *ctx);

/* Start a flow over loads (copied): after latency picoseconds, move `bytes` per stream; done(ctx,
 * arg) when they have arrived. cls (0..NET_CLASSES-1) tags its bytes in link statistics. */
void net_flow(Network *net, const NetLoad *loads, int n, double bytes, SimTime latency, int cls,
              NetDoneFn done, void *ctx, uint64_t arg);

/* What the network works out once about a borrowed load set (its links' places, its rate alone,
 * its exclusive links), as a handle the caller may keep beside the loads: NULL until the set's
 * first flow. Valid while the network lives. */
typedef struct NetLoadSetFacts *NetLoadSet;

/* The same with loads the caller keeps unchanged until the flow is done (no copy). set: the
 * caller's handle for these loads (NULL: none kept), filled by the first flow, so that later
 * ones skip finding the set's facts by the loads' address in a table (a cache miss or two a
 * start where tens of thousands of groups each keep their own loads). */
void net_flow_borrowed(Network *net, const NetLoad *loads, int n, NetLoadSet *set, double bytes,
                       SimTime latency, int cls, NetDoneFn done, void *ctx, uint64_t arg);

/* One transfer along the minimal path from GPU src to GPU dst, after `latency`. */
void net_transfer(Network *net, int src, int dst, double bytes, SimTime latency, int cls,
                  NetDoneFn done, void *ctx, uint64_t arg);

/* Building a flow's loads from paths: links crossed several times get a larger weight; a path's
 * in-group split (adaptive routing) is expanded into its direct link and the two switch ports.
 * net_loads_reset, then net_loads_add_path for each stream, then net_loads_get. */
void net_loads_reset(Network *net);
void net_loads_add_path(Network *net, const TopoPath *path);
/* Add loads (weights of links already in the builder add up). */
void net_loads_add(Network *net, const NetLoad *loads, int n);
/* Multiply every weight in the builder by factor: the same as adding its contents factor - 1
 * more times (integer weights, the same order of first use). */
void net_loads_scale(Network *net, uint32_t factor);
const NetLoad *net_loads_get(Network *net, int *n);
/* One stream's pace on link under the builder's loads: capacity x unit / the builder's weight
 * on it, or the capacity where the builder does not hold it (one stream alone), bytes/s. */
double net_loads_link_pace(const Network *net, int32_t link);

/* Time one flow alone would take: latency + bytes / min(capacity / weight) (weight in streams),
 * nearest picosecond. */
SimTime net_flow_time_alone(const Network *net, const NetLoad *loads, int n, double bytes,
                            SimTime latency);
/* Its two parts: the rate per stream alone on loads (min capacity / weight; G_MAXDOUBLE for
 * none), and latency + bytes at a rate, nearest picosecond (latency alone for bytes <= 0). */
double net_loads_alone_rate(const Network *net, const NetLoad *loads, int n);
SimTime net_time_at_rate(double bytes, double rate, SimTime latency);

typedef struct {
    int32_t link;
    double bytes;  /* carried in all */
    double busy_s; /* bytes / capacity: seconds the link was (or would be) busy */
    double by_class[NET_CLASSES];
} NetLinkStat;

/* The `max` links busiest (most bytes for their capacity; ties by link id), busiest first.
 * g_array_unref. */
GArray *net_busiest_links(const Network *net, int max);
/* STEADY STATE (sim/run/steady.c): net_busiest_links of net at the end of a run, every link, as
 * with k more periods in its steady part, from net_busiest_links(net, G_MAXINT) taken at three
 * cuts of the run one period apart (a, b, c): each link's bytes by class move by k times their step
 * from b to c, which must equal the step from a to b exactly. NULL where a step differs. */
GArray *net_links_extrapolate(const Network *net, GArray *a, GArray *b, GArray *c, int64_t k);

/* Rate recomputations (solver runs) so far. */
uint64_t net_solves(const Network *net);
/* Flows started and not yet ended (waiting out their latency or moving). */
uint32_t net_flows_alive(const Network *net);
/* Links the solves have looked at, in all (the sizes of the components they solved). */
uint64_t net_solved_links(const Network *net);

#endif
