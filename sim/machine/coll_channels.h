/* coll_channels: the shapes a collective runs over, from the topology alone: the best ring through
 * a node's GPUs, the channels of a ring collective (its rings and the NICs they cross between
 * nodes, from the topology file's `collectives.rings` where it has them), and NCCL's double binary
 * tree over nodes.
 * Not for: turning shapes into flows or costing them (collectives.c). */
#ifndef SIM_COLL_CHANNELS_H
#define SIM_COLL_CHANNELS_H

#include "topology.h"

/* Best ring over the local GPUs in mask: the widest slowest edge, then fewest hops, then most
 * total bandwidth; exhaustive over at most 9 GPUs (O(k!)), greedy beyond. Writes popcount(mask)
 * local indices to ring, starting from the lowest. */
void coll_best_local_ring(const Topology *t, guint mask, int *ring);

/* Nodes a ring of n members visits (members of a node kept together). */
int coll_count_nodes(const Topology *t, const int *ring, int n);

typedef struct {
    int C;     /* channels; each carries 1/C of the data */
    int n;     /* members in each channel's ring */
    int *ring; /* C x n global GPUs, channel k at ring + k*n (owned), or one ring for all where
                  alike: read it with coll_channel_ring */
    int *nic;  /* C x 2: the NIC channel k leaves a node by, and the NIC it enters the next by;
                  -1 = the sending / receiving GPU's own (owned) */
    int alike; /* every channel is channel 0's ring by the same NICs, kept once (one GPU per
                  node: every rotation of a one-GPU part is itself) */
} CollChannels;

/* Channel k's ring: n global GPUs. */
static inline const int *coll_channel_ring(const CollChannels *ch, int k) {
    return ch->ring + (ch->alike ? 0 : (size_t)k * (size_t)ch->n);
}

/* The channels of a ring collective over ring (n members, each node's members together, as
 * coll_ring_order gives). Where every node takes part whole and the topology lists the library's
 * rings (CollSpec.rings_node for one node, rings_nodes for several; either stands in for the
 * other), one channel per listed ring, with its NICs. Otherwise `channels` rings (1 inside a node)
 * that each rotate every node's part so that channel k enters and leaves by NIC k mod nics. */
void coll_channels_build(const Topology *t, const int *ring, int n, CollChannels *out);
/* Every channel the same ring by the same NICs as channel 0 (loads the same links alike). */
gboolean coll_channels_alike(const CollChannels *ch);
void coll_channels_clear(CollChannels *ch);
/* The channel count C that coll_channels_build gives, without building them. O(n). */
int coll_channels_count(const Topology *t, const int *ring, int n);

/* Parent of node j (0..nodes-1) in tree 0 or 1 of NCCL's double binary tree, -1 for a root
 * (NCCL src/graph/trees.cc: tree 0 is ncclGetBtree, tree 1 its mirror j -> nodes-1-j for an even
 * node count, its shift by one for an odd one, so that a node with two children in one tree
 * is a leaf in the other). */
int coll_dtree_parent(int tree, int j, int nodes);

#endif
