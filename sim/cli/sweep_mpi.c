/* sweep_mpi: points over MPI ranks, rows gathered on rank 0.
 *
 * Messages (tag ROW_TAG, to rank 0): a RowHead (point, failed flag) followed by the row text, or
 * the error message when the point failed, in one MPI_BYTE buffer. Rank 0 knows how many rows to
 * expect from the others, so no end message is needed. */
#include "sweep_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The launcher's word on this process's rank and the job's size (-1 when not launched by one):
 * Open MPI's mpirun, PMIx-based launchers (srun, prterun), MPICH's Hydra. */
static int launcher_env(const char *const *names) {
    for (const char *const *n = names; *n; n++)
        if (g_getenv(*n))
            return atoi(g_getenv(*n));
    return -1;
}

static int launcher_size(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", NULL};
    return launcher_env(names);
}

static int launcher_rank(void) {
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", NULL};
    return launcher_env(names);
}

#ifdef SIM_MPI
#include <mpi.h>

#define ROW_TAG 17

typedef struct {
    gint32 point;
    gint32 failed; /* 0 a row, 1 an internal failure, 2 a failure on bad input */
} RowHead;

gboolean sweep_mpi_init(int *argc, char ***argv, int *rank, int *size) {
    *rank = 0;
    *size = 1;
    if (launcher_size() < 0 && launcher_rank() < 0)
        return FALSE;
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    if (provided < MPI_THREAD_FUNNELED && *rank == 0)
        fprintf(stderr,
                "sim sweep: this MPI does not promise MPI_THREAD_FUNNELED (level %d); sweep "
                "threads never call MPI, only the main thread does, which MPIs allow in practice\n",
                provided);
    return TRUE;
}

void sweep_mpi_finalize(void) {
    MPI_Finalize();
}

int sweep_mpi_local_size(void) {
    const char *s = g_getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (!s)
        s = g_getenv("MPI_LOCALNRANKS"); /* MPICH */
    int n = s ? atoi(s) : 1;
    return n > 0 ? n : 1;
}

int sweep_mpi_bcast_status(int status) {
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return status;
}

typedef struct {
    SweepOut *out;
    int remaining; /* rows still to come from other ranks */
} Gather;

/* Rank 0: take every row that has arrived (block for one when local_done). */
static gboolean gather_idle(void *ctx, gboolean local_done) {
    Gather *g = ctx;
    while (g->remaining > 0) {
        MPI_Status st;
        int flag = 0;
        if (local_done) {
            MPI_Probe(MPI_ANY_SOURCE, ROW_TAG, MPI_COMM_WORLD, &st);
            flag = 1;
        } else {
            MPI_Iprobe(MPI_ANY_SOURCE, ROW_TAG, MPI_COMM_WORLD, &flag, &st);
        }
        if (!flag)
            break;
        int n = 0;
        MPI_Get_count(&st, MPI_BYTE, &n);
        g_autofree char *buf = g_malloc((gsize)n + 1);
        MPI_Recv(buf, n, MPI_BYTE, st.MPI_SOURCE, ROW_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        g_assert(n >= (int)sizeof(RowHead));
        buf[n] = '\0';
        RowHead h;
        memcpy(&h, buf, sizeof h);
        SweepResult *r = g_new0(SweepResult, 1);
        r->point = h.point;
        char *text = g_strdup(buf + sizeof h);
        r->bad_input = h.failed == 2;
        if (h.failed)
            r->error = text;
        else
            r->row = text;
        g->remaining--;
        sweep_out_add(g->out, r);
    }
    return g->remaining > 0;
}

static void gather_add(void *ctx, SweepResult *r) {
    sweep_out_add(((Gather *)ctx)->out, r);
}

/* Other ranks: send each row to rank 0 as it finishes. */
static void send_row(void *ctx, SweepResult *r) {
    (void)ctx;
    const char *text = r->error ? r->error : r->row;
    size_t len = strlen(text);
    RowHead h = {r->point, r->error ? (r->bad_input ? 2 : 1) : 0};
    g_autofree char *buf = g_malloc(sizeof h + len);
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, text, len);
    MPI_Send(buf, (int)(sizeof h + len), MPI_BYTE, 0, ROW_TAG, MPI_COMM_WORLD);
    sweep_result_free(r);
}

void sweep_mpi_run(const Sweep *sw, SweepOut *out, int jobs, int dedup) {
    int rank, size, n = sweep_points(sw);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_autofree guint8 *todo = g_new0(guint8, MAX(n, 1));
    if (rank == 0)
        memcpy(todo, sweep_out_todo(out), (size_t)n);
    MPI_Bcast(todo, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    g_autofree guint8 *mine = g_new0(guint8, MAX(n, 1));
    Gather g = {out, 0};
    for (int i = 0; i < n; i++) {
        mine[i] = todo[i] && i % size == rank;
        if (todo[i] && i % size != 0)
            g.remaining++;
    }
    if (rank == 0)
        sweep_run(sw, jobs, dedup, mine, gather_add, gather_idle, &g);
    else
        sweep_run(sw, jobs, dedup, mine, send_row, NULL, NULL);
}

#else /* no MPI in this build */

gboolean sweep_mpi_init(int *argc, char ***argv, int *rank, int *size) {
    (void)argc;
    (void)argv;
    /* Started by mpirun anyway: say so (cmd_sweep refuses to run N copies of one sweep). */
    *size = MAX(launcher_size(), 1);
    *rank = MAX(launcher_rank(), 0);
    return FALSE;
}

void sweep_mpi_finalize(void) {}

int sweep_mpi_local_size(void) {
    return 1;
}

int sweep_mpi_bcast_status(int status) {
    return status;
}

void sweep_mpi_run(const Sweep *sw, SweepOut *out, int jobs, int dedup) {
    (void)sw;
    (void)out;
    (void)jobs;
    (void)dedup;
    g_assert_not_reached();
}

#endif
