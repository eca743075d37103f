/* collectives: one collective operation on one group of GPUs, turned into network flows by a named
 * algorithm, the way RCCL/NCCL would run it.
 *
 * For: ring and tree allreduce, hierarchical allreduce (intra-node reduce-scatter, inter-node
 * allreduce, intra-node allgather), ring allgather and reduce-scatter, ring broadcast and reduce,
 * all-to-all and send/recv; the algorithm and protocol picked per call by message size with the
 * library's latency model (CollSpec in the topology), or sent to another backend by the backend
 * table. In the aggregated mode a collective is one flow whose streams are its edges (a ring moves
 * every edge in lockstep); in the detailed mode a ring runs step by step, one flow per edge per
 * step. Both give 2(n-1)·α + 2(n-1)/n·m/B for a ring allreduce on uniform, uncontended links.
 * Not for: when a collective starts (the executor), or how links share bandwidth (network.c). */
#ifndef SIM_COLLECTIVES_H
#define SIM_COLLECTIVES_H

#include "network.h"

typedef enum {
    COLL_ALLREDUCE,
    COLL_ALLGATHER,
    COLL_REDUCE_SCATTER,
    COLL_REDUCE,
    COLL_BROADCAST,
    COLL_ALL_TO_ALL,
    COLL_SEND,
    COLL_RECV,
    /* every member sends m to the next in the order given and receives m from the previous, at
     * once: one step of a ring (nccl-tests' sendrecv; the KV exchange of ring attention,
     * TransformerEngine's flash_attn_p2p_communicate) */
    COLL_SENDRECV,
    COLL_OP_COUNT
} CollOp;

/* Whether op's members are taken in the order given (a send: source then destination; a
 * sendrecv: the ring) rather than in the ring order the library picks. */
gboolean coll_op_keeps_order(CollOp op);

typedef enum { COLL_MODE_AGGREGATED, COLL_MODE_DETAILED } CollMode;

/* "allreduce", "reduce_scatter", ... as in the report; coll_op_parse inverts it (-1 unknown). */
const char *coll_op_name(CollOp op);
int coll_op_parse(const char *name);
/* An algorithm's and a protocol's index from its name (coll_algo_name, coll_proto_name); -1 for
 * NULL or an unknown name. */
int coll_algo_parse(const char *name);
/* Whether algorithm a can run op over n ranks on nodes nodes (tree and hierarchical: allreduce
 * across nodes only, as NCCL and RCCL run them); a forced one that cannot is not used. */
gboolean coll_algo_applies(CollAlgo a, CollOp op, int n, int nodes);
int coll_proto_parse(const char *name);
const char *coll_algo_name(CollAlgo a);
const char *coll_proto_name(CollProto p);

/* Bytes one rank moves for a collective of message size m over n ranks (the study's Sec. III):
 * allreduce 2m(n-1)/n; allgather, reduce-scatter and reduce m(n-1)/n; send/recv and sendrecv m.
 * m is the full (gathered / unreduced) buffer; a sendrecv's what each member sends. */
double coll_volume(CollOp op, double m, int n);

/* Ring rounds of op over n ranks: allreduce 2(n-1); allgather, reduce-scatter n-1. */
int coll_ring_steps(CollOp op, int n);

/* rccl-tests' bus bandwidth factor: busbw = algbw x factor (doc/PERFORMANCE.md: allreduce
 * 2(n-1)/n; allgather, reduce-scatter (n-1)/n; broadcast, reduce 1; src/alltoall.cu: all-to-all
 * (n-1)/n; src/sendrecv.cu: send/recv 1). */
double coll_busbw_factor(CollOp op, int n);

typedef struct Collectives Collectives;

/* A group of GPUs as a collective sees it (coll_group): a handle that lets a caller who calls on
 * the same group again and again (every layer's tensor-parallel allreduce, every bucket, every
 * pipeline send) skip finding it by its member list each time. */
typedef struct CollGroup CollGroup;

typedef struct {
    CollAlgo algo;
    CollProto proto;
    int backend;       /* index in CollSpec.backends, -1 for the library itself */
    SimTime predicted; /* uncontended time, picoseconds */
    SimTime latency;   /* its latency part */
    int32_t limit;     /* the busiest link of its slowest phase (most streams for its capacity);
                          COLL_LIMIT_LATENCY when the latency part is the larger,
                          COLL_LIMIT_BACKEND when a backend's bandwidth cap binds */
    int limit_ties;    /* links as busy as limit (1 = it alone) */
} CollChoice;

/* The choice a group made last (coll_choose_group), kept in the group itself: a group calls with
 * one message size after another, and its own record is in cache when it starts, where the list
 * of every choice it made is two pointers away (three cache misses a start on all of Frontier
 * with every rank, 9,408 tensor-parallel groups in turn). */
typedef struct {
    uint32_t gen; /* the choices' generation it was made in (0: none): coll_force starts another */
    int op;
    double bytes;
    CollChoice choice;
} CollChoiceMemo;

#define COLL_LIMIT_LATENCY (-1)
#define COLL_LIMIT_BACKEND (-2)

Collectives *coll_new(Engine *eng, Network *net, const Topology *topo);
void coll_free(Collectives *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Collectives, coll_free)

void coll_set_mode(Collectives *c, CollMode mode);
/* For the lower bound's run (sim.c, LOWER BOUND): every call chooses its algorithm and protocol
 * on every node's loads, as the call in the full form does, and a call in the symmetric form
 * leaves other nodes' local links out and never loads rep's node with another node's weight
 * (coll_streams_set_drop_only). Each link then carries a call's full-form weight or nothing,
 * so no flow is slower, and no link busier, than in the full form. */
