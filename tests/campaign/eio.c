/* An I/O error (EIO) injected at the Nth write or sync call of margin itself, for the
 * campaign's fault part (tests/campaign/faults.rs): preloaded with LD_PRELOAD, it counts
 * every call that writes or syncs a file (descriptors above 2: not the terminal), fails
 * call MARGIN_EIO_AT with EIO, and writes the count to MARGIN_EIO_COUNT at exit. It takes
 * itself out of the environment at load, so the commands margin starts run unharmed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static long target = -1;
static atomic_long calls;

__attribute__((constructor)) static void start(void) {
    const char *at = getenv("MARGIN_EIO_AT");
    if (at) target = atol(at);
    unsetenv("LD_PRELOAD");
}

__attribute__((destructor)) static void finish(void) {
    const char *path = getenv("MARGIN_EIO_COUNT");
    if (!path) return;
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%ld\n", atomic_load(&calls));
        fclose(f);
    }
}

/* Whether this call is the one to fail. */
static int fails(int fd) {
    if (fd <= 2) return 0;
    long n = atomic_fetch_add(&calls, 1) + 1;
    if (n == target) {
        errno = EIO;
        return 1;
    }
    return 0;
}

#define REAL(name) static __typeof__(name) *real; if (!real) real = dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *buf, size_t n) { REAL(write); return fails(fd) ? -1 : real(fd, buf, n); }
ssize_t pwrite(int fd, const void *buf, size_t n, off_t at) { REAL(pwrite); return fails(fd) ? -1 : real(fd, buf, n, at); }
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t at) { REAL(pwrite64); return fails(fd) ? -1 : real(fd, buf, n, at); }
ssize_t writev(int fd, const struct iovec *v, int n) { REAL(writev); return fails(fd) ? -1 : real(fd, v, n); }
ssize_t pwritev(int fd, const struct iovec *v, int n, off_t at) { REAL(pwritev); return fails(fd) ? -1 : real(fd, v, n, at); }
int fsync(int fd) { REAL(fsync); return fails(fd) ? -1 : real(fd); }
int fdatasync(int fd) { REAL(fdatasync); return fails(fd) ? -1 : real(fd); }
ssize_t copy_file_range(int in, off_t *a, int out, off_t *b, size_t n, unsigned int flags) {
    REAL(copy_file_range);
    return fails(out) ? -1 : real(in, a, out, b, n, flags);
}
ssize_t sendfile(int out, int in, off_t *at, size_t n) { REAL(sendfile); return fails(out) ? -1 : real(out, in, at, n); }
ssize_t sendfile64(int out, int in, off_t *at, size_t n) { REAL(sendfile64); return fails(out) ? -1 : real(out, in, at, n); }
