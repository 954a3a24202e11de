/*
 * Test program for `tracer record --replayable` (../root_replayable.rs):
 * against the fake libcuda, loads the committed nvcc fixtures
 * (../fixtures/cuda) through every load function, looks kernels up every way,
 * launches them with known parameter values (kernelParams, `extra`,
 * cuLaunchKernelEx attributes, from 2 threads), launches one handle no lookup
 * returned, and copies known host buffers to the device.
 *
 *   replayable FIXTURE_DIR
 *
 * Everything the recorder must capture is known in advance:
 * - launch ID has gridDimX = ID; its argument values are functions of ID
 *   (fill_args below; tests/common/replayable.rs computes the same values
 *   independently, from kernels.cu's documented layouts);
 * - structs passed through kernelParams are zeroed first (their internal
 *   padding is 0); `extra` buffers have every padding byte, between and
 *   inside parameters, set to EXTRA_PAD (0xee): captured "as passed";
 * - every in-memory image is followed by 4 KiB of junk (the recorder must
 *   find the image's real size); the second copy of the no-compress fatbin
 *   has other junk (deduplication is by the image bytes);
 * - one image buffer and two copy sources are overwritten (and the image
 *   freed) right after the call returns: the recorder must have read them
 *   when the call was entered.
 *
 * stdout, one line per action (root_replayable.rs ignores it; fakecuda_lib.rs
 * checks it against the Rust expectations without tracing):
 *   load API WHAT BYTES              WHAT: fixture file name, or what is wrong
 *   lookup API OWNER NAME HANDLE     (NAME "-" for cuKernelGetFunction and
 *                                     cuLibraryGetModule)
 *   launch ID API KERNEL VIA HEX     the parameter buffer the kernel receives,
 *                                    assembled here from what was passed
 *                                    (VIA: layout | extra | -, the unknown handle)
 *   copy API SIZE
 *   graph cuGraphLaunch
 * Exit status 1 with a message on stderr if anything fails.
 *
 * Build: cc -O1 -o replayable replayable.c -L DIR -l:libcuda.so.1 -Wl,-rpath,DIR -pthread
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fakecuda.h"

#define H(v) ((void *)(uintptr_t)(v))
#define EXTRA_PAD 0xee
#define JUNK 4096

static int failures;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

#define OK(call)                                                                           \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            fprintf(stderr, "replayable: %s returned %d\n", #call, r_);                    \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                            \
        }                                                                                  \
    } while (0)

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "replayable: %s:%d: %s is false\n", __FILE__, __LINE__, #cond); \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                            \
        }                                                                                  \
    } while (0)

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) {
        perror("replayable: malloc");
        exit(1);
    }
    return p;
}

/* ======================================================================== */
/* the fixture kernels: layouts as documented in kernels.cu                  */
/* ======================================================================== */

enum kid { K_POINTERS, K_SCALARS, K_STRUCT, K_VEC, K_BIG, K_HUGE, K_GRIDCONST, K_NOPARAMS, K_CPP, K_TMPL_D, K_TMPL_F, K_COUNT };

struct slot {
    unsigned off, size;
};

static const struct kdesc {
    const char *name;
    unsigned size, n;
    struct slot p[7];
} K[K_COUNT] = {
    [K_POINTERS] = {"k_pointers", 20, 3, {{0, 8}, {8, 8}, {16, 4}}},
    [K_SCALARS] = {"k_scalars", 40, 7, {{0, 1}, {2, 2}, {4, 4}, {8, 8}, {16, 4}, {24, 8}, {32, 8}}},
    [K_STRUCT] = {"k_struct", 48, 5, {{0, 1}, {8, 24}, {32, 3}, {36, 2}, {40, 8}}},
    [K_VEC] = {"k_vec", 32, 3, {{0, 16}, {16, 1}, {24, 8}}},
    [K_BIG] = {"k_big", 1040, 2, {{0, 1028}, {1032, 8}}},
    [K_HUGE] = {"k_huge", 6008, 2, {{0, 6000}, {6000, 8}}},
    [K_GRIDCONST] = {"k_gridconst", 32, 2, {{0, 24}, {24, 8}}},
    [K_NOPARAMS] = {"k_noparams", 0, 0, {{0, 0}}},
    [K_CPP] = {"_Z5k_cppPif", 12, 2, {{0, 8}, {8, 4}}},
    [K_TMPL_D] = {"_Z10k_templateIdLi8EEvPT_S0_", 16, 2, {{0, 8}, {8, 8}}},
    [K_TMPL_F] = {"_Z10k_templateIfLi4EEvPT_S0_", 12, 2, {{0, 8}, {8, 4}}},
};