void coll_set_bound(Collectives *c);
/* Force an algorithm and/or protocol (-1 = choose by the cost model). */
void coll_force(Collectives *c, int algo, int proto);

/* The algorithm, protocol and backend a call would use, and its uncontended time. */
CollChoice coll_choose(Collectives *c, CollOp op, const int *members, int n, double bytes);

/* What limits a choice, into buf: "latency", "backend", or the busiest link as
 * topo_link_describe names it ("node 0 GPU 1->3"), with " (1 of K)" when K links tie. */
void coll_limit_describe(const Collectives *c, const CollChoice *ch, char *buf, size_t size);

/* One collective call: op over a group with message size `bytes`, traffic class cls
 * (NET_CLASSES). The group is `group` (found before by coll_group) or else the n GPUs in members
 * (global GPU indices, any order, no repeats; for COLL_SEND {source, destination}; a group of one
 * finishes at once). How much of it the network carries, for deduplicated runs (executor.c's
 * representatives), is `form`, and copies:
 * - COLL_FULL (zero, the default): every link of every member.
 * - COLL_SYMMETRIC: for a group whose members all run identical programs at identical times
 *   (data-parallel replicas simulated once): only GPU rep's node carries node-local links (GPU
 *   links, PCIe, NICs), since every other member's node carries the same traffic by symmetry;
 *   the fabric links of every edge stay. The same rates as the full form, with far fewer loads.
 *   Where the algorithm is not alike on every node (NCCL's double binary tree, the broadcast and
 *   reduce chains), rep's node carries on each link the busiest node's weight (coll_streams.c,
 *   fold_onto_node), so the pace is still the full form's.
 * - COLL_IMAGES: the GPUs of copies 1.. are images of simulated ones (the data-parallel replicas
 *   a simulated one stands for: executor.c, arrive_p2p), whose own traffic loads the node-local
 *   links of their nodes as it loads the simulated ones', so those copies load fabric links
 *   alone (the symmetric form's rule); copies 0..whole-1 (whole 0 means 1) load all of their
 *   links: the simulated rank's own and, where it stands for its tensor-parallel peers too,
 *   theirs, on its nodes.
 * copies > 1 runs that many identical groups as one flow, copy j's members being members[i] +
 * j x stride (GPU ids): for a representative rank standing for peers that run the same program
 * on GPUs the topology treats alike (executor.c, exec_rep_index), by symmetry every copy moves at
 * the same rate, so one flow whose loads are the sum of the copies' (a link two copies cross
 * weighs both) gives each the rate and each link the bytes of the copies run apart. copies 0 is
 * 1. */
typedef enum { COLL_FULL, COLL_SYMMETRIC, COLL_IMAGES } CollForm;

typedef struct {
    CollOp op;
    const CollGroup *group; /* NULL: members, n */
    const int *members;
    int n;
    double bytes;
    int cls;
    CollForm form;
    int rep; /* COLL_SYMMETRIC: the GPU whose node carries the node-local links */
    int copies, stride;
    int whole; /* COLL_IMAGES: the copies that load their nodes' links too (0: 1) */
} CollCall;

/* Start the call; done(ctx, arg) runs when every member (of every copy) has finished. */
void coll_start(Collectives *c, const CollCall *call, NetDoneFn done, void *ctx, uint64_t arg);

/* The sends run as copies so far, those whose copies would not keep the same pace apart, and the
 * largest ratio of such a send's fastest copy's pace to its slowest's (1: none): where some are
 * uneven, one flow holds their copies in step at the slowest's pace, and the deduplicated run
 * can be slower than --all-ranks (coll_streams.c, UNEVEN COPIES). */
void coll_copies_evenness(const Collectives *c, int *sends, int *uneven, double *pace_ratio);

/* The group op runs on for these members (n >= 2; a send's are source then destination): found
 * by its member list (O(n) to hash and compare) or made. Valid while c lives. */
const CollGroup *coll_group(Collectives *c, CollOp op, const int *members, int n);
/* coll_choose on a group found before: the same choice, without finding the group again (op
 * must be the one it was found for). */
CollChoice coll_choose_group(Collectives *c, CollOp op, const CollGroup *g, double bytes);
/* Whether its members are on more than one node. */
gboolean coll_group_spans_nodes(const CollGroup *g);

/* The ring order the collective uses for these members: written to ring (n entries). GPUs of a
 * node are kept together, in the order that maximises the slowest edge of the node's ring. */
void coll_ring_order(Collectives *c, const int *members, int n, int *ring);

/* One collective alone on a fresh machine of spec: op over GPUs 0..n-1 (nodes filled in order;
 * COLL_SEND goes from GPU 0 to GPU n-1) with message size `bytes`, as `sim collective` and
 * `sim validate` time it. algo / proto force the algorithm and protocol (-1: the cost model
 * chooses); the choice made goes to *choice and what limits it (coll_limit_describe) to limit
 * (limit_size bytes); either may be NULL. Returns the time, picoseconds, or -1 with err set when
 * the machine cannot be built. */
SimTime coll_run_alone(const TopologySpec *spec, CollOp op, int n, double bytes, gboolean detailed,
                       int algo, int proto, CollChoice *choice, char *limit, size_t limit_size,
                       GError **err);

#endif
