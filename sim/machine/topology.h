/* topology: the machine as data. Identical nodes of GPUs joined by direct links (Infinity Fabric
 * xGMI on Frontier) or an NVSwitch, NICs hanging off GPUs over PCIe, and an inter-node fabric:
 * flat (non-blocking), a dragonfly (HPE Slingshot) or a two-level fat tree (InfiniBand).
 *
 * For: where a rank lives (node, GPU); every directed link of the machine as an integer id with a
 * capacity; the path (list of link ids) between two GPUs, minimal or non-minimal (Valiant).
 * Not for: moving bytes or sharing links (network.c), or choosing collective algorithms.
 *
 * Links are numbered arithmetically (node-local links first, node by node, then the fabric's), so a
 * machine of 9,408 nodes costs no per-link memory here. */
#ifndef SIM_TOPOLOGY_H
#define SIM_TOPOLOGY_H

#include "coll_spec.h"
#include "device.h"
#include "engine.h"

#define TOPO_MAX_GPUS COLL_MAX_NODE_GPUS /* GPUs per node */
#define TOPO_MAX_NICS 16                 /* NICs per node */
#define TOPO_MAX_HOPS 24                 /* links on one path */
#define TOPO_MAX_LINKS (1 << 26)         /* links of a fabric (memory is per link) */

typedef struct {
    int a, b;  /* GPU indices within a node */
    int links; /* parallel links between them, each direction */
} TopoPair;

typedef enum { FABRIC_FLAT, FABRIC_DRAGONFLY, FABRIC_FAT_TREE } FabricKind;
/* Dragonfly routes: minimal; Valiant (through a random third group); adaptive (minimal between
 * groups; inside a group split between the direct switch-to-switch link and the two-hop paths
 * through the other switches of the group, see topology.c). */
typedef enum { ROUTING_MINIMAL, ROUTING_VALIANT, ROUTING_ADAPTIVE } Routing;

/* Keys of a topology file that topo_new's checks cite, so that its messages name the file, line and
 * column as the loader's do (STYLE.md 5). */
typedef enum {
    TOPO_AT_GPUS,          /* node.gpus */
    TOPO_AT_LINKS,         /* node.links (or node.switch, or node) */
    TOPO_AT_NICS,          /* node.nics.count (or node) */
    TOPO_AT_ATTACH,        /* node.nics.attach */
    TOPO_AT_FABRIC,        /* fabric.kind (or fabric) */
    TOPO_AT_GROUPS,        /* fabric.groups */
    TOPO_AT_SWITCHES,      /* fabric.switches_per_group */
    TOPO_AT_MACHINE_NODES, /* fabric.nodes */
    TOPO_AT_COUNT
} TopoAt;

typedef struct {
    char *name;
    char *at[TOPO_AT_COUNT]; /* "FILE:LINE:COLUMN" (or "--set KEY=VALUE") of each TopoAt key;
                                NULL for a spec built in code */
    DeviceSpec device;
    int gpus_per_node;
    double link_bandwidth;      /* one GPU-GPU link, bytes/s per direction */
    SimTime link_latency;       /* one GPU-GPU hop, picoseconds */
    GArray *pairs;              /* TopoPair: which GPUs are linked and by how many links */
    double switch_bandwidth;    /* NVSwitch: per GPU, bytes/s per direction; 0 = use pairs */
    int nics;                   /* NICs per node */
    int nic_gpu[TOPO_MAX_NICS]; /* GPU each NIC hangs off */
    double nic_bandwidth;       /* bytes/s per direction per NIC */
    double pcie_bandwidth;      /* GPU-NIC PCIe, bytes/s per direction */
    SimTime nic_latency;        /* per NIC crossed, picoseconds */

    FabricKind fabric;
    Routing routing;
    SimTime fabric_latency;  /* flat fabric: NIC to NIC, picoseconds */
    SimTime switch_latency;  /* dragonfly / fat tree: per switch crossed, picoseconds */
    int groups;              /* dragonfly: groups in the machine */
    int nodes_per_group;     /* dragonfly */
    int switches_per_group;  /* dragonfly; a node's NICs sit on different switches */
    double local_bandwidth;  /* dragonfly: switch-switch link in a group, bytes/s */
    int global_links;        /* dragonfly: links between every pair of groups */
    double global_bandwidth; /* dragonfly: one global link, bytes/s */
    int nodes_per_leaf;      /* fat tree: nodes per leaf switch (rail-optimised: one leaf per
                                NIC index) */
    double taper;            /* fat tree: leaf downlink / uplink capacity (1 = full bisection) */
    int machine_nodes;       /* nodes the machine has (0 = as many as the job needs) */
    CollSpec coll;
    /* The host CPU thread that drives each GPU (node.host); all 0 when not given */
    SimTime host_op_dispatch;     /* CPU time of one ATen operator dispatched by eager PyTorch's
                                     Python forward (and recomputation), ps */
    SimTime host_bwd_op_dispatch; /* of one dispatched by the autograd engine in backward, ps */
    SimTime host_hook;            /* of one DeepSpeed ZeRO-1/2 per-parameter gradient hook, ps */
    SimTime host_comm_dispatch;   /* CPU time of one collective or send/recv call, ps */
    SimTime host_step;            /* CPU time of the optimizer step's framework code after the
                                     synchronisation (loss scaler, grad norm, schedulers), ps */
} TopologySpec;

