/* tools/memlatency.c: what one dependent read of a random cache line costs on this host, by the
 * size of the memory it is drawn from (docs/speed.md, "Measuring": the floor under a run's
 * time per event where its state outgrows the caches). Each size is a cycle through every
 * 64-byte line of the region in a random order (Sattolo's shuffle, so one cycle of them all),
 * followed one read after another: each address comes from the read before, so the reads cannot
 * overlap, and the time per read is the latency of a line from where it lives (cache, memory,
 * with a page walk when the translation misses). Twice per size: on small pages (plain anonymous
 * memory, as the C heap gives) and advised MADV_HUGEPAGE (2 MiB pages where the kernel gives
 * them). Then, on huge pages, eight chases through the same cycle at once (from eight points
 * along it), a read of each in turn: their reads can overlap, so the time per read is what
 * misses cost when a handler's reads do not wait on one another (the memory's parallelism).
 * Not built by CMake and not a test: run it by hand,
 *   cc -O2 -o /tmp/memlatency tools/memlatency.c && /tmp/memlatency 1 4 16 64 448
 * (sizes in MiB, 1 to 65536; those are the default) and repeat it: the host's other tenants move
 * it by a tenth or more. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64
#define HUGE ((size_t)2 << 20)
#define READS 20000000L

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* xorshift64*: the shuffle's draws (any fixed seed: the order only has to be unpredictable to
 * the hardware's prefetchers) */
static uint64_t draw(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717u;
}

#define CHAINS 8

/* Nanoseconds per read over a region of `bytes` (huge: advised MADV_HUGEPAGE), with `chains`
 * chases at once (1: each read waits on the one before). */
static double chase(size_t bytes, int huge, int chains) {
    size_t lines = bytes / LINE;
    char *raw =
        mmap(NULL, bytes + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint32_t *next = malloc(lines * sizeof *next);
    if (raw == MAP_FAILED || !next) {
        perror("memlatency");
        exit(1);
    }
    char *p = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (huge)
        madvise(p, bytes, MADV_HUGEPAGE);
    /* Sattolo: a random permutation that is a single cycle through every line */
    for (size_t i = 0; i < lines; i++)
        next[i] = (uint32_t)i;
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)(draw(&seed) % i);
        uint32_t t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        *(char **)(p + i * LINE) = p + (size_t)next[i] * LINE;
    free(next);
    char *at[CHAINS];
    at[0] = p;
    for (long r = 0; r < READS / 10; r++) /* warm: the region's lines and translations */
        at[0] = *(char **)at[0];
    for (int c = 1; c < chains; c++) { /* the others spread along the cycle */
        at[c] = at[c - 1];
        for (size_t r = 0; r < lines / (size_t)chains; r++)
            at[c] = *(char **)at[c];
    }
    double t0 = now_s();
    for (long r = 0; r < READS / chains; r++)
        for (int c = 0; c < chains; c++)
            at[c] = *(char **)at[c];
    double dt = now_s() - t0;
    for (int c = 0; c < chains; c++)
        if (at[c] == NULL) /* never: keeps the chase from being optimised away */
            puts("");
    munmap(raw, bytes + HUGE);
    return dt * 1e9 / (double)READS;
}

int main(int argc, char **argv) {
    static const char *deflt[] = {"1", "4", "16", "64", "448"};
    int n = argc > 1 ? argc - 1 : 5;
    char **sizes = argc > 1 ? argv + 1 : (char **)deflt;
    for (int i = 0; i < n; i++) {
        char *end;
        long mib = strtol(sizes[i], &end, 10);
        if (*end || mib <= 0 || mib > 65536) {
            fprintf(stderr,
                    "usage: memlatency [MiB ...], each 1 to 65536 (default 1 4 16 64 448)\n");
            return 2;
        }
    }
    printf("%8s %12s %12s %22s\n", "MiB", "small pages", "huge pages", "huge, 8 chases at once");
    for (int i = 0; i < n; i++) {
        long mib = strtol(sizes[i], NULL, 10);
        size_t bytes = (size_t)mib << 20;
        double small = chase(bytes, 0, 1), big = chase(bytes, 1, 1), par = chase(bytes, 1, CHAINS);
        printf("%8ld %9.1f ns %9.1f ns %19.1f ns\n", mib, small, big, par);
    }
    return 0;
}
