/* tools/pagefaults.c: what a first touch of fresh memory costs on this host (docs/speed.md,
 * "Memory"; the reason for sim/engine/bigmem.c). Touches MiB of fresh anonymous memory one
 * byte per 4 KiB page, three ways, and prints microseconds per 4 KiB: page by page (a fault
 * each), pre-faulted with MAP_POPULATE, and advised MADV_HUGEPAGE (2 MiB pages where the kernel
 * gives them). Not built by CMake and not a test: run it by hand,
 *   cc -O2 -o /tmp/pagefaults tools/pagefaults.c && /tmp/pagefaults 40
 * and repeat it (the first huge-page run may be slower: the kernel may have to compact memory). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096
#define HUGE ((size_t)2 << 20)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Seconds to map bytes (way 0: plain, 1: MAP_POPULATE, 2: MADV_HUGEPAGE) and touch every page. */
static double touch(size_t bytes, int way) {
    double t0 = now_s();
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | (way == 1 ? MAP_POPULATE : 0);
    char *raw = mmap(NULL, bytes + HUGE, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (raw == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    char *p = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (way == 2)
        madvise(p, bytes, MADV_HUGEPAGE);
    for (size_t i = 0; i < bytes; i += PAGE)
        p[i] = 1;
    double dt = now_s() - t0;
    munmap(raw, bytes + HUGE);
    return dt;
}

int main(int argc, char **argv) {
    long mib = argc > 1 ? atol(argv[1]) : 40;
    if (mib <= 0 || mib > 65536) {
        fprintf(stderr, "usage: pagefaults [MiB, 1 to 65536; default 40]\n");
        return 2;
    }
    size_t bytes = (size_t)mib << 20;
    static const char *name[] = {"page by page", "MAP_POPULATE", "MADV_HUGEPAGE"};
    for (int way = 0; way < 3; way++) {
        double dt = touch(bytes, way);
        printf("%-14s %ld MiB: %8.3f ms, %6.2f us per 4 KiB\n", name[way], mib, dt * 1e3,
               dt * 1e6 / (double)(bytes / PAGE));
    }
    return 0;
}