/* One launch's argument values: val[i] holds parameter i (K[k].p[i].size bytes). */
struct args {
    int k;
    unsigned char *val[7];
    void *ptrs[8];
};

static void put(unsigned char *dst, unsigned off, const void *v, size_t n) { memcpy(dst + off, v, n); }
#define PUT(dst, off, T, x)                                                                \
    do {                                                                                   \
        T v_ = (x);                                                                        \
        put((dst), (off), &v_, sizeof v_);                                                 \
    } while (0)

/*
 * The argument values of launch `id` of kernel k. Struct members are written
 * at their offsets inside the struct; the other bytes of a struct are `pad`.
 * Keep in step with tests/common/replayable.rs (args()).
 */
static void fill_args(struct args *a, int k, unsigned id, unsigned char pad) {
    const struct kdesc *d = &K[k];
    a->k = k;
    for (unsigned i = 0; i < d->n; i++) {
        a->val[i] = xmalloc(d->p[i].size);
        memset(a->val[i], pad, d->p[i].size);
        a->ptrs[i] = a->val[i];
    }
    a->ptrs[d->n] = 0;
    unsigned char **v = a->val;
    switch (k) {
    case K_POINTERS:
        PUT(v[0], 0, uint64_t, 0x7f0000000000ULL + id * 0x1000ULL);
        PUT(v[1], 0, uint64_t, 0x7f0000800000ULL + id);
        PUT(v[2], 0, uint32_t, id * 3);
        break;
    case K_SCALARS:
        PUT(v[0], 0, uint8_t, (uint8_t)(id * 7));
        PUT(v[1], 0, uint16_t, (uint16_t)(0u - id * 13));
        PUT(v[2], 0, uint32_t, 0x12345678u ^ id);
        PUT(v[3], 0, uint64_t, 0x0123456789abcdefULL ^ ((uint64_t)id << 40));
        PUT(v[4], 0, float, (float)id + 0.5f);
        PUT(v[5], 0, double, (double)id * -2.25);
        PUT(v[6], 0, uint64_t, 0x7f0000100000ULL + id);
        break;
    case K_STRUCT: /* char tag, Odd o {c@0, d@8, s@16}, Rgb p {r, g, b}, short h, double *out */
        PUT(v[0], 0, uint8_t, (uint8_t)(0x40 + id % 32));
        PUT(v[1], 0, uint8_t, (uint8_t)id);
        PUT(v[1], 8, double, (double)id * 1.125);
        PUT(v[1], 16, uint16_t, (uint16_t)(0u - id * 3));
        PUT(v[2], 0, uint8_t, (uint8_t)id);
        PUT(v[2], 1, uint8_t, (uint8_t)(id + 1));
        PUT(v[2], 2, uint8_t, (uint8_t)(id + 2));
        PUT(v[3], 0, uint16_t, (uint16_t)(0x7000 + id));
        PUT(v[4], 0, uint64_t, 0x7f0000200000ULL + id);
        break;
    case K_VEC: /* int4 v, char c, int4 *out */
        PUT(v[0], 0, uint32_t, id);
        PUT(v[0], 4, uint32_t, 0u - id);
        PUT(v[0], 8, uint32_t, id * 1000);
        PUT(v[0], 12, uint32_t, 0x7fffffffu - id);
        PUT(v[1], 0, uint8_t, (uint8_t)(id + 1));
        PUT(v[2], 0, uint64_t, 0x7f0000300000ULL + id);
        break;
    case K_BIG: /* Big {float v[256]; int n;}, float *out */
        for (unsigned j = 0; j < 256; j++)
            PUT(v[0], 4 * j, float, (float)id + (float)j * 0.25f);
        PUT(v[0], 1024, uint32_t, id * 5);
        PUT(v[1], 0, uint64_t, 0x7f0000400000ULL + id);
        break;
    case K_HUGE: /* Huge {int v[1500];}, int *out */
        for (unsigned j = 0; j < 1500; j++)
            PUT(v[0], 4 * j, uint32_t, id * 10000 + j);
        PUT(v[1], 0, uint64_t, 0x7f0000500000ULL + id);
        break;
    case K_GRIDCONST: /* const __grid_constant__ Odd o, double *out */
        PUT(v[0], 0, uint8_t, (uint8_t)(0u - id));
        PUT(v[0], 8, double, (double)id * -0.5);
        PUT(v[0], 16, uint16_t, (uint16_t)(id * 11));
        PUT(v[1], 0, uint64_t, 0x7f0000600000ULL + id);
        break;
    case K_NOPARAMS:
        break;
    case K_CPP: /* int *out, float x */
        PUT(v[0], 0, uint64_t, 0x7f0000700000ULL + id);
        PUT(v[1], 0, float, (float)id * 0.75f);
        break;
    case K_TMPL_D: /* double *out, double v */
        PUT(v[0], 0, uint64_t, 0x7f0000900000ULL + id);
        PUT(v[1], 0, double, (double)id * 3.5);
        break;
    case K_TMPL_F: /* float *out, float v */
        PUT(v[0], 0, uint64_t, 0x7f0000a00000ULL + id);
        PUT(v[1], 0, float, (float)id * 0.125f);
        break;
    }
}

