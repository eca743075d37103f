/* engine: events run in time order, ties in insertion order, time never goes back. */
#include "engine.h"
#include "util.h"

typedef struct {
    GArray *seen; /* uint64 args in run order */
    SimTime last;
    gboolean monotonic;
} Log;

static void record(Engine *eng, void *ctx, uint64_t arg) {
    Log *log = ctx;
    if (engine_now(eng) < log->last)
        log->monotonic = FALSE;
    log->last = engine_now(eng);
    g_array_append_val(log->seen, arg);
}

START_TEST(test_order_and_ties) {
    g_autoptr(Engine) eng = engine_new();
    Log log = {g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0, TRUE};
    engine_schedule(eng, 30, record, &log, 3);
    engine_schedule(eng, 10, record, &log, 1);
    engine_schedule(eng, 20, record, &log, 2);
    engine_schedule(eng, 10, record, &log, 11); /* same time as 1, scheduled later */
    engine_schedule(eng, 0, record, &log, 0);
    SimTime end = engine_run(eng);
    uint64_t want[] = {0, 1, 11, 2, 3};
    ck_assert_uint_eq(log.seen->len, 5);
    for (int i = 0; i < 5; i++)
        ck_assert_uint_eq(g_array_index(log.seen, uint64_t, i), want[i]);
    ck_assert_int_eq(end, 30);
    ck_assert_uint_eq(engine_events(eng), 5);
    g_array_unref(log.seen);
}
END_TEST

/* Many events at pseudo-random times: popped sorted by (time, insertion). */
START_TEST(test_many_sorted) {
    g_autoptr(Engine) eng = engine_new();
    Log log = {g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0, TRUE};
    GRand *rng = g_rand_new_with_seed(42);
    const int n = 100000;
    SimTime *when = g_new(SimTime, n);
    for (int i = 0; i < n; i++) {
        when[i] = g_rand_int_range(rng, 0, 1000); /* many ties */
        engine_schedule(eng, when[i], record, &log, (uint64_t)i);
    }
    engine_run(eng);
    ck_assert(log.monotonic);
    ck_assert_uint_eq(log.seen->len, n);
    for (int k = 1; k < n; k++) {
        uint64_t a = g_array_index(log.seen, uint64_t, k - 1),
                 b = g_array_index(log.seen, uint64_t, k);
        ck_assert_msg(when[a] < when[b] || (when[a] == when[b] && a < b),
                      "event %lu (t=%ld) ran before %lu (t=%ld)", (unsigned long)a, (long)when[a],
                      (unsigned long)b, (long)when[b]);
    }
    g_free(when);
    g_rand_free(rng);
    g_array_unref(log.seen);
}
END_TEST

static void chain(Engine *eng, void *ctx, uint64_t left) {
    int *count = ctx;
    (*count)++;
    if (left)
        engine_schedule(eng, 7, chain, ctx, left - 1);
}

START_TEST(test_schedule_from_handler) {
    g_autoptr(Engine) eng = engine_new();
    int count = 0;
    engine_schedule(eng, 5, chain, &count, 9);
    ck_assert_int_eq(engine_run(eng), 5 + 9 * 7);
    ck_assert_int_eq(count, 10);
    ck_assert_uint_eq(engine_pending(eng), 0);
}
END_TEST

/* A timer fires once, at its latest setting; a cancelled one never. A moved timer's event moves
 * in place (nothing left behind); a cancelled one's stays and costs a pop. */
START_TEST(test_timer_move_and_cancel) {
    g_autoptr(Engine) eng = engine_new();
    Log log = {g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0, TRUE};
    EngineTimer a, b, c;
    engine_timer_init(&a, record, &log, 1);
    engine_timer_init(&b, record, &log, 2);
    engine_timer_init(&c, record, &log, 3);
    engine_timer_set(eng, &a, 50);
    engine_timer_set(eng, &a, 10); /* earlier */
    engine_timer_set(eng, &b, 5);
    engine_timer_set(eng, &b, 40); /* later */
    engine_timer_set(eng, &c, 20);
    ck_assert(c.armed && c.when == 20);
    engine_timer_cancel(&c);
    ck_assert(!c.armed);
    SimTime end = engine_run(eng);
    uint64_t want[] = {1, 2};
    ck_assert_uint_eq(log.seen->len, 2);
    for (int i = 0; i < 2; i++)
        ck_assert_uint_eq(g_array_index(log.seen, uint64_t, i), want[i]);
    ck_assert_int_eq(log.last, 40);           /* b at its second setting */
    ck_assert_int_eq(end, 40);                /* a's first setting left no entry at 50 */
    ck_assert_uint_eq(engine_events(eng), 3); /* a, b, and c's cancelled entry */
    ck_assert(!a.armed && !b.armed);
    g_array_unref(log.seen);
}
END_TEST

