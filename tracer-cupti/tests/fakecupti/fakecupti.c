/*
 * A stand-in for libcupti, for testing libtracer_cupti.so without a GPU.
 * It implements the CUPTI functions the injection library calls and produces
 * known activity records, laid out at CUPTI 13's offsets (records.rs):
 *
 *   cuptiActivityFlushAll   the first call (forced or not) requests one
 *                           buffer, writes 2 kernels (the second one a graph
 *                           node's: graphId 3, graphNodeId 0x200000005), 1 memcpy, 1 memset and
 *                           1 record of a kind we do not read, completes the
 *                           buffer (context 0x1, stream id 7); later calls
 *                           deliver nothing
 *                           (only if fakecupti_launch was never called)
 *   cuptiActivityEnable/Disable  turn kinds on and off (a bit mask)
 *   fakecupti_launch()      "launches a kernel": stamps the time and, if
 *                           CONCURRENT_KERNEL is on at that instant, keeps a
 *                           4.5 µs kernel record starting then (stream 7,
 *                           context 0x1) for the next flush; returns the
 *                           stamp. Stamping and the check happen under the
 *                           lock that enable/disable take, so "on at that
 *                           instant" is exact.
 *   cuptiActivityGetNumDroppedRecords   3 the first time, then 0
 *   fakecupti_delivered()   1 once the first flush's buffer has been
 *                           completed (the library's callback returned), else 0
 *   fakecupti_context_created(ctx), fakecupti_stream_created(ctx, stream)
 *                           fire the subscriber's resource callbacks
 *
 *   cuptiEnableDomain       the resource domain (3) and the driver-API domain (1);
 *                           with the latter on, fakecupti_launch fires the
 *                           subscriber's driver-API callbacks around itself
 *                           (site 0 before, site 1 after: a driver call's
 *                           entry and return), outside the lock
 *   cuptiFinalize           detaches: kinds off, callbacks and subscriber
 *                           forgotten, pending records dropped; counted
 *                           (fakecupti_finalizes()). A flush, dropped-records
 *                           query or disable while detached is counted as a
 *                           call that would have attached CUPTI again
 *                           (fakecupti_calls_while_detached()); records
 *                           delivered by a flush made at a launch's return
 *                           (inside its driver-API callback, on the program's
 *                           thread) are counted (fakecupti_records_at_returns())
 *   cuptiActivityEnableHWTrace  before fakecupti_init_finished: 15 (CUPTI_ERROR_NOT_INITIALIZED,
 *                           as CUPTI 13.0 answers inside cuInit); after it: refused with 27
 *                           (CUPTI_ERROR_NOT_SUPPORTED), as on Hopper, or taken (0) with
 *                           FAKECUPTI_HW_TRACE=1, as on Blackwell; calls counted
 *                           (fakecupti_hw_trace_calls())
 *   fakecupti_init_finished()  the driver has initialised: fires the subscriber's
 *                           CU_INIT_FINISHED resource callback (cbid 5)
 *
 * FAKECUPTI_NO_TS=1: refuse the timestamp callback; our clock is then
 * CLOCK_MONOTONIC + 1 s, so the library must measure and apply the offset.
 *
 * Build: cc -shared -fPIC -o libfakecupti.so fakecupti.c
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*req_fn)(uint8_t **, size_t *, size_t *);
typedef void (*done_fn)(void *, uint32_t, uint8_t *, size_t, size_t);
typedef uint64_t (*ts_fn)(void);
typedef void (*cb_fn)(void *, uint32_t, uint32_t, const void *);

static req_fn requested;
static done_fn completed;
static ts_fn stamp;
static cb_fn subscriber;
static int enabled_mask, ever_enabled, dropped_once, delivered, completed_once, launched;
static int driver_domain, detached, finalizes, calls_while_detached, records_at_returns;
static __thread int in_return; /* inside the driver-API callback at a launch's return */
static pthread_mutex_t mask_lock = PTHREAD_MUTEX_INITIALIZER;
#define MAX_PENDING 65536
static uint64_t pending[MAX_PENDING];
static size_t npending;

static uint64_t own_clock(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec + 1000000000u;
}
static uint64_t now(void) { return stamp ? stamp() : own_clock(); }