void topo_spec_clear(TopologySpec *t);
/* Collective costs when the topology file has no collectives block: ring and Simple only, no base
 * latency, a link's latency per intra-node step and the fabric's per network step. Call after
 * the node and fabric fields are set. */
void topo_spec_default_collectives(TopologySpec *t);

typedef struct Topology Topology;

typedef enum {
    LINK_GPU,         /* GPU to GPU in a node (xGMI, NVLink) */
    LINK_SWITCH_UP,   /* GPU to the node's NVSwitch */
    LINK_SWITCH_DOWN, /* NVSwitch to GPU */
    LINK_PCIE_UP,     /* GPU to NIC */
    LINK_PCIE_DOWN,   /* NIC to GPU */
    LINK_NIC_OUT,     /* NIC to the fabric (injection) */
    LINK_NIC_IN,      /* fabric to NIC (ejection) */
    LINK_LOCAL,       /* dragonfly: switch to switch in a group */
    LINK_GLOBAL,      /* dragonfly: group to group */
    LINK_LEAF_UP,     /* fat tree: leaf to spine */
    LINK_LEAF_DOWN,   /* fat tree: spine to leaf */
    LINK_PORT_OUT,    /* dragonfly, adaptive: a switch's S - 2 local links out, as one link */
    LINK_PORT_IN,     /* dragonfly, adaptive: its S - 2 local links in, as one link */
    LINK_KIND_COUNT
} LinkKind;

typedef struct {
    SimTime latency;  /* sum over hops, picoseconds */
    double bandwidth; /* bottleneck, bytes/s */
    int hops;         /* links crossed */
    gboolean network; /* crosses the inter-node fabric */
} TopoRoute;

typedef struct {
    int n;                       /* links on the path */
    int32_t link[TOPO_MAX_HOPS]; /* link ids, in order */
    SimTime latency;             /* hardware latency, picoseconds */
    int spread_group;            /* adaptive routing: the path also crosses group spread_group */
    int spread_a, spread_b;      /* from switch spread_a to switch spread_b, split as topology.c
                                    says (not in link[]); spread_group -1: none */
} TopoPath;

/* Build the machine for a job of `nodes` nodes (placed on machine nodes 0..nodes-1). Fails
 * (MACHINE_ERROR_INVALID) when the node's links leave a GPU unreachable, a NIC hangs off a GPU that
 * does not exist, or the job needs more nodes than the machine has; the message starts with the
 * position of the offending key (spec->at) when the spec came from a file. */
Topology *topo_new(const TopologySpec *spec, int nodes, GError **err);
void topo_free(Topology *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Topology, topo_free)

const TopologySpec *topo_spec(const Topology *t);
int topo_gpus_per_node(const Topology *t);

/* The NIC a local GPU sends through (-1 without NICs). */
int topo_nic_of(const Topology *t, int local_gpu);

/* Number of link ids (every id in 0..topo_links()-1 is a link). */
int32_t topo_links(const Topology *t);
double topo_link_capacity(const Topology *t, int32_t link); /* bytes/s */
LinkKind topo_link_kind(const Topology *t, int32_t link);
/* The node a node-local link (GPU, NVSwitch, PCIe, NIC) belongs to; -1 for fabric links. */
int topo_link_node(const Topology *t, int32_t link);
/* The same node-local link on node `node` (every node is built alike); a fabric link unchanged. */
int32_t topo_link_on_node(const Topology *t, int32_t link, int node);
const char *topo_link_kind_name(LinkKind k);
/* "node 0 GPU 0->1", "group 3 switch 4->9", ... into buf. */
void topo_link_describe(const Topology *t, int32_t link, char *buf, size_t size);

/* Path from global GPU src to global GPU dst (src != dst). `salt` picks among equal choices
 * (which global link, which Valiant intermediate group) deterministically. */
void topo_path(const Topology *t, int src, int dst, uint64_t salt, TopoPath *out);
/* The same, leaving src's node by NIC nic_out and entering dst's by NIC nic_in (-1: the NIC
 * that GPU uses, topo_nic_of); the NICs matter only between nodes. */
void topo_path_nics(const Topology *t, int src, int dst, int nic_out, int nic_in, uint64_t salt,
                    TopoPath *out);
/* Of that path, the fabric's links alone (those of no node: topo_link_node -1), in the same order
 * and with the same in-group spread; latency 0. A data-parallel ring's symmetric form keeps only
 * these of the edges that neither start nor end on its representative's node. */
void topo_path_fabric(const Topology *t, int src, int dst, int nic_out, int nic_in, uint64_t salt,
                      TopoPath *out);

/* Weight of one stream on a link it crosses whole, in the units flows are loaded in
 * (net_loads_add_path): S - 1 for a dragonfly of S >= 3 switches per group under adaptive
 * routing, where an in-group split puts 1 unit on the direct link and S - 2 on the two-hop paths;
 * 1 otherwise. */
uint32_t topo_stream_weight(const Topology *t);

/* Dragonfly: the link from switch a to switch b (a != b) of group g. */
int32_t topo_local_link(const Topology *t, int g, int a, int b);
/* Dragonfly, adaptive: switch s of group g's port link, out (LINK_PORT_OUT) or in. */
int32_t topo_port_link(const Topology *t, int g, int s, gboolean out);

/* A well-mixed salt for the path between src and dst (splitmix64 of the pair). */
uint64_t topo_pair_salt(int src, int dst);

/* Latency and bottleneck bandwidth of the minimal path, uncontended. */
TopoRoute topo_route(const Topology *t, int src, int dst);

#endif
