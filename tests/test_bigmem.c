/* bigmem: large arrays come zeroed and aligned and sit on mappings advised for huge pages; an
 * arena's pieces are aligned, apart and intact. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "util.h"

static gboolean all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return FALSE;
    return TRUE;
}

/* Sizes below and above BIGMEM_MIN: the C heap and a mapping. */
static const size_t sizes[] = {1, 100, 4096, BIGMEM_MIN - 1, BIGMEM_MIN, 3 * BIGMEM_MIN + 17};

START_TEST(test_new_zeroed_aligned) {
    for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
        unsigned char *p = bigmem_new0(sizes[k], 1);
        ck_assert_msg((uintptr_t)p % 64 == 0, "%zu bytes at %p, not 64-byte aligned", sizes[k],
                      (void *)p);
        ck_assert_msg(all_zero(p, sizes[k]), "%zu bytes not zeroed", sizes[k]);
        memset(p, 0xa5, sizes[k]); /* every byte writable */
        bigmem_free(p);
    }
    bigmem_free(NULL);
}
END_TEST

/* n x size that overflows is refused (g_error), not wrapped into a small array. */
START_TEST(test_overflow_refused) {
    bigmem_new0(SIZE_MAX / 8 + 2, 8);
}
END_TEST

/* A large array's last bytes lie in a mapping with the huge-page advice (VmFlags "hg" in
 * /proc/self/smaps; its first KiB stay on ordinary pages), where the kernel has transparent huge
 * pages; otherwise there is nothing to check. Whether the kernel then backs it with huge pages
 * depends on its settings and free memory, not on us. */
START_TEST(test_large_array_advised) {
    if (!g_file_test("/sys/kernel/mm/transparent_hugepage/enabled", G_FILE_TEST_EXISTS))
        return;
    g_autofree char *mode = NULL;
    g_file_get_contents("/sys/kernel/mm/transparent_hugepage/enabled", &mode, NULL, NULL);
    if (!mode || strstr(mode, "[never]"))
        return;
    size_t bytes = 4 * BIGMEM_MIN;
    char *array = bigmem_new0(bytes, 1);
    memset(array, 1, bytes);
    char *p = array + bytes - 1;
    g_autofree char *smaps = NULL;
    ck_assert(g_file_get_contents("/proc/self/smaps", &smaps, NULL, NULL));
    gboolean in = FALSE, found = FALSE, advised = FALSE;
    for (char *line = strtok(smaps, "\n"); line; line = strtok(NULL, "\n")) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            found = found || in;
        } else if (in && g_str_has_prefix(line, "VmFlags:")) {
            advised = strstr(line, " hg") != NULL;
        }
    }
    ck_assert_msg(found, "no mapping holds the array");
    ck_assert_msg(advised, "the array's mapping is not advised MADV_HUGEPAGE");
    bigmem_free(array);
}
END_TEST

/* Pieces of every size, from a zero-byte one to ones larger than any chunk: each 64-byte aligned,
 * each keeps its bytes while the others are written (none overlap). */
START_TEST(test_arena_pieces) {
    g_autoptr(BigArena) a = bigarena_new();
    enum { N = 200 };
    unsigned char *piece[N];
    size_t len[N];
    GRand *rng = g_rand_new_with_seed(7);
    for (int i = 0; i < N; i++) {
        len[i] = i == 0     ? 0
                 : i == 150 ? ((size_t)64 << 20) + 1 /* over the largest chunk */
                            : (size_t)g_rand_int_range(rng, 1, 200000);
        unsigned char src[64];
        memset(src, i & 0xff, sizeof src);
        piece[i] = len[i] <= sizeof src ? bigarena_dup(a, src, len[i]) : bigarena_alloc(a, len[i]);
        ck_assert_msg((uintptr_t)piece[i] % 64 == 0, "piece %d not 64-byte aligned", i);
        memset(piece[i], i & 0xff, len[i]);
    }
    g_rand_free(rng);
    for (int i = 0; i < N; i++)
        for (size_t k = 0; k < len[i]; k++)
            if (piece[i][k] != (unsigned char)(i & 0xff))
                ck_abort_msg("piece %d byte %zu overwritten: %u", i, k, piece[i][k]);
}
END_TEST

/* A list grown by doubling in the arena (crossing and phase lists): each piece holds the elements
 * so far, in order, and the pieces it left keep theirs (nothing points into them any more, but a
 * piece is never written after it is left). */
START_TEST(test_arena_regrow) {
    g_autoptr(BigArena) a = bigarena_new();
    uint32_t *list = NULL, *first = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t x = 0; x < 1000; x++) {
        if (n == cap) {
            size_t grown = cap ? 2 * cap : 4;
            list = bigarena_regrow(a, list, n, grown, sizeof *list);
            ck_assert_msg((uintptr_t)list % 64 == 0, "piece not 64-byte aligned");
            cap = grown;
            if (!first)
                first = list;
        }
        list[n++] = x * 7;
    }
    ck_assert_uint_eq(cap, 1024);
    for (size_t i = 0; i < n; i++)
        ck_assert_uint_eq(list[i], i * 7);
    for (size_t i = 0; i < 4; i++) /* the first piece, left at 4 */
        ck_assert_uint_eq(first[i], i * 7);
}
END_TEST

int main(void) {
    Suite *s = suite_create("bigmem");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_new_zeroed_aligned);
    /* the refusal aborts the process: only where each test runs in a child of its own (the
     * sanitizer build runs them in one process, CK_FORK=no) */
    const char *fork = getenv("CK_FORK");
    if (!fork || strcmp(fork, "no") != 0)
        tcase_add_test_raise_signal(tc, test_overflow_refused, SIGTRAP);
    tcase_add_test(tc, test_large_array_advised);
    tcase_add_test(tc, test_arena_pieces);
    tcase_add_test(tc, test_arena_regrow);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