int cuptiGetVersion(uint32_t *v) { *v = 99; return 0; }
int cuptiGetResultString(int r, const char **s) {
    *s = r == 1 ? "CUPTI_ERROR_INVALID_PARAMETER" : r == 15 ? "CUPTI_ERROR_NOT_INITIALIZED" : r == 27 ? "CUPTI_ERROR_NOT_SUPPORTED" : "CUPTI_ERROR_UNKNOWN";
    return 0;
}
int cuptiActivityRegisterTimestampCallback(ts_fn f) {
    if (getenv("FAKECUPTI_NO_TS")) return 1;
    stamp = f;
    return 0;
}
int cuptiGetTimestamp(uint64_t *t) { *t = now(); return 0; }
int cuptiActivityRegisterCallbacks(req_fn r, done_fn d) {
    pthread_mutex_lock(&mask_lock);
    requested = r; completed = d; detached = 0;
    pthread_mutex_unlock(&mask_lock);
    return 0;
}
int cuptiFinalize(void) {
    pthread_mutex_lock(&mask_lock);
    enabled_mask = 0; requested = 0; completed = 0; subscriber = 0; driver_domain = 0;
    npending = 0; detached = 1; finalizes++;
    pthread_mutex_unlock(&mask_lock);
    return 0;
}
static int init_finished, hw_trace_calls;
int cuptiActivityEnableHWTrace(uint8_t enable) {
    (void)enable;
    __atomic_add_fetch(&hw_trace_calls, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&init_finished, __ATOMIC_SEQ_CST)) return 15;
    return getenv("FAKECUPTI_HW_TRACE") ? 0 : 27;
}
int fakecupti_hw_trace_calls(void) { return __atomic_load_n(&hw_trace_calls, __ATOMIC_SEQ_CST); }
int fakecupti_finalizes(void) { return __atomic_load_n(&finalizes, __ATOMIC_SEQ_CST); }
int fakecupti_records_at_returns(void) { return __atomic_load_n(&records_at_returns, __ATOMIC_SEQ_CST); }
int fakecupti_calls_while_detached(void) { return __atomic_load_n(&calls_while_detached, __ATOMIC_SEQ_CST); }
static void note_call(void) {
    if (__atomic_load_n(&detached, __ATOMIC_SEQ_CST)) __atomic_add_fetch(&calls_while_detached, 1, __ATOMIC_SEQ_CST);
}
int cuptiActivityEnable(uint32_t kind) {
    pthread_mutex_lock(&mask_lock);
    enabled_mask |= 1 << kind;
    ever_enabled |= 1 << kind;
    pthread_mutex_unlock(&mask_lock);
    return 0;
}
int cuptiActivityDisable(uint32_t kind) {
    note_call();
    pthread_mutex_lock(&mask_lock);
    enabled_mask &= ~(1 << kind);
    pthread_mutex_unlock(&mask_lock);
    return 0;
}
struct callback_data { uint32_t site; const char *function_name; };
static void driver_callback(uint32_t site) {
    cb_fn f = __atomic_load_n(&subscriber, __ATOMIC_SEQ_CST);
    struct callback_data d = { site, "cuLaunchKernel" };
    in_return = site == 1;
    if (f && __atomic_load_n(&driver_domain, __ATOMIC_SEQ_CST)) f(0, 1, 307, &d);
    in_return = 0;
}
uint64_t fakecupti_launch(void) {
    driver_callback(0);
    pthread_mutex_lock(&mask_lock);
    uint64_t t = now();
    launched = 1;
    if ((enabled_mask & (1 << 10)) && npending < MAX_PENDING) pending[npending++] = t;
    pthread_mutex_unlock(&mask_lock);
    driver_callback(1);
    return t;
}
int cuptiSubscribe(void **h, cb_fn f, void *u) { (void)u; subscriber = f; *h = (void *)0x5b; return 0; }
int cuptiEnableDomain(uint32_t en, void *h, uint32_t domain) {
    if (en != 1 || h != (void *)0x5b || (domain != 3 && domain != 1)) return 1;
    if (domain == 1) __atomic_store_n(&driver_domain, 1, __ATOMIC_SEQ_CST);
    return 0;
}
int cuptiGetContextId(void *ctx, uint32_t *id) { *id = (uint32_t)(uintptr_t)ctx; return 0; }
int cuptiGetStreamIdEx(void *ctx, void *stream, uint8_t per_thread, uint32_t *id) {
    (void)ctx; (void)per_thread;
    *id = stream ? 13 : 7;
    return 0;
}

struct resource_data { void *context; void *stream; void *descriptor; };
void fakecupti_context_created(void *ctx) {
    struct resource_data d = { ctx, 0, 0 };
    if (subscriber) subscriber(0, 3, 1, &d);
}
void fakecupti_init_finished(void) {
    struct resource_data d = { 0, 0, 0 };
    __atomic_store_n(&init_finished, 1, __ATOMIC_SEQ_CST);
    if (subscriber) subscriber(0, 3, 5, &d);
}
void fakecupti_stream_created(void *ctx, void *stream) {
    struct resource_data d = { ctx, stream, 0 };
    if (subscriber) subscriber(0, 3, 3, &d);
}

static size_t record_size(uint32_t kind) { return kind == 10 ? 200 : kind == 25 ? 32 : 64; }

int cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, uint8_t **rec) {
    uint8_t *next = *rec ? *rec + record_size(*(uint32_t *)*rec) : buf;
    if (next >= buf + valid) return 12; /* CUPTI_ERROR_MAX_LIMIT_REACHED */
    *rec = next;
    return 0;
}
int cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *n) {
    (void)ctx; (void)stream;
    note_call();
    *n = dropped_once++ ? 0 : 3;
    return 0;
}

