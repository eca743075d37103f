/* machine_error: the machine layer's error quark (machine_error.h). */
#include "machine_error.h"

/* clang-format off */ /* (it would space the quark's dashes, which name the domain in messages) */
G_DEFINE_QUARK(sim-machine-error-quark, machine_error)
/* clang-format on */
