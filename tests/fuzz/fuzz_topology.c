/* fuzz_topology: libFuzzer target for the topology loader (as `sim collective --topology FILE`
 * loads it) and its --set overrides, then the topology builder.
 *
 * The input (see fuzz_common.h) is written as a topology file and loaded with
 * scenario_load_topology; overrides are relative to the topology. A topology that loads is built
 * for FUZZ_NODES nodes with topo_new (a machine's links and routes, no simulation). Errors are the
 * expected outcome; a crash, a sanitizer report, a leak or a hang is a bug. */
#include "fuzz_common.h"
#include "scenario.h"
#include "topology.h"

#define FUZZ_NODES 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FuzzInput in;
    fuzz_input_split(data, size, &in);
    const char *path = fuzz_write_file("topology.yaml", in.yaml, in.yaml_len);
    g_autoptr(GError) err = NULL;
    TopologySpec spec;
    if (scenario_load_topology(path, in.sets, &spec, &err)) {
        const int nodes[] = {1, FUZZ_NODES};
        for (int i = 0; i < 2; i++) {
            g_autoptr(GError) terr = NULL;
            topo_free(topo_new(&spec, nodes[i], &terr));
        }
        topo_spec_clear(&spec);
    }
    fuzz_report(path, err);
    fuzz_input_clear(&in);
    return 0;
}
