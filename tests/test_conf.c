/* conf: units, locations in messages, unknown-key suggestions, overrides. */
#include "conf.h"
#include "util.h"

START_TEST(test_units) {
    double v;
    int64_t t;
    ck_assert(conf_parse_bytes("64GiB", &v));
    ck_assert_double_eq(v, 64.0 * 1024 * 1024 * 1024);
    ck_assert(conf_parse_bytes("1.5GB", &v));
    ck_assert_double_eq(v, 1.5e9);
    ck_assert(conf_parse_bytes("4096", &v));
    ck_assert_double_eq(v, 4096);
    ck_assert(!conf_parse_bytes("25GB/s", &v));
    ck_assert(conf_parse_rate("25GB/s", &v));
    ck_assert_double_eq(v, 25e9);
    ck_assert(conf_parse_rate("200Gb/s", &v));
    ck_assert_double_eq(v, 25e9);
    ck_assert(!conf_parse_rate("25GB", &v));
    ck_assert(conf_parse_time("2us", &t));
    ck_assert_int_eq(t, 2000000);
    ck_assert(conf_parse_time("9.5us", &t));
    ck_assert_int_eq(t, 9500000);
    ck_assert(conf_parse_time("1.5ms", &t));
    ck_assert_int_eq(t, 1500000000);
    ck_assert(conf_parse_time("0", &t));
    ck_assert_int_eq(t, 0);
    ck_assert(!conf_parse_time("5", &t)); /* a bare number of time is ambiguous */
    ck_assert(conf_parse_flops("191.5TFLOP/s", &v));
    ck_assert_double_eq_tol(v, 191.5e12, 1.0);
    ck_assert(!conf_parse_flops("191.5T", &v));
}
END_TEST

START_TEST(test_parse_error_location) {
    g_autoptr(GError) err = NULL;
    ConfNode *n = conf_load_string("a: 1\nb: [1, 2\nc: 3\n", "x.yaml", &err);
    ck_assert_ptr_null(n);
    ck_assert_msg(g_str_has_prefix(err->message, "x.yaml:"), "got: %s", err->message);
    ck_assert_int_eq(err->code, CONF_ERROR_PARSE);
}
END_TEST

START_TEST(test_unknown_key_suggests) {
    g_autoptr(GError) err = NULL;
    g_autoptr(ConfNode) n = conf_load_string("layers: 2\nhiden: 4\n", "m.yaml", &err);
    ck_assert_ptr_nonnull(n);
    const char *const valid[] = {"layers", "hidden", "heads", NULL};
    ck_assert(!conf_check_keys(n, valid, "model", &err));
    ck_assert_msg(strstr(err->message, "m.yaml:2:1") && strstr(err->message, "'hiden'") &&
                      strstr(err->message, "did you mean 'hidden'"),
                  "got: %s", err->message);
}
END_TEST

START_TEST(test_typed_getters) {
    g_autoptr(GError) err = NULL;
    g_autoptr(ConfNode) n =
        conf_load_string("bw: 25GB\nsize: -3GB\nn: 4x\nok: 12us\n", "t.yaml", &err);
    double d;
    int64_t t, i;
    ck_assert(!conf_rate(n, "bw", TRUE, &d, &err));
    ck_assert_msg(strstr(err->message, "t.yaml:1:5") && strstr(err->message, "rate"), "got: %s",
                  err->message);
    g_clear_error(&err);
    ck_assert(!conf_bytes(n, "size", TRUE, &d, &err));
    ck_assert_msg(strstr(err->message, "t.yaml:2:7") && strstr(err->message, "negative"), "got: %s",
                  err->message);
    g_clear_error(&err);
    ck_assert(!conf_int(n, "n", TRUE, 0, 10, &i, &err));
    g_clear_error(&err);
    ck_assert(!conf_int(n, "missing", TRUE, 0, 10, &i, &err));
    ck_assert_msg(strstr(err->message, "missing key 'missing'"), "got: %s", err->message);
    g_clear_error(&err);
    ck_assert(conf_time(n, "ok", TRUE, &t, &err));
    ck_assert_int_eq(t, 12000000);
}
END_TEST

START_TEST(test_set_path) {
    g_autoptr(GError) err = NULL;
    g_autoptr(ConfNode) n = conf_load_string("a:\n  b: 1\n", "s.yaml", &err);
    ck_assert(conf_set_path(n, "a.b", "2", "--set a.b=2", &err));
    ck_assert(conf_set_path(n, "a.c.d", "3", "--set a.c.d=3", &err));
    ck_assert_str_eq(conf_get(conf_get(n, "a"), "b")->value, "2");
    ck_assert_str_eq(conf_get(conf_get(conf_get(n, "a"), "c"), "d")->value, "3");
    ck_assert(!conf_set_path(n, "a.b.x", "1", "--set a.b.x=1", &err));
    ck_assert_int_eq(conf_edit_distance("hiden", "hidden"), 1);
}
END_TEST

int main(void) {
    Suite *s = suite_create("conf");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_units);
    tcase_add_test(tc, test_parse_error_location);
    tcase_add_test(tc, test_unknown_key_suggests);
    tcase_add_test(tc, test_typed_getters);
    tcase_add_test(tc, test_set_path);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
