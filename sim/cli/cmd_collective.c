/* cmd_collective: `sim collective --op OP --ranks N [-b MIN -e MAX -f FACTOR | --sizes MIN:MAX]`.
 *
 * One collective over GPUs 0..N-1 of a machine (nodes filled in order), alone on the network, for
 * a range of message sizes, printed as rccl-tests prints its own (ROCm/rccl-tests, src/common.cu):
 * size, count and type, the reduction and the root, then the time, algorithm bandwidth (size /
 * time) and bus bandwidth out of place and in place, and a last `# Avg bus bandwidth` line. Bus
 * bandwidth is algbw x 2(n-1)/n for allreduce, x (n-1)/n for allgather, reduce-scatter
 * (rccl-tests doc/PERFORMANCE.md) and all-to-all (rccl-tests src/alltoall.cu, AlltoAllGetBw), x 1
 * otherwise. Then the algorithm and protocol the cost model picked (`-` for the algorithm of
 * send and all-to-all, which have none) and what limits it: the busiest link of the chosen
 * algorithm (the one its streams crowd most for its capacity), or "latency" where the latency
 * part of the time is the larger. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "collectives.h"
#include "scenario.h"

#define COLL_MAX_NODES (1 << 20) /* the most nodes a scenario may ask for */
#define COLL_MAX_ROWS 4096       /* sizes in one table */

/* rccl-tests' -d names (src/common.cu test_typenames; nccl-tests spells fp8 f8e4m3, f8e5m2) and
 * the bytes of one element. The type sets the count column only: the model moves bytes, and a
 * reduction's arithmetic is not timed. */
static const struct {
    const char *name;
    int bytes;
} data_types[] = {
    {"int8", 1},     {"char", 1},     {"uint8", 1},  {"int32", 4},   {"int", 4},
    {"uint32", 4},   {"int64", 8},    {"uint64", 8}, {"half", 2},    {"float16", 2},
    {"float", 4},    {"float32", 4},  {"double", 8}, {"float64", 8}, {"bfloat16", 2},
    {"fp8_e4m3", 1}, {"fp8_e5m2", 1}, {"f8e4m3", 1}, {"f8e5m2", 1},
};

/* A size as the simulator writes it (8B, 1.5GiB, 128MB) or as rccl-tests' parsesize reads its
 * -b and -e (ROCm/rccl-tests and NVIDIA/nccl-tests src/common.cu: a whole number, then K, M or G
 * in either case for 1024, 1024^2, 1024^3): 1K, 128M, 1G. */
static gboolean parse_size(const char *s, double *out) {
    if (conf_parse_bytes(s, out))
        return TRUE;
    size_t digits = strspn(s, "0123456789");
    if (digits == 0 || digits > 15 || !s[digits] || s[digits + 1])
        return FALSE;
    const char *units = "KkMmGg", *u = strchr(units, s[digits]);
    if (!u)
        return FALSE;
    *out = g_ascii_strtod(s, NULL) * pow(1024.0, (double)((u - units) / 2 + 1));
    return TRUE;
}

/* MIN or MIN:MAX, each at least a byte (a size of 0 would grow for ever), MAX >= MIN. */
static gboolean parse_range(const char *s, double *lo, double *hi) {
    g_auto(GStrv) parts = g_strsplit(s, ":", 2);
    if (!parts[0] || !parse_size(parts[0], lo))
        return FALSE;
    if (!parts[1])
        *hi = *lo;
    else if (!parse_size(parts[1], hi))
        return FALSE;
    return *lo >= 1 && *hi >= *lo;
}

/* rccl-tests' size loop (src/common.cu): from lo, times factor, while at most hi (a relative
 * 1e-9 of slack for sizes written in other units). At most COLL_MAX_ROWS sizes. */
static GArray *size_list(double lo, double hi, double factor) {
    GArray *a = g_array_new(FALSE, FALSE, sizeof(double));
    for (double size = lo; size <= hi * (1 + 1e-9) && a->len < COLL_MAX_ROWS; size *= factor)
        g_array_append_val(a, size);
    return a;
}

/* The count column as rccl-tests prints it: the count argument of the call, elements per rank
 * for allgather, reduce-scatter and all-to-all (sendcount, recvcount, count per peer), of the
 * whole buffer for the others. */
static double count_of(CollOp op, double bytes, int type_bytes, int n) {
    double per = op == COLL_ALLGATHER || op == COLL_REDUCE_SCATTER || op == COLL_ALL_TO_ALL ? n : 1;
    return floor(bytes / type_bytes / per);
}

static gboolean has_algorithm(CollOp op) {
    return op != COLL_SEND && op != COLL_RECV && op != COLL_ALL_TO_ALL;
}

static const char *redop_of(CollOp op) {
    return op == COLL_ALLREDUCE || op == COLL_REDUCE || op == COLL_REDUCE_SCATTER ? "sum" : "none";
}

