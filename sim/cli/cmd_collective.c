/* cmd_collective: `sim collective --op OP --ranks N [--sizes 8B:1GiB] [--topology NAME]`.
 *
 * One collective over GPUs 0..N-1 of a machine (nodes filled in order), alone on the network, for
 * a range of message sizes doubling from the first to the last, printed as rccl-tests and the OSU
 * micro-benchmarks print theirs: size, time, algorithm bandwidth (size / time) and bus bandwidth
 * (algbw x 2(n-1)/n for allreduce, x (n-1)/n for allgather and reduce-scatter; rccl-tests'
 * convention), with the algorithm and protocol the cost model picked and what limits it: the
 * busiest link of the chosen algorithm (the one its streams crowd most for its capacity), or
 * "latency" where the latency part of the time is the larger. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "collectives.h"
#include "scenario.h"

#define COLL_MAX_NODES (1 << 20) /* the most nodes a scenario may ask for */

/* MIN or MIN:MAX, each at least a byte (a size of 0 would double for ever), MAX >= MIN. */
static gboolean parse_range(const char *s, double *lo, double *hi) {
    g_auto(GStrv) parts = g_strsplit(s, ":", 2);
    if (!parts[0] || !conf_parse_bytes(parts[0], lo))
        return FALSE;
    if (!parts[1])
        *hi = *lo;
    else if (!conf_parse_bytes(parts[1], hi))
        return FALSE;
    return *lo >= 1 && *hi >= *lo;
}

int cmd_collective(int argc, char **argv) {
    g_autofree char *op_name = NULL, *sizes = NULL, *topology = NULL, *algo_name = NULL,
                    *proto_name = NULL, *format = NULL;
    g_auto(GStrv) sets = NULL;
    int ranks = 0;
    gboolean detailed = FALSE;
    GOptionEntry entries[] = {
        {"op", 0, 0, G_OPTION_ARG_STRING, &op_name,
         "allreduce, allgather, reduce_scatter, reduce, broadcast, all_to_all, send", "OP"},
        {"ranks", 'n', 0, G_OPTION_ARG_INT, &ranks, "GPUs taking part (0..N-1)", "N"},
        {"sizes", 0, 0, G_OPTION_ARG_STRING, &sizes,
         "Message sizes, doubling from MIN to MAX (default 8B:1GiB)", "MIN:MAX"},
        {"topology", 't', 0, G_OPTION_ARG_STRING, &topology,
         "Machine: a name under topologies/ or a file (default frontier)", "NAME"},
        {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets,
         "Override a topology key, e.g. node.nics.bandwidth=50GB/s (repeatable)", "KEY=VALUE"},
        {"algo", 0, 0, G_OPTION_ARG_STRING, &algo_name, "Force ring, tree or hierarchical", "ALGO"},
        {"proto", 0, 0, G_OPTION_ARG_STRING, &proto_name, "Force LL or Simple", "PROTO"},
        {"detailed", 0, 0, G_OPTION_ARG_NONE, &detailed,
         "Run rings step by step instead of as one aggregated flow", NULL},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "text (default) or csv", "FORMAT"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- time one collective over a range of sizes, like rccl-tests");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    g_autofree char *help = NULL;
    if (!cmd_parse(ctx, "sim collective", &argc, &argv, &help, &err)) {
        fprintf(stderr, "sim collective: %s (try --help)\n", err->message);
        return 2;
    }
    if (help) {
        fputs(help, stdout);
        return 0;
    }
    int op = op_name ? coll_op_parse(op_name) : -1;
    if (op < 0 || op == COLL_RECV) {
        fprintf(stderr, "sim collective: --op must be one of allreduce, allgather, reduce_scatter, "
                        "reduce, broadcast, all_to_all, send\n");
        return 2;
    }
    if (ranks < 2) {
        fprintf(stderr, "sim collective: --ranks must be at least 2\n");
        return 2;
    }
    double lo = 8, hi = 1024.0 * 1024 * 1024;
    if (sizes && !parse_range(sizes, &lo, &hi)) {
        fprintf(stderr,
                "sim collective: --sizes must be MIN:MAX sizes of at least 1B, MIN <= MAX, such "
                "as 8B:1GiB, not '%s'\n",
                sizes);
        return 2;
    }
    int algo = coll_algo_parse(algo_name), proto = coll_proto_parse(proto_name);
    if ((algo_name && algo < 0) || (proto_name && proto < 0)) {
        fprintf(stderr, "sim collective: --algo is ring, tree or hierarchical; --proto LL or "
                        "Simple\n");
        return 2;
    }
    gboolean csv = format && !strcmp(format, "csv");
    if (format && !csv && strcmp(format, "text") != 0) {
        fprintf(stderr, "sim collective: --format must be text or csv\n");
        return 2;
    }
    TopologySpec spec;
    if (!scenario_load_topology(topology ? topology : "frontier", sets, &spec, &err)) {
        fprintf(stderr, "sim collective: %s\n", err->message);
        return 2;
    }
    int64_t nodes64 = ((int64_t)ranks + spec.gpus_per_node - 1) / spec.gpus_per_node;
    if (nodes64 > COLL_MAX_NODES) {
        fprintf(stderr,
                "sim collective: --ranks %d needs %" G_GINT64_FORMAT
                " nodes of %s; at most %d nodes are supported\n",
                ranks, nodes64, spec.name, COLL_MAX_NODES);
        topo_spec_clear(&spec);
        return 2;
    }
    int nodes = (int)nodes64;
    if (csv)
        puts("op,ranks,nodes,size_bytes,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,limit");
    else
        printf("# %s over %d GPUs (%d nodes of %s), %s\n#%13s %12s %11s %11s  %-13s %s\n",
               coll_op_name(op), ranks, nodes, spec.name,
               detailed ? "detailed rings" : "aggregated", "size (B)", "time (us)", "algbw GB/s",
               "busbw GB/s", "algorithm", "limit");
    int status = 0;
    for (double size = lo; size <= hi * (1 + 1e-9); size *= 2) {
        CollChoice choice;
        char limit[128];
        SimTime t = coll_run_alone(&spec, op, ranks, size, detailed, algo, proto, &choice, limit,
                                   sizeof limit, &err);
        if (t < 0) {
            fprintf(stderr, "sim collective: %s\n", err->message);
            status = 2;
            break;
        }
        double secs = (double)t / 1e12;
        double algbw = secs > 0 ? size / secs / 1e9 : 0;
        double busbw = algbw * coll_busbw_factor(op, op == COLL_SEND ? 2 : ranks);
        const char *backend =
            choice.backend >= 0
                ? g_array_index(spec.coll.backends, CollBackend, choice.backend).name
                : NULL;
        g_autofree char *algo_col =
            g_strdup_printf("%s%s%s", backend ? backend : coll_algo_name(choice.algo),
                            backend ? "" : "/", backend ? "" : coll_proto_name(choice.proto));
        if (csv)
            printf("%s,%d,%d,%.0f,%.3f,%.3f,%.3f,%s,%s,%s\n", coll_op_name(op), ranks, nodes, size,
                   secs * 1e6, algbw, busbw, backend ? backend : coll_algo_name(choice.algo),
                   backend ? "-" : coll_proto_name(choice.proto), limit);
        else
            printf("%14.0f %12.2f %11.3f %11.3f  %-13s %s\n", size, secs * 1e6, algbw, busbw,
                   algo_col, limit);
    }
    topo_spec_clear(&spec);
    return status;
}
