/* report_colocate: text and JSON writers for `sim colocate`. JSON is written by hand as report.c
 * writes it: fixed key order, numbers by report_format_number, so identical runs give identical
 * bytes. */
#include "report_colocate.h"

#include <math.h>

#define TEXT_LINKS 10 /* shared links the text lists (JSON lists all) */

static void num(FILE *out, double v) {
    char buf[32];
    fputs(report_format_number(v, buf), out);
}

/* together / alone; 1 where alone took no time */
static double slowdown(const ColocateJob *jb) {
    return jb->alone > 0 ? (double)jb->together / (double)jb->alone : 1.0;
}

static void write_json_job(FILE *out, const Colocation *c, const ColocateJob *jb) {
    const char *i3 = "      ";
    fputs("    {\n", out);
    report_kv_str(out, i3, "scenario", jb->path, FALSE);
    fprintf(out, "%s\"nodes\": [", i3);
    for (int k = 0; k < jb->nodes; k++) {
        fputs(k ? ", " : "", out);
        num(out, jb->node[k]);
    }
    fputs("],\n", out);
    report_kv_num(out, i3, "gpus", jb->sc->gpus, FALSE);
    report_kv_num(out, i3, "ranks_simulated", jb->sc->gpus, FALSE);
    report_kv_num(out, i3, "alone_iteration_time_s", sim_time_s(jb->alone), FALSE);
    report_kv_num(out, i3, "together_iteration_time_s", sim_time_s(jb->together), FALSE);
    report_kv_num(out, i3, "slowdown", slowdown(jb), FALSE);
    report_kv_num(out, i3, "alone_critical_rank", jb->alone_critical, FALSE);
    report_kv_num(out, i3, "together_critical_rank", jb->together_critical, FALSE);
    report_kv_num(out, i3, "alone_comm_s", sim_time_s(jb->alone_times.comm), FALSE);
    report_kv_num(out, i3, "together_comm_s", sim_time_s(jb->together_times.comm), FALSE);
    report_kv_num(out, i3, "alone_exposed_comm_s", sim_time_s(jb->alone_times.exposed), FALSE);
    report_kv_num(out, i3, "together_exposed_comm_s", sim_time_s(jb->together_times.exposed),
                  FALSE);
    report_kv_num(out, i3, "overlap_window_fraction",
                  jb->together > 0 ? (double)colocate_window(c) / (double)jb->together : 1.0,
                  FALSE);
    report_kv_num(out, i3, "link_bytes", jb->bytes, FALSE);
    report_kv_num(out, i3, "shared_links", jb->shared_links, TRUE);
    fputs("    }", out);
}

static void write_json(FILE *out, const Colocation *c, gboolean timing) {
    const Topology *topo = colocate_topology(c);
    const TopologySpec *spec = topo_spec(topo);
    const char *i1 = "  ", *i2 = "    ", *i3 = "      ";
    int n = colocate_jobs(c);
    fputs("{\n", out);
    report_kv_num(out, i1, "schema_version", REPORT_SCHEMA_VERSION, FALSE);
    report_kv_str(out, i1, "command", "colocate", FALSE);
    report_kv_str(out, i1, "sim_version", SIM_VERSION, FALSE);
    fprintf(out, "%s\"machine\": {\n", i1);
    report_kv_str(out, i2, "topology", spec->name, FALSE);
    report_kv_str(out, i2, "device", spec->device.name, FALSE);
    report_kv_num(out, i2, "nodes", colocate_nodes(c), FALSE);
    report_kv_num(out, i2, "gpus_per_node", spec->gpus_per_node, TRUE);
    fprintf(out, "%s},\n", i1);
    report_kv_str(out, i1, "placement", colocate_policy_name(colocate_policy(c)), FALSE);
    if (colocate_policy(c) == COLOCATE_RANDOM)
        report_kv_num(out, i1, "seed", colocate_seed(c), FALSE);
    report_kv_num(out, i1, "overlap_window_s", sim_time_s(colocate_window(c)), FALSE);
    fprintf(out, "%s\"jobs\": [\n", i1);
    for (int j = 0; j < n; j++) {
        write_json_job(out, c, colocate_job(c, j));
        fputs(j + 1 < n ? ",\n" : "\n", out);
    }
    fprintf(out, "%s],\n%s\"shared_links\": [", i1, i1);
    for (guint i = 0; i < colocate_links(c); i++) {
        const ColocateLink *l = colocate_link(c, i);
        char name[96];
        topo_link_describe(topo, l->link, name, sizeof name);
        fprintf(out, "%s\n%s{\n", i ? "," : "", i2);
        report_kv_num(out, i3, "id", l->link, FALSE);
        report_kv_str(out, i3, "name", name, FALSE);
        report_kv_str(out, i3, "kind", topo_link_kind_name(topo_link_kind(topo, l->link)), FALSE);
        report_kv_num(out, i3, "capacity_bytes_per_s", l->capacity, FALSE);
        report_kv_num(out, i3, "jobs", l->jobs, FALSE);
        fprintf(out, "%s\"job_bytes\": [", i3);
        for (int j = 0; j < n; j++) {
            fputs(j ? ", " : "", out);
            num(out, l->bytes[j]);
        }
        fputs("],\n", out);
        report_kv_num(out, i3, "busy_s", l->busy_s, TRUE);
        fprintf(out, "%s}", i2);
    }
    fprintf(out, "%s],\n", colocate_links(c) ? "\n  " : "");
    fprintf(out, "%s\"sim\": {\n", i1);
    fprintf(out, "%s\"all_ranks\": true,\n", i2);
    report_kv_num(out, i2, "runs", n + 1, FALSE);
    report_kv_num(out, i2, "events", (double)colocate_events(c), FALSE);
    report_kv_num(out, i2, "wall_s", timing ? colocate_wall_s(c) : 0, TRUE);
    fprintf(out, "%s}\n}\n", i1);
}

