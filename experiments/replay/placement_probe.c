/* Probes of the host speed a thread sees where it runs now (issue 44: the H200 VM's
 * untraced loop runs at two speeds by vCPU placement, and the cache-resident host
 * calibration does not see it). Loaded by placement_probe.py with ctypes:
 *
 *   chase(n_lines, steps): ns per dependent load over a random cyclic permutation of
 *       n_lines 64-byte lines (built once per size; 4 Mi lines = 256 MiB: memory latency;
 *       128 Ki lines = 8 MiB: the last-level cache);
 *   stream(n_bytes, passes): ns per 64-byte line read sequentially (bandwidth side);
 *   spin(n): ns per step of a dependent integer loop (core speed, cache-resident).
 *
 * gcc -O2 -shared -fPIC -o placement_probe.so placement_probe.c */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct line { struct line *next; char pad[56]; };
static struct line *lines[2];
static size_t sizes[2];

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

static struct line *build(size_t n) {
    struct line *l = aligned_alloc(4096, n * sizeof(struct line));
    size_t *perm = malloc(n * sizeof(size_t));
    if (!l || !perm) return 0;
    for (size_t i = 0; i < n; i++) perm[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = next_rand() % (i + 1);
        size_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    for (size_t i = 0; i < n; i++) l[perm[i]].next = &l[perm[(i + 1) % n]];
    free(perm);
    return l;
}

double chase(uint64_t n_lines, uint64_t steps) {
    int k = n_lines > (1u << 20) ? 1 : 0;
    if (sizes[k] != n_lines) {
        free(lines[k]);
        lines[k] = build(n_lines);
        sizes[k] = lines[k] ? n_lines : 0;
        if (!lines[k]) return -1;
    }
    struct line *p = lines[k];
    for (uint64_t i = 0; i < steps / 8; i++) p = p->next; /* warm the TLB and the path */
    uint64_t t = now_ns();
    for (uint64_t i = 0; i < steps; i++) p = p->next;
    uint64_t d = now_ns() - t;
    if (p == 0) return -2;
    return (double)d / (double)steps;
}

double stream(uint64_t n_bytes, uint64_t passes) {
    static char *buf;
    static uint64_t have;
    if (have != n_bytes) {
        free(buf);
        buf = aligned_alloc(4096, n_bytes);
        if (!buf) return -1;
        for (uint64_t i = 0; i < n_bytes; i++) buf[i] = (char)i;
        have = n_bytes;
    }
    volatile uint64_t acc = 0;
    uint64_t t = now_ns();
    for (uint64_t p = 0; p < passes; p++) {
        uint64_t s = 0;
        for (uint64_t i = 0; i < n_bytes; i += 64) s += (uint64_t)buf[i];
        acc += s;
    }
    uint64_t d = now_ns() - t;
    (void)acc;
    return (double)d / (double)(passes * (n_bytes / 64));
}

double spin(uint64_t n) {
    uint64_t x = 1, t = now_ns();
    for (uint64_t i = 0; i < n; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x *= 0x9E3779B97F4A7C15ull; }
    uint64_t d = now_ns() - t;
    return x == 0 ? -1.0 : (double)d / (double)n;
}
