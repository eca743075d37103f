/* fuzz_import: libFuzzer target for `sim import`'s readers and mapper (sim/input/import_read.c,
 * import.c), then the loader on what they write.
 *
 * The input's first byte picks the format: 'N' a GPT-NeoX .yml, 'D' a DeepSpeed JSON (imported
 * with --model gpt-neox-19m), 'H' a Hugging Face config.json, 'F' an llm-foundry YAML, 'A' an
 * accelerate config (with --model gpt-neox-19m), anything else a Megatron-LM argument list; the
 * rest is the file. A scenario that imports is loaded as `sim` would load it (no
 * simulation). Errors are the expected outcome; a crash, a sanitizer report, a leak or a hang is
 * a bug. Seeds: tests/fuzz/corpus/import/ (the files of tests/import/ behind their letter). */
#include <string.h>

#include "fuzz_common.h"
#include "import.h"
#include "scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    ImportFormat f = data[0] == 'N'   ? IMPORT_NEOX
                     : data[0] == 'D' ? IMPORT_DEEPSPEED
                     : data[0] == 'H' ? IMPORT_HF
                     : data[0] == 'F' ? IMPORT_FOUNDRY
                     : data[0] == 'A' ? IMPORT_ACCELERATE
                                      : IMPORT_MEGATRON;
    gboolean yml = f == IMPORT_NEOX || f == IMPORT_FOUNDRY || f == IMPORT_ACCELERATE;
    const char *name = yml ? "import.yml" : f == IMPORT_MEGATRON ? "import.sh" : "import.json";
    const char *path = fuzz_write_file(name, (const char *)data + 1, size - 1);
    gboolean no_model = f == IMPORT_DEEPSPEED || f == IMPORT_ACCELERATE;
    ImportOptions opt = {f, "frontier", 1, no_model ? "gpt-neox-19m" : NULL, NULL};
    g_autoptr(GError) err = NULL;
    g_autofree char *yaml = import_scenario(path, &opt, &err);
    if (yaml) {
        const char *scen = fuzz_write_file("imported.yaml", yaml, strlen(yaml));
        g_autoptr(Scenario) sc = scenario_load(scen, NULL, &err);
    }
    fuzz_report(path, err);
    return 0;
}
