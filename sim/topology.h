/* topology: the machine as data. Identical nodes of GPUs joined by direct links (Infinity Fabric
 * xGMI on Frontier), NICs hanging off some GPUs, and an inter-node fabric.
 *
 * For: where a rank lives (node, GPU), and the route between two GPUs with its latency and its
 * bottleneck bandwidth.
 * Not for: moving bytes or sharing links (network.c), or choosing collective algorithms.
 *
 * The inter-node fabric is, for now, non-blocking: every NIC reaches every other at full rate
 * after a fixed latency. The dragonfly replaces the inside of topo_route, not its callers. */
#ifndef SIM_TOPOLOGY_H
#define SIM_TOPOLOGY_H

#include "device.h"
#include "engine.h"

#define TOPO_MAX_GPUS 16 /* GPUs per node */
#define TOPO_MAX_NICS 16 /* NICs per node */

typedef struct {
    int a, b;  /* GPU indices within a node */
    int links; /* parallel links between them, each direction */
} TopoPair;

typedef struct {
    char *name;
    DeviceSpec device;
    int gpus_per_node;
    double link_bandwidth;      /* one GPU-GPU link, bytes/s per direction */
    SimTime link_latency;       /* one GPU-GPU hop, picoseconds */
    GArray *pairs;              /* TopoPair: which GPUs are linked and by how many links */
    int nics;                   /* NICs per node */
    int nic_gpu[TOPO_MAX_NICS]; /* GPU each NIC hangs off */
    double nic_bandwidth;       /* bytes/s per direction per NIC */
    double pcie_bandwidth;      /* GPU-NIC PCIe, bytes/s per direction */
    SimTime nic_latency;        /* per NIC crossed, picoseconds */
    SimTime fabric_latency;     /* NIC to NIC across the inter-node fabric, picoseconds */
} TopologySpec;

void topo_spec_clear(TopologySpec *t);

typedef struct Topology Topology;

typedef struct {
    SimTime latency;  /* sum over hops, picoseconds */
    double bandwidth; /* bottleneck, bytes/s */
    int hops;         /* links crossed */
    gboolean network; /* crosses the inter-node fabric */
} TopoRoute;

/* Build the machine for `nodes` nodes. Fails (CONF_ERROR_INVALID) when the node's links leave a
 * GPU unreachable or a NIC hangs off a GPU that does not exist. */
Topology *topo_new(const TopologySpec *spec, int nodes, GError **err);
void topo_free(Topology *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Topology, topo_free)

const TopologySpec *topo_spec(const Topology *t);
int topo_nodes(const Topology *t);
int topo_gpus(const Topology *t);
int topo_gpus_per_node(const Topology *t);

/* Route from global GPU src to global GPU dst (src != dst). O(1). */
TopoRoute topo_route(const Topology *t, int src, int dst);

/* Bandwidth of the direct links between local GPUs a and b (0 when none), bytes/s. */
double topo_direct_bandwidth(const Topology *t, int a, int b);

#endif
