/* engine: the clock and the event queue of the simulator.
 *
 * For: ordering callbacks in simulated time. Time is an integer count of picoseconds, so ordering
 * is exact and results are deterministic; events at the same time run in the order they were
 * scheduled (libuv's timer rule: time, then insertion sequence).
 * Not for: anything about training, GPUs or networks; callers give it opaque callbacks. */
#ifndef SIM_ENGINE_H
#define SIM_ENGINE_H

#include <glib.h>
#include <math.h>
#include <stdint.h>

typedef int64_t SimTime; /* picoseconds */

#define SIM_PS_PER_S INT64_C(1000000000000)
#define SIM_TIME_MAX INT64_MAX

/* ps picoseconds (a double) as a SimTime, rounded half away from zero (llround); SIM_TIME_MAX for
 * anything beyond the range (or not finite), which engine_schedule then reports through
 * engine_overflowed. For ps >= 0 the fraction ps - trunc(ps) is exact in double, so comparing it
 * with 0.5 gives llround's answer without the library call (on every flow's and task's end). */
static inline SimTime sim_time_from_ps(double ps) {
    if (!(ps < 9.2e18)) /* also NaN */
        return SIM_TIME_MAX;
    if (ps >= 0) {
        SimTime r = (SimTime)ps;
        return r + (ps - (double)r >= 0.5);
    }
    return (SimTime)llround(ps);
}

/* s seconds as a SimTime, with sim_time_from_ps's rounding and range: the one conversion from
 * seconds (the device's kernel times, the network's transfer times). */
static inline SimTime sim_time_from_s(double s) {
    return sim_time_from_ps(s * (double)SIM_PS_PER_S);
}

/* ps picoseconds in seconds (a SimTime, or a sum of them kept as a double): the one conversion
 * to the reports' unit. */
static inline double sim_time_s(double ps) {
    return ps / (double)SIM_PS_PER_S;
}

/* a + b, both >= 0, saturating at SIM_TIME_MAX. */
static inline SimTime sim_time_add(SimTime a, SimTime b) {
    return a > SIM_TIME_MAX - b ? SIM_TIME_MAX : a + b;
}

typedef struct Engine Engine;

/* An event handler: ctx and arg are what was passed to engine_schedule. */
typedef void (*EngineFn)(Engine *eng, void *ctx, uint64_t arg);

Engine *engine_new(void);
void engine_free(Engine *eng);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Engine, engine_free)

/* Current simulated time, picoseconds. */
SimTime engine_now(const Engine *eng);

/* Run fn(eng, ctx, arg) at now + delay (delay >= 0 picoseconds). O(log n). A time that would
 * reach SIM_TIME_MAX marks the engine overflowed (engine_overflowed) and engine_run stops. */
void engine_schedule(Engine *eng, SimTime delay, EngineFn fn, void *ctx, uint64_t arg);

#define ENGINE_NO_EVENT UINT32_MAX

/* Schedule like engine_schedule and return a handle to the event, valid until it runs (then it
 * names another event): ENGINE_NO_EVENT when the time overflowed. */
uint32_t engine_schedule_movable(Engine *eng, SimTime delay, EngineFn fn, void *ctx, uint64_t arg);
/* Re-time pending event ev to now + delay (delay >= 0) with argument arg, in place: it orders as
 * an event scheduled now would (a new sequence) and leaves nothing behind. O(log n). */
void engine_move(Engine *eng, uint32_t ev, SimTime delay, uint64_t arg);

/* A timer: a callback that can be moved or cancelled after it was scheduled. The caller owns the
 * struct (it must not move while armed); each set or cancel bumps its generation. Setting an
 * armed timer moves its event in place (engine_move); a cancelled one's event stays and is
 * dropped when it comes up (lazy deletion: O(1) to cancel, the stale entry costs one pop). A
 * held timer (engine_timer_hold) is armed with no event yet: cancelled, it costs nothing. */
typedef struct {
    EngineFn fn;
    void *ctx;
    uint64_t arg;
    uint64_t gen;  /* generation of the armed event */
    SimTime when;  /* when it fires, picoseconds; valid while armed */
    uint32_t ev;   /* its event (engine_schedule_movable), while armed and not held */
    uint8_t armed; /* it fires at `when`: an event of this generation is in the queue, or held */
    uint8_t held;  /* armed, its event not queued until engine_timer_release */
} EngineTimer;

/* Set up t to call fn(eng, ctx, arg); not armed. */
void engine_timer_init(EngineTimer *t, EngineFn fn, void *ctx, uint64_t arg);
/* Arm t to fire at now + delay (delay >= 0), replacing any earlier setting (a held timer stays
 * held). O(log n). */
void engine_timer_set(Engine *eng, EngineTimer *t, SimTime delay);
/* Disarm t: a pending event of it will not run. O(1). */
void engine_timer_cancel(EngineTimer *t);
/* Arm t at time `when` (absolute, >= now) without queueing its event: it must be cancelled, set
 * or released before the engine runs past `when`. O(1). */
void engine_timer_hold(Engine *eng, EngineTimer *t, SimTime when);
/* Queue a held timer's event, at its `when` (>= now); nothing for a timer not held. O(log n). */
void engine_timer_release(Engine *eng, EngineTimer *t);

/* A handler's hint: fetch what fn(eng, ctx, arg) will read first (__builtin_prefetch), nothing
 * else. With read-ahead on, while an event runs engine_run calls the hint of the event queued
 * next in the earliest crowd (READ AHEAD in engine.c), so that their misses overlap; for a timer,
 * the hint of the timer's callback, with the timer's context and argument. */
typedef void (*EngineHint)(const void *ctx, uint64_t arg);
#define ENGINE_HINTS 8
/* Give handler fn a hint (replacing any it had); at most ENGINE_HINTS handlers have one. */
void engine_hint(Engine *eng, EngineFn fn, EngineHint hint);
/* Read ahead (off at first): worth its instructions, about 80 an event with the hints, only where
 * the events' state outgrows the caches. Order and results are the same either way. */
void engine_set_read_ahead(Engine *eng, gboolean on);

/* Run events until the queue is empty or time overflows. Returns the time of the last event. */
SimTime engine_run(Engine *eng);
/* The same, stopping after the first event later than horizon (ps); engine_run afterwards goes
 * on as if never stopped, in the same order. */
SimTime engine_run_until(Engine *eng, SimTime horizon);

/* Whether some event would have come at or past SIM_TIME_MAX (about 106 days): the run is then
 * meaningless and the caller must report it. */
gboolean engine_overflowed(const Engine *eng);

/* Events executed so far. */
uint64_t engine_events(const Engine *eng);
/* Of them, those taken from a same-time lane rather than the event heap (LANES in engine.c). */
uint64_t engine_lane_events(const Engine *eng);

/* Events waiting in the queue. */
size_t engine_pending(const Engine *eng);

#endif
