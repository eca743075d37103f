/* machine_error: the machine layer's error domain (device, topology, network, collectives).
 *
 * For: what a user can get wrong that only the machine layer sees: a topology whose links cannot
 * be built, a kernel or collective whose time does not fit 64-bit picoseconds. The input layer
 * above has its own domain (CONF_ERROR, conf.h) for YAML; the machine does not raise it, since
 * it sits below input (SIM_LAYERS) and must not include conf.h. Callers that sort errors by
 * their cause count both as the input's fault: sim_error_is_input (run/sim.c), exit status 2. */
#ifndef SIM_MACHINE_ERROR_H
#define SIM_MACHINE_ERROR_H

#include <glib.h>

#define MACHINE_ERROR (machine_error_quark())
GQuark machine_error_quark(void);

typedef enum {
    MACHINE_ERROR_INVALID, /* a machine that cannot be: a GPU unreachable, a NIC on a missing
                              GPU, a job larger than the machine */
    MACHINE_ERROR_RANGE,   /* a kernel or collective past SIM_TIME_MAX picoseconds */
} MachineError;

#endif