int cmd_collective(int argc, char **argv) {
    g_autofree char *op_name = NULL, *sizes = NULL, *topology = NULL, *algo_name = NULL,
                    *proto_name = NULL, *format = NULL, *minb = NULL, *maxb = NULL, *dtype = NULL;
    g_auto(GStrv) sets = NULL;
    int ranks = 0, factor = 0;
    gboolean detailed = FALSE;
    GOptionEntry entries[] = {
        {"op", 0, 0, G_OPTION_ARG_STRING, &op_name,
         "allreduce, allgather, reduce_scatter, reduce, broadcast, all_to_all, send", "OP"},
        /* no -n: -n is --nodes in sim search and sim import (and --iters in rccl-tests) */
        {"ranks", 0, 0, G_OPTION_ARG_INT, &ranks, "GPUs taking part (0..N-1)", "N"},
        {"minbytes", 'b', 0, G_OPTION_ARG_STRING, &minb,
         "Smallest size (default 8B), as rccl-tests' -b", "SIZE"},
        {"maxbytes", 'e', 0, G_OPTION_ARG_STRING, &maxb,
         "Largest size (default 1GiB), as rccl-tests' -e", "SIZE"},
        {"stepfactor", 'f', 0, G_OPTION_ARG_INT, &factor,
         "Multiply the size by F from one row to the next (default 2), as rccl-tests' -f (not "
         "--format, which has no short flag here)",
         "F"},
        {"sizes", 0, 0, G_OPTION_ARG_STRING, &sizes,
         "The same as -b MIN -e MAX (doubling unless -f is given)", "MIN:MAX"},
        {"datatype", 'd', 0, G_OPTION_ARG_STRING, &dtype,
         "Element type for the count column: float (default), half, bfloat16, double, int8, "
         "uint8, int32, uint32, int64, uint64, fp8_e4m3, fp8_e5m2",
         "TYPE"},
        {"topology", 't', 0, G_OPTION_ARG_STRING, &topology,
         "Machine: a name under topologies/ or a file (default frontier)", "NAME"},
        {"set", 's', 0, G_OPTION_ARG_FILENAME_ARRAY, &sets,
         "Override a topology key, e.g. node.nics.bandwidth=50GB/s (repeatable)", "KEY=VALUE"},
        {"algo", 0, 0, G_OPTION_ARG_STRING, &algo_name, "Force ring, tree or hierarchical", "ALGO"},
        {"proto", 0, 0, G_OPTION_ARG_STRING, &proto_name, "Force LL or Simple", "PROTO"},
        {"detailed", 0, 0, G_OPTION_ARG_NONE, &detailed,
         "Run rings step by step instead of as one aggregated flow", NULL},
        {"format", 0, 0, G_OPTION_ARG_STRING, &format, "text (default) or csv", "FORMAT"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- time one collective over a range of sizes, like rccl-tests");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(
        ctx, "Sizes run from -b to -e, each -f times the last, as rccl-tests' -b, -e and -f do.\n"
             "-b, -e, -f and -d mean here what they mean in rccl-tests; in the other commands\n"
             "-f is --format (docs/cli.md).\n"
             "Columns as rccl-tests prints them; out-of-place and in-place times are equal in the\n"
             "model (docs/cli.md). Bus bandwidth: algbw x 2(n-1)/n for allreduce,\n"
             "x (n-1)/n for allgather, reduce_scatter and all_to_all, x 1 otherwise.\n\n"
             "Exit status: 0 ok, 2 bad input.");
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
    if (sizes && (minb || maxb)) {
        fprintf(stderr, "sim collective: give --sizes MIN:MAX or -b MIN / -e MAX, not both\n");
        return 2;
    }
    if (sizes && !parse_range(sizes, &lo, &hi)) {
        fprintf(stderr,
                "sim collective: --sizes must be MIN:MAX sizes of at least 1B, MIN <= MAX, such "
                "as 8B:1GiB, not '%s'\n",
                sizes);
        return 2;
    }
    if ((minb && (!parse_size(minb, &lo) || lo < 1)) ||
        (maxb && (!parse_size(maxb, &hi) || hi < 1))) {
        fprintf(stderr,
                "sim collective: -b and -e must be sizes of at least 1B, such as 8B, 1GiB or "
                "rccl-tests' 1K, 128M, 1G (powers of 1024), not '%s'\n",
                minb && !(parse_size(minb, &lo) && lo >= 1) ? minb : maxb);
        return 2;
    }
    if (hi < lo) {
        fprintf(stderr, "sim collective: the largest size (-e) is below the smallest (-b)\n");
        return 2;
    }
    if (factor == 0)
        factor = 2;
    if (factor < 2) {
        fprintf(stderr,
                "sim collective: -f (--stepfactor) must be a whole number of at least 2, "
                "not %d\n",
                factor);
        return 2;
    }
    int type_bytes = 0;
    const char *type_name = dtype ? dtype : "float";
    for (size_t i = 0; i < G_N_ELEMENTS(data_types); i++)
        if (strcmp(type_name, data_types[i].name) == 0)
            type_bytes = data_types[i].bytes;
    if (!type_bytes) {
        fprintf(stderr,
                "sim collective: -d (--datatype) '%s' is not one of int8, uint8, int32, "
                "uint32, int64, uint64, half, float, double, bfloat16, fp8_e4m3, "
                "fp8_e5m2\n",
                type_name);
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
    int nodes = (int)nodes64, n = op == COLL_SEND ? 2 : ranks;
    /* a forced algorithm that cannot run this call used to fall back to ring without a word */
    if (algo >= 0 && (!has_algorithm(op) || !coll_algo_applies(algo, op, n, nodes))) {
        fprintf(stderr,
                "sim collective: --algo %s cannot run %s over %d GPUs on %d node%s: %s; leave "
                "out --algo, or change --op or --ranks\n",
                coll_algo_name(algo), coll_op_name(op), n, nodes, nodes == 1 ? "" : "s",
                !has_algorithm(op) ? "this call has no algorithm to choose"
                : algo == ALGO_RING
                    ? "ring applies to every call"
                    : "NCCL and RCCL run tree and hierarchical for allreduce across nodes only "
                      "(hierarchical with the same GPUs on every node; tree with more than 2)");
        topo_spec_clear(&spec);
        return 2;
    }
    int root = op == COLL_BROADCAST || op == COLL_REDUCE ? 0 : -1; /* GPU 0, as rccl-tests' -r */
    double factor_bw = coll_busbw_factor(op, n);
    g_autoptr(GArray) list = size_list(lo, hi, factor);
    GString *out = g_string_new(NULL); /* printed whole: no half table before an error */
    if (csv)
        g_string_append(out, "op,ranks,nodes,size_bytes,count,type,redop,root,time_us,algbw_GBps,"
                             "busbw_GBps,inplace_time_us,inplace_algbw_GBps,inplace_busbw_GBps,"
                             "algorithm,protocol,limit\n");
    else
        g_string_append_printf(out,
                               "# %s over %d GPUs (%d nodes of %s), %s\n"
                               "#%61s%-36s%s\n"
                               "#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s  %-13s %s\n"
                               "#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s\n",
                               coll_op_name(op), ranks, nodes, spec.name,
                               detailed ? "detailed rings" : "aggregated", "", "out-of-place",
                               "in-place", "size", "count", "type", "redop", "root", "time",
                               "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
                               "algo/proto", "limit", "(B)", "(elements)", "", "", "", "(us)",
                               "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)");
    int status = 0;
    double busbw_sum = 0;
    for (guint i = 0; i < list->len; i++) {
        double size = g_array_index(list, double, i);
        CollChoice choice;
        char limit[128];
        SimTime t = coll_run_alone(&spec, op, ranks, size, detailed, algo, proto, &choice, limit,
                                   sizeof limit, &err);
        if (t < 0) {
            fprintf(stderr, "sim collective: %s\n", err->message);
            status = 2;
            break;
        }
        /* In place and out of place move the same bytes over the same links: the model times
         * one run for both (docs/cli.md). */
        double secs = (double)t / 1e12;
        double algbw = secs > 0 ? size / secs / 1e9 : 0;
        double busbw = algbw * factor_bw;
        busbw_sum += 2 * busbw; /* rccl-tests averages both columns */
        double count = count_of(op, size, type_bytes, n);
        const char *backend =
            choice.backend >= 0
                ? g_array_index(spec.coll.backends, CollBackend, choice.backend).name
                : NULL;
        const char *algo_label = backend             ? backend
                                 : has_algorithm(op) ? coll_algo_name(choice.algo)
                                                     : "-";
        const char *proto_label = backend ? "-" : coll_proto_name(choice.proto);
        if (csv)
            g_string_append_printf(out,
                                   "%s,%d,%d,%.0f,%.0f,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%s,"
                                   "%s,%s\n",
                                   coll_op_name(op), ranks, nodes, size, count, type_name,
                                   redop_of(op), root, secs * 1e6, algbw, busbw, secs * 1e6, algbw,
                                   busbw, algo_label, proto_label, limit);
        else {
            g_autofree char *ap =
                backend ? g_strdup(backend) : g_strdup_printf("%s/%s", algo_label, proto_label);
            g_string_append_printf(out,
                                   " %11.0f %13.0f %9s %7s %7d %8.2f %7.2f %7.2f %6s %8.2f %7.2f "
                                   "%7.2f %6s  %-13s %s\n",
                                   size, count, type_name, redop_of(op), root, secs * 1e6, algbw,
                                   busbw, "N/A", secs * 1e6, algbw, busbw, "N/A", ap, limit);
        }
    }
    if (!csv && status == 0 && list->len > 0)
        g_string_append_printf(out, "# Avg bus bandwidth    : %g\n", busbw_sum / (2 * list->len));
    if (status == 0)
        fputs(out->str, stdout);
    g_string_free(out, TRUE);
    topo_spec_clear(&spec);
    return status;
}
