/* coll_streams: the ring order of a collective's members and the network loads of each of its
 * algorithms' phases, built once per group and kept.
 *
 * For: collectives.c, which costs and runs collectives over these loads. A group's ring order and
 * a phase's loads depend only on the members, the operation, the algorithm, the phase and the
 * symmetric form's representative node, never on the message size (a stream's bytes scale
 * linearly with it: CollShape), so a group that calls again (every gradient bucket, every layer's
 * tensor-parallel allreduce) reuses them: O(n) to look up instead of O(n x channels x hops) paths
 * to rebuild.
 * Not for: choosing an algorithm or timing it (collectives.c), channels and trees
 * (coll_channels.c). */
#ifndef SIM_COLL_STREAMS_H
#define SIM_COLL_STREAMS_H

#include "collectives.h"

/* The streams of one phase, independent of the message size m: a stream moves
 * coll_shape_bytes(shape, m) bytes (before the protocol factor). */
typedef struct {
    double per_m; /* stream bytes = per_m x m / div, in this order (the float result of the */
    int div;      /* formulas of build_streams, bit for bit) */
    int streams;  /* parallel streams (channels, trees) per edge: a rank moves streams x stream
                     bytes over each of its edges */
    int intra_steps, inter_steps;
} CollShape;

static inline double coll_shape_bytes(const CollShape *s, double m) {
    return s->per_m * m / s->div;
}

typedef struct CollStreams CollStreams;

CollStreams *coll_streams_new(const Topology *topo, Network *net);
void coll_streams_free(CollStreams *cs);
/* From now on the symmetric form of an algorithm that is not alike on every node loads rep_node's
 * own links as they are, other nodes' local links left out, instead of the busiest node's weight
 * on them (fold_onto_node): each link then carries what it carries in the full form or nothing,
 * and a flow moves no slower than in the full form. For the lower bound's run
 * (coll_set_bound). */
void coll_streams_set_drop_only(CollStreams *cs);

/* A group: its member list as given (global GPUs, n, no repeats), its ring order, the phases
 * built for it. Valid while cs lives. (The type itself is declared in collectives.h, whose callers
 * hold groups as handles: coll_group.) */

/* The group of these members, found (O(n): hash and compare) or made. keep_order: the members are
 * the ring as given (send: source then destination); otherwise the ring keeps each node's
 * members together, nodes ascending, a node's GPUs in its best local ring (coll_ring_order). */
const CollGroup *coll_streams_group(CollStreams *cs, const int *members, int n,
                                    gboolean keep_order);
const int *coll_group_ring(const CollGroup *g);
/* Its members as given (n of them), its index among the groups made (0, 1, ... in order), and
 * whether its ring is the members' order (keep_order). */
const int *coll_group_members(const CollGroup *g, int *n);
int coll_group_id(const CollGroup *g);
gboolean coll_group_keeps_order(const CollGroup *g);
/* Its last choice (collectives.c keeps it; zeroed when the group is made). */
CollChoiceMemo *coll_group_memo(const CollGroup *g);
/* The nodes its ring crosses (coll_count_nodes of the ring, counted once). */
int coll_group_nodes(const CollGroup *g);

/* The loads of phase `phase` (0; 0..2 for the hierarchical algorithm) of op by algo over the
 * group, in the symmetric form for rep_node (collectives.h, COLL_SYMMETRIC; -1: every
 * node), and their shape: built the first time, then cached with the group. */
const NetLoad *coll_streams_loads(CollStreams *cs, const CollGroup *g, CollAlgo algo, CollOp op,
                                  int phase, int rep_node, CollShape *shape, int *nl);

/* rep_node values besides a node: every node's links (the full form), or no node's (fabric
 * links alone). */
#define COLL_NODES_ALL (-1)
#define COLL_NODES_NONE (-2)

/* The same for `copies` groups run as one flow: copy j's members are the group's plus j x stride
 * (GPU ids), in the same order; the loads are the sum of every copy's (a link two copies cross
 * weighs both), the shape copy 0's. For ranks simulated by one representative whose peers run
 * the same program on GPUs the topology treats alike (executor.c, exec_rep_index). copies 1 is
 * coll_streams_loads. rep_node COLL_NODES_NONE: copies 0..whole-1 load all of their links and
 * the others their fabric links alone (their nodes are images of simulated ones, whose own
 * traffic loads those nodes' links: collectives.h, COLL_IMAGES); whole is 1 otherwise. facts (NULL:
 * not wanted): the network's handle for these loads, kept with them (net_flow_borrowed); valid
 * until the group's next phase set is built. */
const NetLoad *coll_streams_loads_copies(CollStreams *cs, const CollGroup *g, CollAlgo algo,
                                         CollOp op, int phase, int rep_node, int copies, int stride,
                                         int whole, CollShape *shape, int *nl, NetLoadSet **facts);

/* The nodes whose local links copy j of a call in the form rep_node loads: rep_node itself,
 * except COLL_NODES_NONE (COLL_IMAGES): copies 0..whole-1 all of theirs, the others none. */
int coll_streams_copy_nodes(int rep_node, int j, int whole);

/* Sends run as copies built so far (coll_streams_loads_copies), those whose copies' paces on the
 * fabric differ (UNEVEN COPIES in coll_streams.c: the one flow holds them to the slowest's), and
 * the largest ratio of such a send's fastest copy's pace to its slowest's (1: none). */
void coll_streams_copies_evenness(const CollStreams *cs, int *sends, int *uneven,
                                  double *pace_ratio);

/* Into the network's load builder (after net_loads_reset): one stream from GPU a to GPU b,
 * leaving a's node by NIC nic_out and entering b's by nic_in (-1: the GPU's own), in the
 * symmetric form for rep_node (-1: every node). Not cached (the detailed mode's ring steps). */
void coll_streams_edge(CollStreams *cs, int a, int b, int nic_out, int nic_in, int rep_node);

#endif