static void free_args(struct args *a) {
    for (unsigned i = 0; i < K[a->k].n; i++)
        free(a->val[i]);
}

/* The parameter buffer as the kernel receives it: each value at its offset, `pad` elsewhere. */
static unsigned char *assemble(const struct args *a, unsigned char pad) {
    const struct kdesc *d = &K[a->k];
    unsigned char *b = xmalloc(d->size + 1);
    memset(b, pad, d->size);
    for (unsigned i = 0; i < d->n; i++)
        memcpy(b + d->p[i].off, a->val[i], d->p[i].size);
    return b;
}

static void print_hex_line(const char *head, const unsigned char *b, size_t n) {
    static const char digits[] = "0123456789abcdef";
    char *s = xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = digits[b[i] >> 4];
        s[2 * i + 1] = digits[b[i] & 15];
    }
    s[2 * n] = 0;
    pthread_mutex_lock(&out_lock);
    printf("%s %s\n", head, s);
    pthread_mutex_unlock(&out_lock);
    free(s);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&out_lock);
    vprintf(fmt, ap);
    pthread_mutex_unlock(&out_lock);
    va_end(ap);
}

/* ======================================================================== */
/* launches                                                                 */
/* ======================================================================== */

enum api { KL, KL_PTSZ, EX, EX_PTSZ, COOP };
static const char *const API_NAME[] = {"cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
                                       "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel"};

enum via { LAYOUT, EXTRA, LAYOUT_NULL /* kernelParams NULL (k_noparams) */ };

/* cuLaunchKernelEx attribute sets (root_replayable.rs checks them in args.config.attrs). */
enum attrs { A_NONE, A_CLUSTER_PRIO, A_COOP, A_ALL };

static CUstream ex_stream;

