/* bigmem: large arrays on transparent huge pages, and an arena of them.
 *
 * For: the few arrays whose size grows with the work or the machine (rank programs, per-rank and
 * per-link state). Each first touch of a 4 KiB page is a fault the kernel serves by zeroing a
 * page; on virtual machines that is a trap to the hypervisor as well: microseconds a page
 * (docs/speed.md, "Memory"; tools/pagefaults.c measures it), more than the simulator's own work
 * an event. An array of BIGMEM_MIN bytes or more is mapped apart: its first
 * 16 KiB on ordinary pages (a small run that touches only its first elements faults a few small
 * pages), the rest 2 MiB-aligned and advised MADV_HUGEPAGE, so that the kernel may back it with 2
 * MiB pages, one fault each. Where the kernel has no transparent huge pages (or `never`), the
 * advice does nothing and the array is an ordinary anonymous mapping. Smaller arrays come from the
 * C heap (calloc). Not for: anything per event (no allocation there), or small structures. */
#ifndef SIM_BIGMEM_H
#define SIM_BIGMEM_H

#include <glib.h>
#include <stddef.h>

/* Arrays from this size on are mapped apart (below it, a mapping's system calls and a huge page's
 * zeroing cost more than the few faults they save). */
#define BIGMEM_MIN ((size_t)256 << 10)

/* n elements of size bytes, zeroed, 64-byte aligned; aborts like g_malloc when memory runs out or
 * n x size overflows. bigmem_free releases it. */
void *bigmem_new0(size_t n, size_t size);
void bigmem_free(void *p);
/* The first used elements of size bytes at old (a bigmem array or NULL) in a fresh bigmem array
 * of cap (zeroed past them), old freed: for arrays that double as they fill, read by index on
 * every event (the engine's slots, the network's flows, the collectives' instances). */
void *bigmem_regrow(void *old, size_t used, size_t cap, size_t size);
/* A full array of *cap elements (0: none yet) twice as large (64 at first), *cap updated; aborts
 * naming what when the count would pass G_MAXUINT32. */
void *bigmem_double(void *old, guint32 *cap, size_t size, const char *what);

/* An arena: pieces carved one after another from big chunks and freed all together. For arrays
 * written once and kept until the arena goes (a stage's program, copied in when it is complete):
 * the pieces of every stage share huge pages, where each stage apart would be too small for one. */
typedef struct BigArena BigArena;

BigArena *bigarena_new(void);
/* bytes from the arena, 64-byte aligned, not zeroed; 0 bytes gives a valid pointer. */
void *bigarena_alloc(BigArena *a, size_t bytes);
/* A copy of bytes at src in the arena. */
void *bigarena_dup(BigArena *a, const void *src, size_t bytes);
/* A list that grows: a piece of cap elements of size bytes with old's first used copied in; old
 * stays in the arena (a list that doubles leaves at most as many bytes again as its last piece). */
void *bigarena_regrow(BigArena *a, const void *old, size_t used, size_t cap, size_t size);
void bigarena_free(BigArena *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(BigArena, bigarena_free)

#endif
