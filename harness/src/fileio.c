/* fileio.c: atomic replace (temporary name in the destination folder, fsync, rename, fsync of the
 * folder) and moves that survive EXDEV. Interrupted or on a full disk, a destination is either the
 * old file or the new one, never a truncated one. */
#include "mlacheck/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

mla_status mla_fio_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return mla_errorf(MLA_ERR_IO, "%s: cannot open folder: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    /* some file systems refuse fsync on a folder; the rename is then as durable as they allow */
    if (rc != 0 && err != EINVAL && err != EROFS)
        return mla_errorf(MLA_ERR_IO, "%s: fsync of the folder: %s", dir, strerror(err));
    return MLA_OK;
}

/* dst's folder into dir ("." when dst has no slash). */
static mla_status parent_of(const char *dst, char *dir, size_t n)
{
    const char *sl = strrchr(dst, '/');
    int len = snprintf(dir, n, "%.*s", sl ? (int)(sl - dst) : 1, sl ? dst : ".");
    if (len < 0 || (size_t)len >= n) return mla_errorf(MLA_ERR_INVALID, "%s: path too long", dst);
    if (sl == dst) snprintf(dir, n, "/");
    return MLA_OK;
}

static int write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Open a temporary file beside dst; tmp receives its name. */
static mla_status open_temp(const char *dst, char *tmp, size_t n, int *fd)
{
    int len = snprintf(tmp, n, "%s.tmp-XXXXXX", dst);
    if (len < 0 || (size_t)len >= n) return mla_errorf(MLA_ERR_INVALID, "%s: path too long", dst);
    *fd = mkstemp(tmp);
    if (*fd < 0) return mla_errorf(MLA_ERR_IO, "%s: cannot create a temporary file: %s", tmp, strerror(errno));
    return MLA_OK;
}

/* fsync and close fd, rename tmp over dst, fsync the folder; tmp removed on failure. */
static mla_status commit_temp(int fd, const char *tmp, const char *dst, mode_t mode)
{
    int err = 0;
    if (fchmod(fd, mode) != 0 || fsync(fd) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, dst) != 0) err = errno;
    if (err) {
        unlink(tmp);
        return mla_errorf(MLA_ERR_IO, "%s: cannot replace: %s", dst, strerror(err));
    }
    char dir[4096];
    mla_status st = parent_of(dst, dir, sizeof dir);
    return st ? st : mla_fio_fsync_dir(dir);
}

mla_status mla_fio_write_atomic(const char *dst, const void *data, size_t n)
{
    char tmp[4200];
    int fd;
    mla_status st = open_temp(dst, tmp, sizeof tmp, &fd);
    if (st) return st;
    if (write_all(fd, data, n) != 0) {
        int err = errno;
        close(fd);
        unlink(tmp);
        return mla_errorf(MLA_ERR_IO, "%s: write error: %s", tmp, strerror(err));
    }
    return commit_temp(fd, tmp, dst, 0644);
}

mla_status mla_fio_append_atomic(const char *dst, const void *data, size_t n)
{
    char *all = NULL;
    size_t have = 0;
    FILE *f = fopen(dst, "rb");
    if (!f && errno != ENOENT) return mla_errorf(MLA_ERR_IO, "%s: cannot open: %s", dst, strerror(errno));
    if (f) {
        long len = -1;
        if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
        if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
            fclose(f);
            return mla_errorf(MLA_ERR_IO, "%s: cannot read", dst);
        }
        all = malloc((size_t)len + n + 1);
        if (!all) {
            fclose(f);
            return mla_errorf(MLA_ERR_NOMEM, "%s: buffer of %ld bytes", dst, len);
        }
        have = fread(all, 1, (size_t)len, f);
        int bad = have != (size_t)len || ferror(f);
        fclose(f);
        if (bad) {
            free(all);
            return mla_errorf(MLA_ERR_IO, "%s: short read", dst);
        }
    } else if (!(all = malloc(n + 1))) {
        return mla_errorf(MLA_ERR_NOMEM, "%s: buffer", dst);
    }
    if (n) memcpy(all + have, data, n);
    mla_status st = mla_fio_write_atomic(dst, all, have + n);
    free(all);
    return st;
}

