/* sweep_mpi: one sweep over the ranks of an MPI job (`mpirun -n N sim sweep ...`).
 *
 * For: spreading a sweep's points over processes, possibly on many machines. Every rank prepares
 * the same sweep (deterministic, so they agree on points and columns); rank 0 opens the output
 * (and reads a resumed file), tells every rank which points are left, and runs its share while
 * receiving the rows of the others, which it writes exactly as a single process would: the output
 * is byte for byte the same. Point i runs on rank i mod N, each rank on its own thread pool; only
 * the main thread calls MPI (MPI_THREAD_FUNNELED).
 * Not for: anything when the build has no MPI (SIM_MPI off): then sweep_mpi_init says no and the
 * sweep runs in one process. */
#ifndef SIM_SWEEP_MPI_H
#define SIM_SWEEP_MPI_H

#include "sweep.h"

/* When built with MPI and started by an MPI launcher (its environment says so), initialise MPI
 * and return TRUE with this process's rank and the number of ranks. Otherwise FALSE: one process.
 */
gboolean sweep_mpi_init(int *argc, char ***argv, int *rank, int *size);
void sweep_mpi_finalize(void);

/* Processes of this job on this machine (1 without MPI), to share its cores among them. */
int sweep_mpi_local_size(void);

/* Rank 0 passes status (0 to go on, else an exit status every rank returns) to all ranks. */
int sweep_mpi_bcast_status(int status);

/* Run the sweep over all ranks. Rank 0 passes out (its todo says which points are left) and
 * receives every row into it; other ranks pass NULL. */
void sweep_mpi_run(const Sweep *sw, SweepOut *out, int jobs, int dedup);

#endif
