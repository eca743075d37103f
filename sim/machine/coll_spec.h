/* coll_spec: the types of the collectives module that a machine file carries: the collective
 * library's algorithms and protocols, its latency and bandwidth model, its channels (rings) and
 * the other backends it hands calls to. collectives.h (which includes this) runs them; topology.h
 * embeds a CollSpec in the machine's description, so these types sit below both.
 *
 * Adding a collective algorithm: its CollAlgo value here, its entry in collectives.c's `algos`
 * table (name, where it applies, its streams); topologies list it under collectives.algorithms. */
#ifndef SIM_COLL_SPEC_H
#define SIM_COLL_SPEC_H

#include "engine.h"

#define COLL_MAX_NODE_GPUS 16 /* GPUs of one node a ring can visit (topology.h: TOPO_MAX_GPUS) */

/* How the machine's collective library costs a call (RCCL/NCCL tuning model, data from the
 * topology file): latency = base + intra-node steps x intra hop + network steps x network hop,
 * per algorithm and protocol; a protocol moves bytes at bw_factor of the links' rate. */
typedef enum { PROTO_LL, PROTO_SIMPLE, PROTO_COUNT } CollProto;
typedef enum { ALGO_RING, ALGO_TREE, ALGO_HIER, ALGO_COUNT } CollAlgo;

typedef struct {
    char *name;       /* e.g. "mpi" */
    guint32 ops;      /* bit mask of CollOp values it serves */
    double min_bytes; /* message sizes it serves: [min_bytes, max_bytes] */
    double max_bytes;
    SimTime latency;      /* per call, picoseconds */
    SimTime step_latency; /* per algorithm step, picoseconds */
    double bandwidth;     /* bytes/s per stream at most */
} CollBackend;

/* One channel of a ring collective over whole nodes, as the collective library lays it out
 * (RCCL's rome_models.cc ringBase: "N0 0 1 5 4 6 7 3 2 N1" enters a node by NIC 0, visits GPUs
 * 0 1 5 ... 2 and leaves by NIC 1). */
typedef struct {
    int gpus[COLL_MAX_NODE_GPUS]; /* local GPUs in ring order, each of the node's GPUs once */
    int nic_in, nic_out;          /* NIC the ring enters / leaves a node by; -1 = the GPU's own */
} CollRing;

typedef struct {
    SimTime base[PROTO_COUNT];                  /* per call */
    SimTime intra_hop[ALGO_COUNT][PROTO_COUNT]; /* per intra-node step */
    SimTime inter_hop[ALGO_COUNT][PROTO_COUNT]; /* per network step */
    double bw_factor[PROTO_COUNT];              /* share of link bandwidth a protocol reaches */
    gboolean algo_allowed[ALGO_COUNT];
    gboolean proto_allowed[PROTO_COUNT];
    GArray *backends;    /* CollBackend, first match wins */
    int channels;        /* rings a ring collective is split over; each rotates every node's part
                            of the ring so that it leaves the node through another GPU's NIC */
    GArray *rings_node;  /* CollRing: the library's channels over one whole node, or NULL */
    GArray *rings_nodes; /* CollRing: its channels over several whole nodes (with NICs), or NULL;
                            either list replaces `channels` and the ring search for groups of
                            whole nodes (collectives.c) */
    /* The library's own bandwidth model, which chooses the algorithm and protocol (RCCL
     * tuning.cc ncclTopoTuneModel): busBw = channels x per-channel bandwidth (intra-node graph
     * on up to 2 nodes, inter-node beyond) x bw_ratio; algBw = busBw x 1/2 (tree) or
     * n / steps (ring). model_channels 0: no model, choose by the time on the links. */
    int model_channels;
    double model_bw[2];                             /* per channel, bytes/s: [nodes > 2] */
    double model_ratio[2][ALGO_COUNT][PROTO_COUNT]; /* bw_ratio: [nodes > 2][algo][proto] */
} CollSpec;

#endif
