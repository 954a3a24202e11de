/* Prints how many BPF programs, links and maps the kernel holds
 * ("programs N links N maps N"), walking their ids with the
 * BPF_*_GET_NEXT_ID commands (root). Exit 1 on an error other than the
 * end of the id list (ENOENT). */
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long count(int cmd, const char *what) {
    union bpf_attr a;
    long n = 0;
    __u32 id = 0;
    for (;;) {
        memset(&a, 0, sizeof a);
        a.start_id = id;
        if (syscall(SYS_bpf, cmd, &a, sizeof a) != 0) {
            if (errno == ENOENT)
                return n;
            fprintf(stderr, "bpf_objects: listing %s: %s\n", what, strerror(errno));
            return -1;
        }
        id = a.next_id;
        n++;
    }
}

int main(void) {
    long p = count(BPF_PROG_GET_NEXT_ID, "programs");
    long l = count(BPF_LINK_GET_NEXT_ID, "links");
    long m = count(BPF_MAP_GET_NEXT_ID, "maps");
    if (p < 0 || l < 0 || m < 0)
        return 1;
    printf("programs %ld links %ld maps %ld\n", p, l, m);
    return 0;
}
