/*
 * probe: checks what the kernel carries for an ioctl on a FUSE regular file
 * ("restricted" ioctls), against fakenv_fuse built with -DFAKENV_PROBE
 * (which flips every byte of the buffer it gets and returns 1 if it got one,
 * 2 if not; see fake_ioctl in fakenv_fuse.c). root_ioctls.rs runs it, so the
 * facts fakenv relies on are re-checked on every kernel the tests run on.
 *
 *   probe MOUNTPOINT/nvidiactl
 *
 * Prints one "ok: ..." line per fact, or "FAIL: ..." and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static int failed;

static void check(int cond, const char *what) {
    printf("%s: %s\n", cond ? "ok" : "FAIL", what);
    if (!cond)
        failed = 1;
}

static void fill(unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 7 + 1);
}

static int flipped(const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)((i * 7 + 1) ^ 0xff))
            return 0;
    return 1;
}

/* b[from..to) still holds fill()'s pattern */
static int unchanged_range(const unsigned char *b, size_t from, size_t to) {
    for (size_t i = from; i < to; i++)
        if (b[i] != (unsigned char)(i * 7 + 1))
            return 0;
    return 1;
}

static int unchanged(const unsigned char *b, size_t n) { return unchanged_range(b, 0, n); }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: probe FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        perror(argv[1]);
        return 2;
    }
    static unsigned char buf[16384];
    long r;

    fill(buf, 32);
    r = ioctl(fd, _IOWR('F', 0x2a, unsigned char[32]), buf);
    check(r == 1 && flipped(buf, 32), "_IOWR: _IOC_SIZE bytes copied to the daemon and its bytes copied back");

    fill(buf, 48);
    r = ioctl(fd, _IOWR('F', 0x2b, unsigned char[32]), buf);
    check(r == 1 && flipped(buf, 32) && unchanged_range(buf, 32, 48), "_IOWR: exactly _IOC_SIZE bytes, no more");

    fill(buf, 32);
    r = ioctl(fd, _IOW('F', 0x2a, unsigned char[32]), buf);
    check(r == 1 && unchanged(buf, 32), "_IOW: copied in, nothing copied back");

    fill(buf, 32);
    r = ioctl(fd, _IO('F', 0x2a), buf);
    check(r == 2 && unchanged(buf, 32), "_IO: no buffer at all");

    fill(buf, 32);
    r = ioctl(fd, 0x30000001, buf); /* UVM_INITIALIZE: dir bits 0 */
    check(r == 2 && unchanged(buf, 32), "UVM request 0x30000001 (dir _IOC_NONE): no buffer at all");

    fill(buf, 32);
    errno = 0;
    r = ioctl(fd, _IOWR('F', 0x77, unsigned char[32]), buf);
    check(r == -1 && errno == EIO && unchanged(buf, 32), "daemon error: -errno returned, nothing copied back");

    r = ioctl(fd, _IOWR('F', 0x78, unsigned char[32]), buf);
    check(r == (long)((uintptr_t)buf & 0x7fffffff), "the caller's arg pointer reaches the daemon");

    r = ioctl(fd, _IOWR('F', 0x79, unsigned char[32]), buf);
    check(r == (long)gettid(), "fuse_get_context()->pid is the caller's tid");

    fill(buf, 2304);
    r = ioctl(fd, _IOWR('F', 0xc8, unsigned char[2304]), buf);
    check(r == 1 && flipped(buf, 2304), "_IOWR of 2304 bytes (CARD_INFO x32)");

    fill(buf, 16383);
    r = ioctl(fd, _IOWR('F', 0xd7, unsigned char[16383]), buf);
    check(r == 1 && flipped(buf, 16383), "_IOWR of 16383 bytes (the largest _IOC_SIZE)");

    int bsz = 0;
    r = ioctl(fd, 2, &bsz); /* FIGETBSZ = _IO(0, 2), also UVM_RELEASE_VA's number */
    check(r == 0 && bsz > 0, "request 2 (FIGETBSZ) is answered by the VFS, never reaches the daemon");

    void *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0x10000);
    check(m != MAP_FAILED && ((volatile unsigned char *)m)[0] == 0, "MAP_SHARED read/write mmap of the file");
    if (m != MAP_FAILED)
        check(munmap(m, 8192) == 0, "munmap");

    close(fd);
    return failed;
}
