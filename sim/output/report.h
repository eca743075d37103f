/* report: the figures of a finished run as text for people, JSON for scripts (the stable output
 * contract, every key documented in docs/report.md) or one CSV row.
 *
 * For: formatting only. Every number printed is read from SimSummary or Stats. */
#ifndef SIM_REPORT_H
#define SIM_REPORT_H

#include <stdio.h>

#include "sim.h"

typedef enum { REPORT_TEXT, REPORT_JSON, REPORT_CSV } ReportFormat;

#define REPORT_SCHEMA_VERSION 1

/* A number as every report and sweep row prints it: integers exactly, others to 12 significant
 * digits, so that identical runs give identical bytes. buf holds at least 32 bytes; returns it. */
const char *report_format_number(double v, char *buf);

/* s as a JSON string literal (quotes, backslashes and control characters escaped), appended to g;
 * NULL is written as "", bytes that are not UTF-8 as U+FFFD. */
void report_json_quote(GString *g, const char *s);
/* Append s as one CSV field: as it is, or double-quoted (quotes doubled) when it holds a comma, a
 * quote or a line break (RFC 4180). */
void report_csv_quote(GString *g, const char *s);
/* One JSON member line of the hand-written reports: indent, "key": value, a comma unless last. */
void report_kv_num(FILE *out, const char *indent, const char *key, double v, gboolean last);
void report_kv_str(FILE *out, const char *indent, const char *key, const char *v, gboolean last);
/* b bytes for a reader: B, KiB, MiB, GiB, TiB or PiB (powers of 1024), into buf of n bytes. */
void report_human_bytes(char *buf, size_t n, double b);

/* A resolved scenario tree (scenario_resolve) as YAML appended to out, each value followed by a
 * comment naming where it came from (report_scenario.c). */
void report_scenario_yaml(GString *out, const ConfNode *tree);

/* Time to train on the scenario's training.token_budget at the run's pace. tokens_per_s is
 * global_batch x seq_len / iteration time (the whole job); with no budget, budget and the rest
 * are 0. seconds = budget / tokens_per_s (iterations not rounded up), days = seconds / 86400,
 * node_hours = nodes x seconds / 3600, gpu_hours = GPUs x seconds / 3600. */
typedef struct {
    double tokens_per_s; /* tokens per second, whole job */
    double budget;       /* tokens, 0: none given */
    double seconds;      /* wall time to train on budget, s */
    double days;         /* the same, days */
    double node_hours;   /* nodes x hours */
    double gpu_hours;    /* GPUs x hours */
} TrainTime;
TrainTime report_train_time(const SimRun *run);

/* timing FALSE writes 0 for host wall time and memory, so that two runs compare byte for byte. */
void report_write(FILE *out, const SimRun *run, ReportFormat fmt, gboolean timing);

#endif