mla_status mla_fio_replace(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY);
    if (in < 0) return mla_errorf(MLA_ERR_IO, "%s: cannot open: %s", src, strerror(errno));
    struct stat sb;
    if (fstat(in, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(in);
        return mla_errorf(MLA_ERR_IO, "%s: not a regular file", src);
    }
    char tmp[4200];
    int out;
    mla_status st = open_temp(dst, tmp, sizeof tmp, &out);
    if (st) {
        close(in);
        return st;
    }
    char buf[1 << 16];
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) break;
        if (r < 0 || write_all(out, buf, (size_t)r) != 0) {
            int err = errno;
            const char *which = r < 0 ? src : tmp;
            close(in);
            close(out);
            unlink(tmp);
            return mla_errorf(MLA_ERR_IO, "%s: %s error: %s", which, r < 0 ? "read" : "write", strerror(err));
        }
    }
    close(in);
    return commit_temp(out, tmp, dst, sb.st_mode & 07777);
}

mla_status mla_fio_move_copy(const char *src, const char *dst)
{
    mla_status st = mla_fio_replace(src, dst);
    if (st) return st;
    if (unlink(src) != 0) return mla_errorf(MLA_ERR_IO, "%s: copied to %s but cannot remove: %s", src, dst, strerror(errno));
    return MLA_OK;
}

mla_status mla_fio_move(const char *src, const char *dst)
{
    if (rename(src, dst) == 0) {
        char dir[4096];
        mla_status st = parent_of(dst, dir, sizeof dir);
        return st ? st : mla_fio_fsync_dir(dir);
    }
    if (errno != EXDEV) return mla_errorf(MLA_ERR_IO, "%s: cannot move to %s: %s", src, dst, strerror(errno));
    return mla_fio_move_copy(src, dst);
}

static int is_temp_name(const char *name) { return strstr(name, ".tmp-") != NULL; }

static mla_status replace_tree(const char *src_dir, const char *dst_dir, const char *rel, const char *skip)
{
    char sp[4096], dp[4096];
    int a = snprintf(sp, sizeof sp, "%s%s%s", src_dir, rel[0] ? "/" : "", rel);
    int b = snprintf(dp, sizeof dp, "%s%s%s", dst_dir, rel[0] ? "/" : "", rel);
    if (a < 0 || b < 0 || (size_t)a >= sizeof sp || (size_t)b >= sizeof dp)
        return mla_errorf(MLA_ERR_INVALID, "%s/%s: path too long", src_dir, rel);
    if (mkdir(dp, 0755) != 0 && errno != EEXIST) return mla_errorf(MLA_ERR_IO, "%s: cannot create: %s", dp, strerror(errno));
    DIR *d = opendir(sp);
    if (!d) return mla_errorf(MLA_ERR_IO, "%s: cannot open folder: %s", sp, strerror(errno));
    mla_status st = MLA_OK;
    struct dirent *e;
    while (st == MLA_OK && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || is_temp_name(e->d_name)) continue;
        char r2[4096], s2[4200], d2[4200];
        int c = snprintf(r2, sizeof r2, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        if (c < 0 || (size_t)c >= sizeof r2) {
            st = mla_errorf(MLA_ERR_INVALID, "%s/%s: path too long", sp, e->d_name);
            break;
        }
        if (skip && strcmp(r2, skip) == 0) continue;
        int c2 = snprintf(s2, sizeof s2, "%s/%s", sp, e->d_name), c3 = snprintf(d2, sizeof d2, "%s/%s", dp, e->d_name);
        if (c2 < 0 || c3 < 0 || (size_t)c2 >= sizeof s2 || (size_t)c3 >= sizeof d2) {
            st = mla_errorf(MLA_ERR_INVALID, "%s/%s: path too long", sp, e->d_name);
            break;
        }
        struct stat sb;
        if (lstat(s2, &sb) != 0) st = mla_errorf(MLA_ERR_IO, "%s: %s", s2, strerror(errno));
        else if (S_ISDIR(sb.st_mode)) st = replace_tree(src_dir, dst_dir, r2, skip);
        else if (S_ISREG(sb.st_mode)) st = mla_fio_replace(s2, d2);
        else st = mla_errorf(MLA_ERR_IO, "%s: neither a file nor a folder", s2);
    }
    closedir(d);
    return st;
}

mla_status mla_fio_replace_tree(const char *src_dir, const char *dst_dir, const char *skip)
{
    return replace_tree(src_dir, dst_dir, "", skip);
}