#define PUT(p, off, type, v) do { type v_ = (v); memcpy((p) + (off), &v_, sizeof v_); } while (0)
static const char kernel_name[] = "_Z3fooPf";

/* graph, node: CUpti_ActivityKernel10's graphId and graphNodeId (0 outside graphs). */
static uint8_t *kernel(uint8_t *p, uint32_t stream, uint32_t corr, uint64_t start, uint32_t graph, uint64_t node) {
    memset(p, 0xAB, 200);
    PUT(p, 0, uint32_t, 10);
    PUT(p, 16, uint64_t, start);
    PUT(p, 24, uint64_t, start + 4500);
    PUT(p, 40, uint32_t, 0);
    PUT(p, 44, uint32_t, 1);
    PUT(p, 48, uint32_t, stream);
    PUT(p, 52, int32_t, 2); PUT(p, 56, int32_t, 3); PUT(p, 60, int32_t, 4);
    PUT(p, 64, int32_t, 128); PUT(p, 68, int32_t, 1); PUT(p, 72, int32_t, 1);
    PUT(p, 80, int32_t, 256);
    PUT(p, 92, uint32_t, corr);
    PUT(p, 104, const char *, kernel_name);
    PUT(p, 144, uint64_t, node);
    PUT(p, 156, uint32_t, graph);
    return p + 200;
}

/* The kernels fakecupti_launch kept, in one buffer. */
static int flush_launches(void) {
    pthread_mutex_lock(&mask_lock);
    size_t n = npending;
    uint64_t *starts = malloc(n * sizeof *starts + 1);
    memcpy(starts, pending, n * sizeof *starts);
    npending = 0;
    pthread_mutex_unlock(&mask_lock);
    if (n == 0) { free(starts); return 0; }
    if (in_return) __atomic_add_fetch(&records_at_returns, (int)n, __ATOMIC_SEQ_CST);
    uint8_t *buf; size_t size, max;
    requested(&buf, &size, &max);
    if (!buf || size < n * 200) { free(starts); return 1; }
    uint8_t *p = buf;
    for (size_t i = 0; i < n; i++) p = kernel(p, 7, (uint32_t)i, starts[i], 0, 0);
    free(starts);
    completed((void *)0x1, 7, buf, size, (size_t)(p - buf));
    return 0;
}

int cuptiActivityFlushAll(uint32_t flag) {
    (void)flag;
    note_call();
    if (!requested || !completed || !(ever_enabled & (1 << 10))) return 1;
    if (__atomic_load_n(&launched, __ATOMIC_SEQ_CST)) return flush_launches();
    if (__atomic_exchange_n(&delivered, 1, __ATOMIC_SEQ_CST)) return 0;
    uint8_t *buf; size_t size, max;
    requested(&buf, &size, &max);
    if (!buf || size < 1024) return 1;
    uint64_t t = now();
    uint8_t *p = buf;
    p = kernel(p, 13, 41, t, 0, 0);
    p = kernel(p, 7, 42, t + 10000, 3, 0x200000005ULL); /* a graph's kernel node */
    memset(p, 0xCD, 64); /* memcpy HtoD, 1 MiB */
    PUT(p, 0, uint32_t, 1);
    p[4] = 1; p[5] = 1; p[6] = 3; p[7] = 0;
    PUT(p, 8, uint64_t, 1 << 20);
    PUT(p, 16, uint64_t, t + 20000); PUT(p, 24, uint64_t, t + 22250);
    PUT(p, 32, uint32_t, 0); PUT(p, 36, uint32_t, 1); PUT(p, 40, uint32_t, 7); PUT(p, 44, uint32_t, 43);
    p += 64;
    memset(p, 0xEF, 64); /* memset 64 bytes */
    PUT(p, 0, uint32_t, 2);
    PUT(p, 4, uint32_t, 0);
    PUT(p, 8, uint64_t, 64);
    PUT(p, 16, uint64_t, t + 30000); PUT(p, 24, uint64_t, t + 30001);
    PUT(p, 32, uint32_t, 0); PUT(p, 36, uint32_t, 1); PUT(p, 40, uint32_t, 7); PUT(p, 44, uint32_t, 44);
    PUT(p, 50, uint16_t, 3);
    p += 64;
    memset(p, 0, 32); /* a kind the library does not read */
    PUT(p, 0, uint32_t, 25);
    p += 32;
    completed((void *)0x1, 7, buf, size, (size_t)(p - buf));
    __atomic_store_n(&completed_once, 1, __ATOMIC_SEQ_CST);
    return 0;
}

int fakecupti_delivered(void) { return __atomic_load_n(&completed_once, __ATOMIC_SEQ_CST); }
