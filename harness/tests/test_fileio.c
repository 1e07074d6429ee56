/* test_fileio.c: the copy / atomic replace / move helpers (no shell, quotes in names are names). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlacheck/fileio.h"

#define PJOIN(buf, ...) assert_true(snprintf(buf, sizeof buf, __VA_ARGS__) < (int)sizeof buf)

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

static void rm_rf(const char *dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* the whole file as a string, or NULL when it does not exist */
static char *get(const char *path)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* number of entries of dir whose name contains ".tmp-" (left-over temporaries) */
static int temps_in(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp-")) n++;
    closedir(d);
    return n;
}

static char root[256];

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/test_fileio-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rm_rf(root);
    return 0;
}

static void test_replace_overwrites_whole(void **state)
{
    (void)state;
    char a[512], b[512];
    PJOIN(a, "%s/it's $(touch PWNED).h5", root); /* a quote and a command are just a name */
    PJOIN(b, "%s/dst", root);
    put(b, "an old and much longer text that must not survive as a tail");
    put(a, "new");
    assert_int_equal(mla_fio_replace(a, b), MLA_OK);
    assert_string_equal(get(b), "new");
    assert_string_equal(get(a), "new");
    assert_int_equal(temps_in(root), 0);
    char pw[512];
    PJOIN(pw, "%s/PWNED", root);
    assert_null(get(pw));
    assert_int_equal(access("PWNED", F_OK), -1);
}

static void test_replace_failure_leaves_dst(void **state)
{
    (void)state;
    char a[512], b[512];
    PJOIN(a, "%s/missing", root);
    PJOIN(b, "%s/keep", root);
    put(b, "old");
    assert_int_equal(mla_fio_replace(a, b), MLA_ERR_IO);
    assert_string_equal(get(b), "old");
    /* a destination folder that does not exist: refused, nothing written */
    PJOIN(b, "%s/no/such/dir/x", root);
    put(a, "x");
    assert_int_equal(mla_fio_replace(a, b), MLA_ERR_IO);
    assert_non_null(strstr(mla_last_error(), "no/such/dir"));
    assert_int_equal(temps_in(root), 0);
}

static void test_write_atomic(void **state)
{
    (void)state;
    char b[512];
    PJOIN(b, "%s/MANIFEST", root);
    put(b, "line 1\n");
    assert_int_equal(mla_fio_write_atomic(b, "line 1\nline 2\n", 14), MLA_OK);
    assert_string_equal(get(b), "line 1\nline 2\n");
    assert_int_equal(mla_fio_append_atomic(b, "line 3\n", 7), MLA_OK);
    assert_string_equal(get(b), "line 1\nline 2\nline 3\n");
    PJOIN(b, "%s/NEW", root); /* appending to nothing creates it */
    assert_int_equal(mla_fio_append_atomic(b, "first\n", 6), MLA_OK);
    assert_string_equal(get(b), "first\n");
    assert_int_equal(temps_in(root), 0);
}

static void test_move_and_copy_unlink(void **state)
{
    (void)state;
    char a[512], b[512];
    PJOIN(a, "%s/in'put", root);
    PJOIN(b, "%s/moved", root);
    put(a, "payload");
    assert_int_equal(mla_fio_move(a, b), MLA_OK);
    assert_null(get(a));
    assert_string_equal(get(b), "payload");
    /* the cross-device path, called directly: copied whole, then the source removed */
    PJOIN(a, "%s/second", root);
    put(a, "payload 2");
    assert_int_equal(mla_fio_move_copy(a, b), MLA_OK);
    assert_null(get(a));
    assert_string_equal(get(b), "payload 2");
    /* a failed copy keeps the source */
    PJOIN(a, "%s/third", root);
    PJOIN(b, "%s/no/dir/x", root);
    put(a, "kept");
    assert_int_equal(mla_fio_move_copy(a, b), MLA_ERR_IO);
    assert_string_equal(get(a), "kept");
}

/* a real EXDEV when /dev/shm is another file system than /tmp */
static void test_move_across_devices(void **state)
{
    (void)state;
    struct stat s1, s2;
    if (stat("/dev/shm", &s1) != 0 || stat(root, &s2) != 0 || s1.st_dev == s2.st_dev) skip();
    char a[256], b[512];
    snprintf(a, sizeof a, "/dev/shm/test_fileio-%d", (int)getpid());
    PJOIN(b, "%s/across", root);
    put(a, "crossed");
    assert_int_equal(mla_fio_move(a, b), MLA_OK);
    assert_null(get(a));
    assert_string_equal(get(b), "crossed");
}

static void test_replace_tree(void **state)
{
    (void)state;
    char src[512], dst[512], p[600];
    PJOIN(src, "%s/stage", root);
    PJOIN(dst, "%s/golden", root);
    assert_int_equal(mkdir(src, 0755), 0);
    assert_int_equal(mkdir(dst, 0755), 0);
    PJOIN(p, "%s/m1", src);
    assert_int_equal(mkdir(p, 0755), 0);
    PJOIN(p, "%s/m1/a.h5", src);
    put(p, "new a");
    PJOIN(p, "%s/MANIFEST", src);
    put(p, "staged manifest");
    PJOIN(p, "%s/MANIFEST", dst);
    put(p, "kept manifest");
    PJOIN(p, "%s/m1", dst);
    assert_int_equal(mkdir(p, 0755), 0);
    PJOIN(p, "%s/m1/a.h5", dst);
    put(p, "old a, longer");
    PJOIN(p, "%s/m1/b.h5", dst);
    put(p, "untouched b");
    assert_int_equal(mla_fio_replace_tree(src, dst, "MANIFEST"), MLA_OK);
    PJOIN(p, "%s/m1/a.h5", dst);
    assert_string_equal(get(p), "new a");
    PJOIN(p, "%s/m1/b.h5", dst);
    assert_string_equal(get(p), "untouched b");
    PJOIN(p, "%s/MANIFEST", dst);
    assert_string_equal(get(p), "kept manifest");
    PJOIN(p, "%s/m1", dst);
    assert_int_equal(temps_in(p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replace_overwrites_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replace_failure_leaves_dst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_atomic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_and_copy_unlink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_move_across_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replace_tree, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