/* A job's machine nodes as ascending runs: "0-1", "3, 7-9". */
static void node_ranges(GString *g, const ColocateJob *jb) {
    for (int k = 0; k < jb->nodes;) {
        int e = k;
        while (e + 1 < jb->nodes && jb->node[e + 1] == jb->node[e] + 1)
            e++;
        g_string_append_printf(g, "%s%d", k ? ", " : "", jb->node[k]);
        if (e > k)
            g_string_append_printf(g, "-%d", jb->node[e]);
        k = e + 1;
    }
}

static void write_text(FILE *out, const Colocation *c, gboolean timing) {
    const Topology *topo = colocate_topology(c);
    const TopologySpec *spec = topo_spec(topo);
    int n = colocate_jobs(c);
    fprintf(out, "machine    %s (%d nodes of %d GPU%s), placement %s", spec->name,
            colocate_nodes(c), spec->gpus_per_node, spec->gpus_per_node == 1 ? "" : "s",
            colocate_policy_name(colocate_policy(c)));
    if (colocate_policy(c) == COLOCATE_RANDOM)
        fprintf(out, " (seed %u)", colocate_seed(c));
    fputs("\n\n", out);
    fprintf(out, "%-4s %-34s %5s  %s\n", "job", "scenario", "GPUs", "nodes");
    for (int j = 0; j < n; j++) {
        const ColocateJob *jb = colocate_job(c, j);
        g_autoptr(GString) g = g_string_new(NULL);
        node_ranges(g, jb);
        fprintf(out, "%-4d %-34s %5d  %s\n", j + 1, jb->path, jb->sc->gpus, g->str);
    }
    fprintf(out, "\n%-4s %14s %14s %9s %20s %18s\n", "job", "alone (s)", "together (s)", "slowdown",
            "exposed comm alone", "exposed together");
    for (int j = 0; j < n; j++) {
        const ColocateJob *jb = colocate_job(c, j);
        fprintf(out, "%-4d %14.6f %14.6f %8.4fx %20.6f %18.6f\n", j + 1, sim_time_s(jb->alone),
                sim_time_s(jb->together), slowdown(jb), sim_time_s(jb->alone_times.exposed),
                sim_time_s(jb->together_times.exposed));
    }
    fprintf(out,
            "\ntogether   every job starts one iteration at time 0; all ran at once for the "
            "first %.6f s\n",
            sim_time_s(colocate_window(c)));
    guint nl = colocate_links(c);
    if (nl == 0) {
        fputs("shared     no link carries traffic of two jobs: they do not meet on the fabric\n",
              out);
    } else {
        fprintf(out, "shared     %u link%s carry traffic of two jobs or more (busiest first)\n\n",
                nl, nl == 1 ? "" : "s");
        fprintf(out, "%-30s %-9s %9s", "link", "kind", "busy (s)");
        for (int j = 0; j < n; j++) {
            char head[16];
            g_snprintf(head, sizeof head, "job %d", j + 1);
            fprintf(out, "  %11s", head);
        }
        fputc('\n', out);
        for (guint i = 0; i < nl && i < TEXT_LINKS; i++) {
            const ColocateLink *l = colocate_link(c, i);
            char name[96], b[32];
            topo_link_describe(topo, l->link, name, sizeof name);
            fprintf(out, "%-30s %-9s %9.6f", name,
                    topo_link_kind_name(topo_link_kind(topo, l->link)), l->busy_s);
            for (int j = 0; j < n; j++) {
                report_human_bytes(b, sizeof b, l->bytes[j]);
                fprintf(out, "  %11s", b);
            }
            fputc('\n', out);
        }
        if (nl > TEXT_LINKS)
            fprintf(out, "... and %u more (--format json lists them all)\n", nl - TEXT_LINKS);
    }
    fprintf(out,
            "\nsim        every rank simulated (no representatives), %d runs, %" G_GUINT64_FORMAT
            " events",
            n + 1, colocate_events(c));
    if (timing)
        fprintf(out, ", %.2f s", colocate_wall_s(c));
    fputc('\n', out);
}

void report_colocate_write(FILE *out, const Colocation *c, ReportFormat fmt, gboolean timing) {
    if (fmt == REPORT_JSON)
        write_json(out, c, timing);
    else
        write_text(out, c, timing);
}