/* A held timer (engine_timer_hold) is armed with no event: cancelled, it leaves nothing to pop;
 * set while held, it stays held at its new time; released, it fires once at its time. */
START_TEST(test_timer_hold) {
    g_autoptr(Engine) eng = engine_new();
    Log log = {g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0, TRUE};
    EngineTimer a, b;
    engine_timer_init(&a, record, &log, 1);
    engine_timer_init(&b, record, &log, 2);
    engine_timer_hold(eng, &a, 30);
    engine_timer_hold(eng, &b, 70);
    ck_assert(a.armed && a.held && a.when == 30);
    ck_assert_uint_eq(engine_pending(eng), 0);
    engine_timer_cancel(&a);
    ck_assert(!a.armed && !a.held);
    engine_timer_set(eng, &b, 50); /* held still, at 50 */
    ck_assert(b.armed && b.held && b.when == 50);
    ck_assert_uint_eq(engine_pending(eng), 0);
    engine_timer_release(eng, &b);
    engine_timer_release(eng, &a); /* not held: nothing */
    ck_assert(b.armed && !b.held);
    ck_assert_uint_eq(engine_pending(eng), 1);
    ck_assert_int_eq(engine_run(eng), 50);
    ck_assert_uint_eq(log.seen->len, 1);
    ck_assert_uint_eq(g_array_index(log.seen, uint64_t, 0), 2);
    ck_assert_uint_eq(engine_events(eng), 1); /* the cancelled held timer left no entry */
    g_array_unref(log.seen);
}
END_TEST

/* engine_move: a moved event orders as one scheduled at the moment of the move (after events
 * already at its new time, before later ones), from either direction. */
