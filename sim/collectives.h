/* collectives: one collective operation on one group of GPUs, turned into network transfers by a
 * named algorithm, the way RCCL/NCCL would run it.
 *
 * For: ring allreduce, allgather and reduce-scatter, and point-to-point send/recv. A ring of n
 * members runs `steps` rounds (allreduce 2(n-1), allgather and reduce-scatter n-1), each moving one
 * chunk of m/n bytes along every ring edge; the collective is one object whose edges are loaded as
 * one pipelined transfer each (the fast, aggregated mode), so on uniform links its time is the
 * closed form steps x latency + steps x (m/n) / bandwidth.
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
    COLL_OP_COUNT
} CollOp;

/* "allreduce", "reduce_scatter", ... as in the report. */
const char *coll_op_name(CollOp op);

/* Bytes one rank moves for a collective of message size m over n ranks (the study's Sec. III):
 * allreduce 2m(n-1)/n; allgather, reduce-scatter and reduce m(n-1)/n; send/recv m. m is the full
 * (gathered / unreduced) buffer. */
double coll_volume(CollOp op, double m, int n);

/* Ring rounds of op over n ranks: allreduce 2(n-1); allgather, reduce-scatter n-1. */
int coll_ring_steps(CollOp op, int n);

typedef struct Collectives Collectives;

Collectives *coll_new(Engine *eng, Network *net, const Topology *topo);
void coll_free(Collectives *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Collectives, coll_free)

/* Run op over the n GPUs in members (global GPU indices, any order, no repeats) with message
 * size `bytes`; done(ctx, arg) runs when every member has finished. For COLL_SEND, members are
 * {source, destination}. A group of one finishes at once. */
void coll_start(Collectives *c, CollOp op, const int *members, int n, double bytes, NetDoneFn done,
                void *ctx, uint64_t arg);

/* The ring order the collective uses for these members: written to ring (n entries). GPUs of a
 * node are kept together, in the order that maximises the slowest edge of the node's ring. */
void coll_ring_order(Collectives *c, const int *members, int n, int *ring);

#endif
