/* bigmem: large arrays on transparent huge pages (see bigmem.h).
 *
 * Every array carries a 64-byte header just below it: where its mapping or heap block is and how
 * long (64 bytes keep the array cache-line aligned). A fresh mapping reads as zero untouched, and
 * calloc's large blocks come from one: an array by link id is touched only where the traffic
 * goes. */
#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_BYTES ((size_t)2 << 20) /* x86-64's and arm64's (4 KiB granule) huge page */
#define HEAD 64
/* The first 16 KiB of a mapped array (its header and first elements) stay on ordinary pages, so
 * that a run touching only those (a small machine's few links in arrays sized for a large one)
 * faults a few 4 KiB pages, not a 2 MiB one. Chosen against none, 4, 64 and 256 KiB by page
 * faults and huge pages from one node to all of Frontier (docs/speed.md, "Memory"): none gave a
 * small run huge pages it barely used, 4 KiB likewise on middle sizes, 64 and 256 KiB more faults
 * on the large runs. */
#define PLAIN ((size_t)16 << 10)

typedef struct {
    void *raw;  /* the mapping, or the block from malloc or calloc */
    size_t map; /* bytes of the mapping at raw; 0: from the C heap */
} Head;

G_STATIC_ASSERT(sizeof(Head) <= HEAD);

static inline Head *head_of(void *p) {
    return (Head *)((char *)p - HEAD);
}

static size_t checked_bytes(size_t n, size_t size) {
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes) || bytes > SIZE_MAX - 2 * HUGE_BYTES)
        g_error("bigmem: %zu elements of %zu bytes overflow", n, size);
    return bytes;
}

/* A mapping for a header and bytes: its first PLAIN bytes on ordinary pages, from there on
 * 2 MiB-aligned and advised for huge pages. Two system calls: the slack that aligns it stays
 * mapped and untouched (on a VM each call that changes mappings costs microseconds, which a small
 * run's dozen arrays felt). */
static Head *map_array(size_t bytes) {
    size_t map = PLAIN + ((HEAD + bytes - PLAIN + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1)) + HUGE_BYTES;
    char *raw = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        g_error("bigmem: failed to map %zu bytes", map);
    char *huge = (char *)(((uintptr_t)raw + PLAIN + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
#ifdef MADV_HUGEPAGE
    madvise(huge, (size_t)(raw + map - huge), MADV_HUGEPAGE); /* advice: refused, nothing changes */
#endif
    Head *h = (Head *)(huge - PLAIN);
    h->raw = raw;
    h->map = map;
    return h;
}

/* n x size bytes as bigmem_new0 gives them; zeroed only if zero (a mapping always is). */
static void *big_new(size_t n, size_t size, gboolean zero) {
    size_t bytes = checked_bytes(n, size);
    Head *h;
    if (bytes >= BIGMEM_MIN) {
        h = map_array(bytes); /* the rest of a fresh mapping reads as zero */
    } else { /* calloc: a large block comes zeroed from a fresh mapping, untouched */
        char *raw = zero ? calloc(1, 2 * HEAD + bytes) : malloc(2 * HEAD + bytes);
        if (!raw)
            g_error("bigmem: failed to allocate %zu bytes", 2 * HEAD + bytes);
        h = (Head *)(((uintptr_t)raw + HEAD - 1) & ~(uintptr_t)(HEAD - 1));
        h->raw = raw;
        h->map = 0;
    }
    return (char *)h + HEAD;
}

void *bigmem_new0(size_t n, size_t size) {
    return big_new(n, size, TRUE);
}

void bigmem_free(void *p) {
    if (!p)
        return;
    Head *h = head_of(p);
    if (h->map > 0)
        munmap(h->raw, h->map);
    else
        free(h->raw);
}

void *bigmem_regrow(void *old, size_t used, size_t cap, size_t size) {
    g_assert(used <= cap);
    void *a = bigmem_new0(cap, size);
    if (used)
        memcpy(a, old, used * size);
    bigmem_free(old);
    return a;
}

void *bigmem_double(void *old, guint32 *cap, size_t size, const char *what) {
    if (*cap > G_MAXUINT32 / 2)
        g_error("bigmem: more than %u %s at once", *cap, what);
    guint32 used = *cap;
    *cap = used ? 2 * used : 64;
    return bigmem_regrow(old, used, *cap, size);
}

/* --- arena ---------------------------------------------------------------------------------- */

/* Chunks double from ARENA_FIRST (from the C heap: a small program stays on ordinary pages) to
 * ARENA_MAX; a piece larger than that gets a chunk of its own size. */
#define ARENA_FIRST (BIGMEM_MIN - HEAD)
#define ARENA_MAX ((size_t)64 << 20)

struct BigArena {
    GPtrArray *chunks; /* bigmem arrays */
    char *at;          /* free bytes of the last chunk: [at, end) */
    char *end;
    size_t next; /* the next chunk's bytes */
};

BigArena *bigarena_new(void) {
    BigArena *a = g_new0(BigArena, 1);
    a->chunks = g_ptr_array_new_with_free_func(bigmem_free);
    a->next = ARENA_FIRST;
    return a;
}

void *bigarena_alloc(BigArena *a, size_t bytes) {
    size_t need = (bytes + HEAD - 1) & ~(size_t)(HEAD - 1);
    if (need < bytes)
        g_error("bigmem: %zu bytes overflow", bytes);
    if ((size_t)(a->end - a->at) < need || !a->at) {
        size_t chunk = MAX(a->next, need);
        char *c = big_new(chunk, 1, FALSE); /* every byte is written before it is read */
        g_ptr_array_add(a->chunks, c);
        a->at = c;
        a->end = c + chunk;
        if (a->next < ARENA_MAX)
            a->next = MIN(2 * a->next + HEAD, ARENA_MAX - HEAD);
    }
    void *p = a->at;
    a->at += need;
    return p;
}

void *bigarena_dup(BigArena *a, const void *src, size_t bytes) {
    void *p = bigarena_alloc(a, bytes);
    if (bytes > 0)
        memcpy(p, src, bytes);
    return p;
}

void *bigarena_regrow(BigArena *a, const void *old, size_t used, size_t cap, size_t size) {
    g_assert(used <= cap);
    void *p = bigarena_alloc(a, checked_bytes(cap, size));
    if (used)
        memcpy(p, old, used * size);
    return p;
}

void bigarena_free(BigArena *a) {
    if (!a)
        return;
    g_ptr_array_unref(a->chunks);
    g_free(a);
}
