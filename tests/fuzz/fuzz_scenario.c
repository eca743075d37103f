/* fuzz_scenario: libFuzzer target for the scenario loader and --set.
 *
 * The input (see fuzz_common.h) is written as a scenario file and loaded with scenario_load and its
 * overrides; models, topologies and devices named by the scenario resolve from the source tree as
 * they do for `sim`. A scenario that loads and is tiny (at most FUZZ_MAX_GPUS GPUs, FUZZ_MAX_LAYERS
 * layers, FUZZ_MAX_MICRO micro-batches) is also built into rank programs with sim_inspect and
 * simulated, so that figures the loader lets through are exercised too; anything larger is only
 * loaded (simulating it would cost seconds an input). Errors are the expected outcome; a crash, a
 * sanitizer report, a leak or a hang is a bug. Not for: the command line's other options. */
#include "fuzz_common.h"
#include "scenario.h"
#include "sim.h"

#define FUZZ_MAX_GPUS 16
#define FUZZ_MAX_LAYERS 4
#define FUZZ_MAX_MICRO 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FuzzInput in;
    fuzz_input_split(data, size, &in);
    const char *path = fuzz_write_file("scenario.yaml", in.yaml, in.yaml_len);
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = scenario_load(path, in.sets, &err);
    if (sc && sc->gpus <= FUZZ_MAX_GPUS && sc->model.layers <= FUZZ_MAX_LAYERS &&
        sc->grad_accum <= FUZZ_MAX_MICRO) {
        SimInspect ins;
        g_autoptr(GError) ierr = NULL;
        if (sim_inspect(sc, &ins, &ierr)) {
            g_autoptr(GError) rerr = NULL;
            sim_run_free(sim_run(sc, -1, &rerr));
        }
    }
    fuzz_report(path, err);
    fuzz_input_clear(&in);
    return 0;
}