START_TEST(test_move_orders_as_new) {
    g_autoptr(Engine) eng = engine_new();
    Log log = {g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0, TRUE};
    uint32_t x = engine_schedule_movable(eng, 100, record, &log, 1);
    engine_schedule(eng, 30, record, &log, 2);
    uint32_t y = engine_schedule_movable(eng, 10, record, &log, 3);
    engine_schedule(eng, 60, record, &log, 4);
    engine_move(eng, x, 30, 5); /* earlier, tied with 2: after it */
    engine_move(eng, y, 60, 6); /* later, tied with 4: after it */
    engine_run(eng);
    uint64_t want[] = {2, 5, 4, 6};
    ck_assert_uint_eq(log.seen->len, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(g_array_index(log.seen, uint64_t, i), want[i]);
    ck_assert_uint_eq(engine_events(eng), 4);
    g_array_unref(log.seen);
}
END_TEST

/* Handlers that schedule more events and move timers while the queue is deep: the pops (the
 * bottom-up sift-down) still come in (time, insertion) order. arg = the order of insertion. */
typedef struct {
    Log log;
    GRand *rng;
    uint64_t next; /* insertion counter */
    GArray *when;  /* SimTime by insertion */
    EngineTimer timers[16];
} Churn;

static void churn(Engine *eng, void *ctx, uint64_t arg);

static void churn_add(Engine *eng, Churn *c, SimTime delay) {
    SimTime at = engine_now(eng) + delay;
    g_array_append_val(c->when, at);
    engine_schedule(eng, delay, churn, c, c->next++);
}

static void churn(Engine *eng, void *ctx, uint64_t arg) {
    Churn *c = ctx;
    record(eng, &c->log, arg);
    if (c->next < 200000)
        for (int k = g_rand_int_range(c->rng, 0, 3); k > 0; k--)
            churn_add(eng, c, g_rand_int_range(c->rng, 0, 50)); /* 0: this very instant */
    EngineTimer *t = &c->timers[g_rand_int_range(c->rng, 0, 16)];
    engine_timer_set(eng, t, g_rand_int_range(c->rng, 0, 40)); /* armed ones move in place */
}

static void timer_noop(Engine *eng, void *ctx, uint64_t arg) {
    (void)eng, (void)ctx, (void)arg;
}

START_TEST(test_interleaved_order) {
    g_autoptr(Engine) eng = engine_new();
    Churn c = {{g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0, TRUE},
               g_rand_new_with_seed(7),
               0,
               g_array_new(FALSE, FALSE, sizeof(SimTime)),
               {{0}}};
    for (int k = 0; k < 16; k++)
        engine_timer_init(&c.timers[k], timer_noop, NULL, 0);
    for (int k = 0; k < 3000; k++)
        churn_add(eng, &c, g_rand_int_range(c.rng, 0, 1000));
    engine_run(eng);
    ck_assert(c.log.monotonic);
    ck_assert_uint_eq(c.log.seen->len, c.next);
    for (guint k = 1; k < c.log.seen->len; k++) {
        uint64_t a = g_array_index(c.log.seen, uint64_t, k - 1),
                 b = g_array_index(c.log.seen, uint64_t, k);
        SimTime ta = g_array_index(c.when, SimTime, a), tb = g_array_index(c.when, SimTime, b);
        ck_assert_msg(ta < tb || (ta == tb && a < b), "event %lu (t=%ld) ran before %lu (t=%ld)",
                      (unsigned long)a, (long)ta, (unsigned long)b, (long)tb);
    }
    g_rand_free(c.rng);
    g_array_unref(c.when);
    g_array_unref(c.log.seen);
}
END_TEST

/* LANES in engine.c: many crowds pending at once, each time's events split between its lane (the
 * second in a row and those after it) and the heap (the first, and those queued after another
 * time's), with heap events moved to crowded times and lane events moved away: every event runs
 * in (time, order of queueing or last move). 600 times x 8 rounds, and a crowd of 200 in a row;
 * arg = that order. */
typedef struct {
    Log log;
    uint64_t next;
    uint32_t ev[600];
} Crowds;

START_TEST(test_many_crowds) {
    g_autoptr(Engine) eng = engine_new();
    Crowds c = {{g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0, TRUE}, 0, {0}};
    g_autoptr(GArray) when = g_array_new(FALSE, FALSE, sizeof(SimTime));
    for (int k = 0; k < 200; k++) { /* one crowd of 200 in a row: past a lane's own entries */
        SimTime at = 500;
        g_array_append_val(when, at);
        engine_schedule(eng, at, record, &c.log, c.next++);
    }
    for (int round = 0; round < 8; round++)
        for (int t = 0; t < 600; t++) {
            SimTime at = 1000 + 10 * t;
            int copies = round == 0 ? 2 : 1; /* round 0: a lane opens for every time */
            for (int k = 0; k < copies; k++) {
                g_array_append_val(when, at);
                if (round == 3 && k == 0)
                    c.ev[t] = engine_schedule_movable(eng, at, record, &c.log, c.next++);
                else
                    engine_schedule(eng, at, record, &c.log, c.next++);
            }
        }
    /* round 3's events move: the even ones to the next time (crowded), the odd ones past all */
    for (int t = 0; t < 600; t++) {
        SimTime at = t % 2 ? 20000 + t : 1000 + 10 * (t + 1);
        g_array_append_val(when, at);
        engine_move(eng, c.ev[t], at, c.next++);
    }
    engine_run(eng);
    ck_assert(c.log.monotonic);
    ck_assert_uint_eq(c.log.seen->len, 200 + 600 * 9); /* round 0 twice; the moved once */
    for (guint k = 1; k < c.log.seen->len; k++) {
        uint64_t a = g_array_index(c.log.seen, uint64_t, k - 1),
                 b = g_array_index(c.log.seen, uint64_t, k);
        SimTime ta = g_array_index(when, SimTime, a), tb = g_array_index(when, SimTime, b);
        ck_assert_msg(ta < tb || (ta == tb && a < b), "event %lu (t=%ld) ran before %lu (t=%ld)",
                      (unsigned long)a, (long)ta, (unsigned long)b, (long)tb);
    }
    ck_assert_uint_eq(engine_events(eng), 200 + 600 * 9);
    g_array_unref(c.log.seen);
}
END_TEST

/* READ AHEAD: while an event runs, the hint of the earliest lane's head is called with its
 * handler's context and argument (a timer's own), before that event runs; the order is
 * untouched. A singleton, then a crowd of 8 plain events, then a crowd of 8 timers. */
typedef struct {
    GArray *ran;    /* args in run order */
    GArray *hinted; /* hint calls: arg, and how many events had run by then (<< 32) */
} HintLog;

static HintLog *hint_log;

static void hinted_run(Engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    g_assert(ctx == hint_log);
    g_array_append_val(hint_log->ran, arg);
}

static void hint_record(const void *ctx, uint64_t arg) {
    ck_assert_ptr_eq(ctx, hint_log);
    uint64_t v = (uint64_t)hint_log->ran->len << 32 | arg;
    g_array_append_val(hint_log->hinted, v);
}

static void unhinted(Engine *eng, void *ctx, uint64_t arg) {
    (void)eng;
    (void)ctx;
    (void)arg;
}

START_TEST(test_read_ahead_hints) {
    g_autoptr(Engine) eng = engine_new();
    HintLog log = {g_array_new(FALSE, FALSE, sizeof(uint64_t)),
                   g_array_new(FALSE, FALSE, sizeof(uint64_t))};
    hint_log = &log;
    engine_hint(eng, hinted_run, hint_record);
    engine_set_read_ahead(eng, TRUE);
    engine_schedule(eng, 5, unhinted, NULL, 0); /* a singleton: in the heap, no lane */
    for (uint64_t k = 0; k < 8; k++)
        engine_schedule(eng, 10, hinted_run, &log, k);
    EngineTimer t[8];
    for (uint64_t k = 0; k < 8; k++) {
        engine_timer_init(&t[k], hinted_run, &log, 100 + k);
        engine_timer_set(eng, &t[k], 20);
    }
    engine_run(eng);
    ck_assert_uint_eq(log.ran->len, 16);
    for (uint32_t k = 0; k < 16; k++) /* the order is untouched */
        ck_assert_uint_eq(g_array_index(log.ran, uint64_t, k), k < 8 ? k : 100 + k - 8);
    /* hinted: the earliest lane's head, while the event before it runs. A crowd's first event
     * is the heap's (its second opens the lane), so the lane's head is hinted during the event
     * before the crowd as well: {crowds' events run by then, arg} */
    static const uint64_t want[16][2] = {
        {0, 1},   {0, 1},   {1, 2},   {2, 3},    {3, 4},    {4, 5},    {5, 6},    {6, 7},
        {7, 101}, {8, 101}, {9, 102}, {10, 103}, {11, 104}, {12, 105}, {13, 106}, {14, 107}};
    ck_assert_uint_eq(log.hinted->len, 16);
    for (uint32_t h = 0; h < 16; h++) {
        uint64_t v = g_array_index(log.hinted, uint64_t, h);
        ck_assert_uint_eq(v >> 32, want[h][0]);
        ck_assert_uint_eq(v & 0xffffffffu, want[h][1]);
    }
    /* read-ahead off (the default): never hinted, the same order */
    g_autoptr(Engine) off = engine_new();
    engine_hint(off, hinted_run, hint_record);
    g_array_set_size(log.ran, 0);
    g_array_set_size(log.hinted, 0);
    for (uint64_t k = 0; k < 8; k++)
        engine_schedule(off, 10, hinted_run, &log, k);
    engine_run(off);
    ck_assert_uint_eq(log.ran->len, 8);
    ck_assert_uint_eq(log.hinted->len, 0);
    g_array_unref(log.ran);
    g_array_unref(log.hinted);
    hint_log = NULL;
}
END_TEST

/* LANES, their cost: 600 crowds of 8, each queued in a row, all pending at once. The first event
 * of each time goes to the heap and the other 7 to the time's lane: 600 heap pops and 4,200 lane
 * events, in (time, insertion) order. Four fixed lanes (before 949d7c6) took 28 of them. */
START_TEST(test_crowds_take_lanes) {
    g_autoptr(Engine) eng = engine_new();
    Log log = {g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0, TRUE};
    for (int t = 0; t < 600; t++)
        for (int k = 0; k < 8; k++)
            engine_schedule(eng, 1000 - t, record, &log, (uint64_t)t * 8 + k);
    engine_run(eng);
    ck_assert_uint_eq(engine_events(eng), 4800);
    ck_assert_uint_eq(engine_lane_events(eng), 4200);
    for (guint i = 0; i < log.seen->len; i++) { /* time 401 (t = 599) first, 8 at a time */
        uint64_t t = 599 - i / 8, k = i % 8;
        ck_assert_uint_eq(g_array_index(log.seen, uint64_t, i), t * 8 + k);
    }
    g_array_unref(log.seen);
}
END_TEST

/* sim_time_from_ps rounds as llround does (half away from zero), on the halves, on the double just
 * below a half, past 2^52 (where every double is an integer) and on random values. */
START_TEST(test_rounding_is_llround) {
    double cases[] = {0.0,
                      0.5,
                      1.5,
                      2.5,
                      0.49999999999999994,
                      1e6 + 0.5,
                      -0.5,
                      -1.5,
                      4503599627370497.0,
                      9007199254740993.0,
                      123456789.4999999,
                      1e18,
                      7.3e-3,
                      4503599627370495.5,
                      -3.7};
    for (size_t k = 0; k < G_N_ELEMENTS(cases); k++)
        ck_assert_msg(sim_time_from_ps(cases[k]) == (SimTime)llround(cases[k]),
                      "%.17g: %ld, not %ld", cases[k], (long)sim_time_from_ps(cases[k]),
                      (long)llround(cases[k]));
    GRand *rng = g_rand_new_with_seed(3);
    for (int k = 0; k < 100000; k++) {
        double x = ldexp(g_rand_double(rng), g_rand_int_range(rng, -4, 62));
        ck_assert_msg(sim_time_from_ps(x) == (SimTime)llround(x), "%.17g", x);
    }
    g_rand_free(rng);
}
END_TEST

/* Time past SIM_TIME_MAX: conversions saturate, the engine reports it and stops, never wraps. */
START_TEST(test_overflow) {
    ck_assert_int_eq(sim_time_from_ps(1.4), 1);
    ck_assert_int_eq(sim_time_from_ps(1e30), SIM_TIME_MAX);
    ck_assert_int_eq(sim_time_from_ps(NAN), SIM_TIME_MAX);
    ck_assert_int_eq(sim_time_add(SIM_TIME_MAX - 5, 10), SIM_TIME_MAX);
    ck_assert_int_eq(sim_time_add(5, 10), 15);
    g_autoptr(Engine) eng = engine_new();
    Log log = {g_array_new(FALSE, FALSE, sizeof(uint64_t)), 0, TRUE};
    engine_schedule(eng, 10, record, &log, 1);
    engine_schedule(eng, SIM_TIME_MAX, record, &log, 2); /* at the limit: not queued */
    ck_assert(engine_overflowed(eng));
    engine_schedule(eng, 20, record, &log, 3);
    engine_run(eng); /* stops at once: what follows an overflow means nothing */
    ck_assert_uint_eq(log.seen->len, 0);
    g_array_unref(log.seen);
    g_autoptr(Engine) ok = engine_new();
    ck_assert(!engine_overflowed(ok));
}
END_TEST

int main(void) {
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_order_and_ties);
    tcase_add_test(tc, test_timer_hold);
    tcase_add_test(tc, test_many_sorted);
    tcase_add_test(tc, test_schedule_from_handler);
    tcase_add_test(tc, test_timer_move_and_cancel);
    tcase_add_test(tc, test_move_orders_as_new);
    tcase_add_test(tc, test_overflow);
    tcase_add_test(tc, test_interleaved_order);
    tcase_add_test(tc, test_many_crowds);
    tcase_add_test(tc, test_crowds_take_lanes);
    tcase_add_test(tc, test_read_ahead_hints);
    tcase_add_test(tc, test_rounding_is_llround);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