static unsigned fill_attrs(CUlaunchAttribute *at, int which) {
    memset(at, 0, 3 * sizeof *at);
    switch (which) {
    case A_CLUSTER_PRIO:
        at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at[0].value.clusterDim.x = 2;
        at[0].value.clusterDim.y = 1;
        at[0].value.clusterDim.z = 1;
        at[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
        at[1].value.priority = -3;
        return 2;
    case A_COOP:
        at[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        at[0].value.cooperative = 1;
        return 1;
    case A_ALL:
        at[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at[0].value.clusterDim.x = 1;
        at[0].value.clusterDim.y = 2;
        at[0].value.clusterDim.z = 1;
        at[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        at[1].value.cooperative = 1;
        at[2].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
        at[2].value.priority = 2;
        return 3;
    }
    return 0;
}

/*
 * A launch with its arguments built, so that the call can follow a lookup at
 * once: launch `id` of kernel k, grid (id, 1, 1).
 */
struct prepared {
    unsigned id;
    int api, k, via;
    struct args a;
    unsigned char *buf; /* what the kernel receives; the `extra` buffer */
    size_t size;
    void *extra[5];
    CUlaunchAttribute at[3];
    CUlaunchConfig cfg;
};

static void prepare(struct prepared *p, unsigned id, int api, int k, int via, int attrs) {
    unsigned char pad = via == EXTRA ? EXTRA_PAD : 0;
    p->id = id;
    p->api = api;
    p->k = k;
    p->via = via;
    fill_args(&p->a, k, id, pad);
    p->buf = assemble(&p->a, pad);
    p->size = K[k].size;
    p->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    p->extra[1] = p->buf;
    p->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    p->extra[3] = &p->size;
    p->extra[4] = CU_LAUNCH_PARAM_END;
    p->cfg = (CUlaunchConfig){id, 1, 1, 64, 1, 1, 256, ex_stream, p->at, fill_attrs(p->at, attrs)};
}

static void fire(struct prepared *p, CUfunction f) {
    void **params = p->via == LAYOUT ? p->a.ptrs : 0;
    void **ex = p->via == EXTRA ? p->extra : 0;
    unsigned id = p->id;
    switch (p->api) {
    case KL:
        OK(cuLaunchKernel(f, id, 1, 1, 32, 1, 1, 0, 0, params, ex));
        break;
    case KL_PTSZ:
        OK(cuLaunchKernel_ptsz(f, id, 1, 1, 32, 1, 1, 0, 0, params, ex));
        break;
    case EX:
        OK(cuLaunchKernelEx(&p->cfg, f, params, ex));
        break;
    case EX_PTSZ:
        OK(cuLaunchKernelEx_ptsz(&p->cfg, f, params, ex));
        break;
    case COOP:
        EXPECT(p->via != EXTRA);
        OK(cuLaunchCooperativeKernel(f, id, 1, 1, 32, 1, 1, 0, 0, params));
        break;
    }
}

/* Prints what the kernel received and frees the launch. */
static void finish(struct prepared *p) {
    char head[160];
    snprintf(head, sizeof head, "launch %u %s %s %s", p->id, API_NAME[p->api], K[p->k].name,
             p->via == EXTRA ? "extra" : "layout");
    print_hex_line(head, p->buf, p->size);
    free(p->buf);
    free_args(&p->a);
}

static void launch(unsigned id, int api, CUfunction f, int k, int via, int attrs) {
    struct prepared p;
    prepare(&p, id, api, k, via, attrs);
    fire(&p, f);
    finish(&p);
}

/* ======================================================================== */
/* lookups, each followed at once by a launch (arguments built beforehand)  */
/* ======================================================================== */

struct lookup {
    const char *api;
    void *owner;
    const char *name;
    void *handle;
};

static void print_lookup(const struct lookup *l) {
    say("lookup %s %#lx %s %#lx\n", l->api, (unsigned long)(uintptr_t)l->owner, l->name ? l->name : "-",
        (unsigned long)(uintptr_t)l->handle);
}

/* cuLibraryGetKernel, then at once launch `id` through the kernel handle. */
static CUkernel kernel_then_launch(CUlibrary lib, int k, unsigned id, int api, int via, int attrs) {
    struct prepared p;
    prepare(&p, id, api, k, via, attrs);
    CUkernel h = 0;
    OK(cuLibraryGetKernel(&h, lib, K[k].name));
    fire(&p, (CUfunction)h);
    finish(&p);
    print_lookup(&(struct lookup){"cuLibraryGetKernel", lib, K[k].name, h});
    return h;
}

/* cuLibraryGetKernel + cuKernelGetFunction, then at once launch `id` through the function. */
static CUfunction kfunc_then_launch(CUlibrary lib, int k, unsigned id, int api, int via, int attrs) {
    struct prepared p;
    prepare(&p, id, api, k, via, attrs);
    CUkernel h = 0;
    CUfunction f = 0;
    OK(cuLibraryGetKernel(&h, lib, K[k].name));
    OK(cuKernelGetFunction(&f, h));
    fire(&p, f);
    finish(&p);
    print_lookup(&(struct lookup){"cuLibraryGetKernel", lib, K[k].name, h});
    print_lookup(&(struct lookup){"cuKernelGetFunction", h, 0, f});
    return f;
}

/* cuModuleGetFunction, then at once launch `id`. */
static CUfunction func_then_launch(CUmodule mod, int k, unsigned id, int api, int via, int attrs) {
    struct prepared p;
    prepare(&p, id, api, k, via, attrs);
    CUfunction f = 0;
    OK(cuModuleGetFunction(&f, mod, K[k].name));
    fire(&p, f);
    finish(&p);
    print_lookup(&(struct lookup){"cuModuleGetFunction", mod, K[k].name, f});
    return f;
}

/* ======================================================================== */
/* fixtures                                                                 */
/* ======================================================================== */

static const char *fixture_dir;

static char *fixture_path(const char *name) {
    char *p = 0;
    if (asprintf(&p, "%s/%s", fixture_dir, name) < 0) {
        perror("replayable: asprintf");
        exit(1);
    }
    return p;
}

/* The file's bytes in a fresh buffer, followed by JUNK bytes of `junk` (a NUL first if `nul`). */
static unsigned char *read_fixture(const char *name, size_t *len, unsigned char junk, int nul) {
    char *path = fixture_path(name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replayable: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = xmalloc((size_t)n + JUNK);
    if (n <= 0 || fread(b, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "replayable: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    free(path);
    memset(b + n, junk, JUNK);
    if (nul)
        b[n] = 0;
    *len = (size_t)n;
    return b;
}

/* ======================================================================== */
/* copies                                                                   */
/* ======================================================================== */

/* Host buffers: byte i of pattern 1, 2, 3 (tests/common/replayable.rs: pattern()). */
static unsigned char pattern(int which, size_t i) {
    switch (which) {
    case 1:
        return (unsigned char)(i * 31 + 7);
    case 2:
        return (unsigned char)(((uint32_t)i * 2654435761u) >> 13);
    default:
        return (unsigned char)(0xa0 ^ i ^ (i >> 8));
    }
}

static unsigned char *pattern_buf(int which, size_t n) {
    unsigned char *b = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        b[i] = pattern(which, i);
    return b;
}

static void copies(void) {
    CUdeviceptr d0 = 0, d1 = 0, d2 = 0;
    OK(cuMemAlloc_v2(&d0, 4096));
    OK(cuMemAlloc_v2(&d1, 1 << 20));
    OK(cuMemAlloc_v2(&d2, 4096));
    CUstream s = 0;
    OK(cuStreamCreate(&s, 0));
    unsigned char *small = pattern_buf(1, 100);
    unsigned char *small2 = pattern_buf(1, 100);
    unsigned char *big = pattern_buf(2, 1 << 20);
    unsigned char *mid = pattern_buf(3, 4096);
    unsigned char back[356];

    /* 1: 100 bytes, then overwritten: the recorder keeps what was there at entry. */
    OK(cuMemcpyHtoD_v2(d0, small, 100));
    memset(small, 0xff, 100);
    say("copy cuMemcpyHtoD_v2 100\n");
    /* 2: 1 MiB. */
    OK(cuMemcpyHtoD_v2(d1, big, 1 << 20));
    say("copy cuMemcpyHtoD_v2 %d\n", 1 << 20);
    /* 3: the bytes of 1 again, from another buffer: the same data file. */
    OK(cuMemcpyHtoDAsync_v2(d0, small2, 100, s));
    say("copy cuMemcpyHtoDAsync_v2 100\n");
    /* 4: the 1 MiB buffer again. */
    OK(cuMemcpyHtoDAsync_v2(d1, big, 1 << 20, s));
    say("copy cuMemcpyHtoDAsync_v2 %d\n", 1 << 20);
    /* 5: 4 KiB, then overwritten. */
    OK(cuMemcpyHtoD_v2(d2, mid, 4096));
    memset(mid, 0, 4096);
    say("copy cuMemcpyHtoD_v2 4096\n");
    /* A synchronization with no device-to-host bytes to read: it does not
     * stop the thread. */
    OK(cuStreamSynchronize(s));
    /* 6: device to host (--capture-data reads `back` at the return). */
    OK(cuMemcpyDtoH_v2(back, d0, 100));
    say("copy cuMemcpyDtoH_v2 100\n");
    /* 7: asynchronous device to host: read at the synchronization, then
     * overwritten (what was stored is what the copy wrote). */
    OK(cuMemcpyDtoHAsync_v2(back + 100, d1 + 64, 256, s));
    say("copy cuMemcpyDtoHAsync_v2 256\n");
    OK(cuStreamSynchronize(s));
    memset(back, 0x5a, 356);
    /* Nothing left to read: no stop. */
    OK(cuCtxSynchronize());
    free(small);
    free(small2);
    free(big);
    free(mid);
}

/* ======================================================================== */
/* two threads launching at once                                            */
/* ======================================================================== */

static pthread_barrier_t start_line;

struct shared {
    CUlibrary lib2;     /* cuLibraryLoadFromFile */
    CUkernel a_scalars; /* library A */
    CUkernel a_struct;
    CUfunction m1_struct; /* cuModuleLoad */
    CUfunction cx_tmpl_d; /* cuModuleLoadDataEx */
};

struct worker {
    int t;
    const struct shared *sh;
};

/*
 * Thread t: first looks up its own kernel in lib2 and launches it at once
 * (ID 1000 * (t + 1)), then launches IDs 1000 * (t + 1) + i, i = 1..40,
 * through the handle i % 5 selects. Keep in step with replayable.rs (plan()).
 */
static void *worker(void *p) {
    const struct worker *w = p;
    const struct shared *sh = w->sh;
    unsigned base = 1000 * (unsigned)(w->t + 1);
    int own_k = w->t == 0 ? K_STRUCT : K_BIG;
    pthread_barrier_wait(&start_line);
    CUkernel own = kernel_then_launch(sh->lib2, own_k, base, KL, LAYOUT, A_NONE);
    for (unsigned i = 1; i <= 40; i++) {
        unsigned id = base + i;
        switch (i % 5) {
        case 0:
            launch(id, KL, (CUfunction)sh->a_scalars, K_SCALARS, LAYOUT, A_NONE);
            break;
        case 1:
            launch(id, KL, sh->m1_struct, K_STRUCT, LAYOUT, A_NONE);
            break;
        case 2:
            launch(id, EX, sh->cx_tmpl_d, K_TMPL_D, LAYOUT, A_COOP);
            break;
        case 3:
            launch(id, KL, (CUfunction)sh->a_struct, K_STRUCT, EXTRA, A_NONE);
            break;
        case 4:
            launch(id, KL, (CUfunction)own, own_k, LAYOUT, A_NONE);
            break;
        }
    }
    return 0;
}

/* ======================================================================== */
/* main                                                                     */
/* ======================================================================== */

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: replayable FIXTURE_DIR\n");
        return 2;
    }
    fixture_dir = argv[1];
    setvbuf(stdout, 0, _IOLBF, 0);
    OK(cuInit(0));
    CUdevice dev = 0;
    OK(cuDeviceGet(&dev, 0));
    CUcontext ctx = 0;
    OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    OK(cuCtxSetCurrent(ctx));
    OK(cuStreamCreate(&ex_stream, 0x1));
    size_t n = 0;

    /* ---- A: kernels.no-compress.fatbin, cuLibraryLoadData twice (two buffers, other junk) */
    unsigned char *a1 = read_fixture("kernels.no-compress.fatbin", &n, 0xcc, 0);
    unsigned char *a2 = read_fixture("kernels.no-compress.fatbin", &n, 0x33, 0);
    CUlibrary lib_a = 0, lib_a2 = 0;
    OK(cuLibraryLoadData(&lib_a, a1, 0, 0, 0, 0, 0, 0));
    say("load cuLibraryLoadData kernels.no-compress.fatbin %zu\n", n);
    OK(cuLibraryLoadData(&lib_a2, a2, 0, 0, 0, 0, 0, 0));
    say("load cuLibraryLoadData kernels.no-compress.fatbin %zu\n", n);
    EXPECT(lib_a == lib_a2); /* the fake's handles: 0x50001 */
    struct shared sh = {0};
    sh.a_scalars = kernel_then_launch(lib_a, K_SCALARS, 1, KL, LAYOUT, A_NONE);
    sh.a_struct = kernel_then_launch(lib_a, K_STRUCT, 2, KL, LAYOUT, A_NONE);
    CUfunction a_vec = kfunc_then_launch(lib_a, K_VEC, 3, KL, LAYOUT, A_NONE);
    CUkernel a_big = kernel_then_launch(lib_a, K_BIG, 4, EX, LAYOUT, A_CLUSTER_PRIO);
    CUkernel a_huge = kernel_then_launch(lib_a, K_HUGE, 5, KL, LAYOUT, A_NONE);
    kernel_then_launch(lib_a, K_GRIDCONST, 6, COOP, LAYOUT, A_NONE);
    kernel_then_launch(lib_a, K_NOPARAMS, 7, KL, LAYOUT_NULL, A_NONE);
    kernel_then_launch(lib_a, K_POINTERS, 8, KL_PTSZ, LAYOUT, A_NONE);
    kernel_then_launch(lib_a, K_CPP, 9, KL, LAYOUT, A_NONE);
    kernel_then_launch(lib_a, K_TMPL_D, 10, EX_PTSZ, LAYOUT, A_COOP);
    kfunc_then_launch(lib_a, K_TMPL_F, 11, KL, LAYOUT, A_NONE);
    (void)a_big;

    /* ---- B: kernels.compress-all.fatbin from its file (cuModuleLoad, cuLibraryLoadFromFile)
     * and through a wrapper (cuModuleLoadFatBinary) */
    char *b_path = fixture_path("kernels.compress-all.fatbin");
    CUmodule m1 = 0;
    OK(cuModuleLoad(&m1, b_path));
    say("load cuModuleLoad kernels.compress-all.fatbin 7368\n");
    sh.m1_struct = func_then_launch(m1, K_STRUCT, 12, KL, EXTRA, A_NONE);
    func_then_launch(m1, K_SCALARS, 13, EX, EXTRA, A_NONE);
    func_then_launch(m1, K_HUGE, 14, KL, EXTRA, A_NONE);

    CUlibrary lib2 = 0;
    OK(cuLibraryLoadFromFile(&lib2, b_path, 0, 0, 0, 0, 0, 0));
    say("load cuLibraryLoadFromFile kernels.compress-all.fatbin 7368\n");
    sh.lib2 = lib2;
    CUkernel l2_vec = kernel_then_launch(lib2, K_VEC, 15, KL, LAYOUT, A_NONE);
    CUmodule l2_mod = 0;
    OK(cuLibraryGetModule(&l2_mod, lib2));
    print_lookup(&(struct lookup){"cuLibraryGetModule", lib2, 0, l2_mod});
    CUfunction l2m_gridconst = func_then_launch(l2_mod, K_GRIDCONST, 16, KL, LAYOUT, A_NONE);
    func_then_launch(l2_mod, K_POINTERS, 17, EX, LAYOUT, A_ALL);

    size_t bn = 0;
    unsigned char *b_container = read_fixture("kernels.compress-all.fatbin", &bn, 0x77, 0);
    FatbinWrapper wrapper = {FATBIN_WRAPPER_MAGIC, 1, b_container, 0};
    CUmodule fb = 0;
    OK(cuModuleLoadFatBinary(&fb, &wrapper));
    say("load cuModuleLoadFatBinary kernels.compress-all.fatbin %zu\n", bn);
    CUfunction fb_big = func_then_launch(fb, K_BIG, 18, KL, LAYOUT, A_NONE);
    func_then_launch(fb, K_CPP, 19, KL, EXTRA, A_NONE);

    /* ---- C: kernels.sm_90.cubin, cuModuleLoadDataEx and cuModuleLoadData */
    unsigned char *c = read_fixture("kernels.sm_90.cubin", &n, 0x55, 0);
    CUmodule cx = 0;
    OK(cuModuleLoadDataEx(&cx, c, 0, 0, 0));
    say("load cuModuleLoadDataEx kernels.sm_90.cubin %zu\n", n);
    CUfunction cx_struct = func_then_launch(cx, K_STRUCT, 20, KL, LAYOUT, A_NONE);
    sh.cx_tmpl_d = func_then_launch(cx, K_TMPL_D, 21, KL, LAYOUT, A_NONE);
    CUmodule c2 = 0;
    OK(cuModuleLoadData(&c2, c));
    say("load cuModuleLoadData kernels.sm_90.cubin %zu\n", n);
    func_then_launch(c2, K_SCALARS, 22, KL, LAYOUT, A_NONE);
    func_then_launch(c2, K_HUGE, 23, EX, LAYOUT, A_NONE);

    /* ---- D: kernels.compute_80.ptx (NUL-terminated), cuModuleLoadData */
    unsigned char *ptx = read_fixture("kernels.compute_80.ptx", &n, 0x20, 1);
    CUmodule dm = 0;
    OK(cuModuleLoadData(&dm, ptx));
    say("load cuModuleLoadData kernels.compute_80.ptx %zu\n", n);
    func_then_launch(dm, K_STRUCT, 24, KL, LAYOUT, A_NONE);
    func_then_launch(dm, K_VEC, 25, KL, LAYOUT, A_NONE);
    func_then_launch(dm, K_NOPARAMS, 26, KL, LAYOUT, A_NONE);

    /* ---- E: kernels.mode-speed.fatbin, cuModuleLoadData, overwritten and freed as soon as it returns */
    unsigned char *e = read_fixture("kernels.mode-speed.fatbin", &n, 0x99, 0);
    CUmodule em = 0;
    OK(cuModuleLoadData(&em, e));
    memset(e, 0x5a, n + JUNK);
    free(e);
    say("load cuModuleLoadData kernels.mode-speed.fatbin %zu\n", n);
    func_then_launch(em, K_BIG, 27, KL, LAYOUT, A_NONE);
    func_then_launch(em, K_GRIDCONST, 28, KL, EXTRA, A_NONE);

    /* ---- host to device copies */
    copies();

    /* ---- the same handles again, later */
    launch(29, KL, (CUfunction)sh.a_scalars, K_SCALARS, LAYOUT, A_NONE);
    launch(30, KL, (CUfunction)sh.a_struct, K_STRUCT, EXTRA, A_NONE);
    launch(31, EX, a_vec, K_VEC, LAYOUT, A_CLUSTER_PRIO);
    launch(32, KL, sh.m1_struct, K_STRUCT, LAYOUT, A_NONE);
    launch(33, COOP, (CUfunction)l2_vec, K_VEC, LAYOUT, A_NONE);
    launch(34, KL, l2m_gridconst, K_GRIDCONST, LAYOUT, A_NONE);
    launch(35, EX, fb_big, K_BIG, EXTRA, A_ALL);
    launch(36, KL, cx_struct, K_STRUCT, LAYOUT, A_NONE);
    launch(37, KL_PTSZ, (CUfunction)a_huge, K_HUGE, LAYOUT, A_NONE);

    /* ---- two threads */
    pthread_barrier_init(&start_line, 0, 2);
    pthread_t th[2];
    struct worker w[2] = {{0, &sh}, {1, &sh}};
    for (int t = 0; t < 2; t++)
        if (pthread_create(&th[t], 0, worker, &w[t]) != 0) {
            perror("replayable: pthread_create");
            return 1;
        }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], 0);

    /* ---- a graph launch: its kernels' parameters are not seen (coverage.graph_launches) */
    CUgraphExec gexec = 0;
    OK(cuGraphInstantiateWithFlags(&gexec, H(0x90001), 0));
    OK(cuGraphLaunch(gexec, ex_stream));
    say("graph cuGraphLaunch\n");

    /* ---- a handle no lookup returned: no layout, params_error */
    {
        struct args a;
        fill_args(&a, K_SCALARS, 99, 0);
        OK(cuLaunchKernel(H(0xdead000), 99, 1, 1, 32, 1, 1, 0, 0, a.ptrs, 0));
        say("launch 99 cuLaunchKernel - - -\n");
        free_args(&a);
    }

    /* ---- images that cannot be captured: an unmapped address, a missing file */
    long page = sysconf(_SC_PAGESIZE);
    void *gone = mmap(0, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(gone != MAP_FAILED);
    munmap(gone, (size_t)page);
    CUmodule bad = 0;
    OK(cuModuleLoadData(&bad, gone));
    say("load cuModuleLoadData unmapped 0\n");
    OK(cuModuleLoad(&bad, "/nonexistent/tracer-replayable-test/missing.cubin"));
    say("load cuModuleLoad missing-file 0\n");

    free(a1);
    free(a2);
    free(b_path);
    free(b_container);
    free(c);
    free(ptx);
    if (failures) {
        fprintf(stderr, "replayable: %d failure(s)\n", failures);
        return 1;
    }
    return 0;
}
