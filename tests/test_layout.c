/* The layout: coordinates, groups and pipeline neighbours on tp = 2, pp = 3, dp = 4 (24 ranks),
 * checked against Megatron-LM's order written out by hand (TP fastest, then DP, then PP). */
#include "util.h"

static LayoutShape shape(int vpp, int ep) {
    return (LayoutShape){.tp = 2, .cp = 1, .dp = 4, .ep = ep, .pp = 3, .vpp = vpp};
}

START_TEST(test_coords_round_trip) {
    g_autoptr(Layout) l = layout_new(shape(1, 1));
    ck_assert_int_eq(layout_ranks(l), 24);
    for (int r = 0; r < 24; r++) {
        LayoutCoord c = layout_coord(l, r);
        /* rank = pp * (dp * tp) + dp * tp + tp */
        ck_assert_int_eq(c.tp, r % 2);
        ck_assert_int_eq(c.dp, r / 2 % 4);
        ck_assert_int_eq(c.pp, r / 8);
        ck_assert_int_eq(c.cp, 0);
        ck_assert_int_eq(layout_rank(l, c), r);
        ck_assert_int_eq(layout_stage(l, r), r / 8);
    }
    /* rank 13: stage 1, dp 2, tp 1 */
    LayoutCoord c = layout_coord(l, 13);
    ck_assert_int_eq(c.pp, 1);
    ck_assert_int_eq(c.dp, 2);
    ck_assert_int_eq(c.tp, 1);
}
END_TEST

START_TEST(test_groups) {
    g_autoptr(Layout) l = layout_new(shape(1, 2));
    int m[8];
    /* TP: 12 groups of 2 consecutive ranks */
    ck_assert_int_eq(layout_group_count(l, DIM_TP), 12);
    ck_assert_int_eq(layout_group(l, DIM_TP, 13, m), 6);
    ck_assert_int_eq(m[0], 12);
    ck_assert_int_eq(m[1], 13);
    /* DP: 6 groups of 4, stride 2; rank 13's is stage 1, tp 1: {9, 11, 13, 15}, index 1 * 2 + 1 */
    ck_assert_int_eq(layout_group_count(l, DIM_DP), 6);
    ck_assert_int_eq(layout_group_size(l, DIM_DP), 4);
    ck_assert_int_eq(layout_group(l, DIM_DP, 13, m), 3);
    int dp13[4] = {9, 11, 13, 15};
    for (int k = 0; k < 4; k++)
        ck_assert_int_eq(m[k], dp13[k]);
    /* PP: 8 groups of 3, stride 8: {5, 13, 21} */
    ck_assert_int_eq(layout_group_count(l, DIM_PP), 8);
    ck_assert_int_eq(layout_group(l, DIM_PP, 13, m), 5);
    ck_assert_int_eq(m[0], 5);
    ck_assert_int_eq(m[1], 13);
    ck_assert_int_eq(m[2], 21);
    /* EP 2 inside DP 4: consecutive DP replicas pair up, {13, 15} (dp 2 and 3) */
    ck_assert_int_eq(layout_group_count(l, DIM_EP), 12);
    ck_assert_int_eq(layout_group(l, DIM_EP, 13, m), 7);
    ck_assert_int_eq(m[0], 13);
    ck_assert_int_eq(m[1], 15);
    ck_assert_int_eq(layout_index(l, DIM_EP, 13), 0);
    ck_assert_int_eq(layout_index(l, DIM_EP, 15), 1);
    /* every rank is in exactly one group of each dimension, and that group lists it */
    for (int d = 0; d < DIM_COUNT; d++) {
        int seen[24] = {0};
        for (int g = 0; g < layout_group_count(l, d); g++) {
            int n = layout_group_members(l, d, g, m);
            for (int k = 0; k < n; k++) {
                seen[m[k]]++;
                ck_assert_int_eq(layout_group_of(l, d, m[k]), g);
            }
        }
        for (int r = 0; r < 24; r++)
            ck_assert_msg(seen[r] == 1, "dim %s: rank %d in %d groups", layout_dim_name(d), r,
                          seen[r]);
    }
}
END_TEST

START_TEST(test_neighbours) {
    g_autoptr(Layout) l = layout_new(shape(1, 1));
    ck_assert_int_eq(layout_pp_next(l, 5), 13);
    ck_assert_int_eq(layout_pp_next(l, 13), 21);
    ck_assert_int_eq(layout_pp_next(l, 21), -1);
    ck_assert_int_eq(layout_pp_prev(l, 21), 13);
    ck_assert_int_eq(layout_pp_prev(l, 5), -1);
    /* with virtual stages the pipeline is a ring: the last stage feeds the first */
    g_autoptr(Layout) v = layout_new(shape(2, 1));
    ck_assert_int_eq(layout_pp_next(v, 21), 5);
    ck_assert_int_eq(layout_pp_prev(v, 5), 21);
    ck_assert_int_eq(layout_pp_next(v, 5), 13);
}
END_TEST

int main(void) {
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_coords_round_trip);
    tcase_add_test(tc, test_groups);
    tcase_add_test(tc, test_neighbours);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
