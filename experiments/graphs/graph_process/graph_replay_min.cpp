// The smallest replay of a captured graph: the launches graph_spec.py lists
// (recorded kernels from their recorded images, recorded parameter bytes,
// the recorded device allocations, at their recorded addresses where those
// are free, else elsewhere with the pointers in the parameters moved),
// captured into a graph through the driver API alone and launched 50 times
// back to back, each launch timed with CUDA events (and its cuGraphLaunch
// call on the CPU). Tells whether a rebuilt graph's extra time comes with
// the kernels as a driver-only process loads them, or with something else
// in replay's process.
// usage: graph_replay_min SPEC library|module [preserved]
// With MIN_STREAMS=1 it also creates every stream the program created
// (flags, priority); MIN_OTHER_IMAGES=1 loads the images the graph does not
// use; MIN_PINNED=BYTES allocates that much page-locked host memory: the
// setup replay does beyond the graph, one part at a time. MIN_WARM,
// MIN_WARM_REPEAT, MIN_DESTROY_CAP and MIN_ROUNDS (below) choose the
// launches run outside the graph before the timed ones, as replay's pass
// runs the program's warm-up. MIN_SEQUENCE=1 instead runs the program's own
// work outside its capture in recorded order (the spec's `seq` lines:
// launches, event records and waits, synchronizations, the graph's launches,
// on the recorded streams and events), MIN_SEQ_PASSES times (3), the graph
// launches timed; MIN_SEQ_SKIP=KIND,… leaves classes out (launch, record,
// wait, sync, or launch@STREAM-HANDLE): replay's pass, without replay.
// MIN_MALLOC=1 takes the allocations from cuMemAlloc.
// MIN_SEQ_TIMING, MIN_SEQ_DEFAULT_STREAMS, MIN_SEQ_LAZY, MIN_SEQ_REBUILD,
// MIN_SEQ_CAPTURE, MIN_SEQ_LAUNCH_STREAM and MIN_SEQ_PACE_US (below) vary it one part at a time.
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <fstream>
#include <sstream>
#include <algorithm>
#include <chrono>
#include <map>
#define CK(x) do { CUresult ck_ = (x); if (ck_) { const char *s_; cuGetErrorName(ck_, &s_); printf("%s: %s\n", #x, s_); exit(1); } } while (0)
struct Launch { int k; unsigned g[3], b[3], shm; std::vector<unsigned char> p; };
static std::vector<unsigned char> unhex(const std::string &h) {
    std::vector<unsigned char> v(h.size() / 2);
    for (size_t i = 0; i < v.size(); i++) v[i] = (unsigned char)strtoul(h.substr(2 * i, 2).c_str(), 0, 16);
    return v;
}
int main(int argc, char **argv) {
    bool library = !strcmp(argv[2], "library");
    bool preserved = argc > 3 && !strcmp(argv[3], "preserved");
    CK(cuInit(0));
    CUdevice dev; CK(cuDeviceGet(&dev, 0));
    CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    std::ifstream in(argv[1]);
    std::string line;
    std::vector<std::vector<char>> images;
    std::vector<CUlibrary> libs; std::vector<CUmodule> mods;
    std::vector<CUfunction> funcs;
    std::vector<Launch> launches, before;
    size_t gran = 2 << 20;
    bool want_streams = getenv("MIN_STREAMS") && atoi(getenv("MIN_STREAMS"));
    bool want_other = getenv("MIN_OTHER_IMAGES") && atoi(getenv("MIN_OTHER_IMAGES"));
    size_t pinned = getenv("MIN_PINNED") ? strtoull(getenv("MIN_PINNED"), 0, 0) : 0;
    int n_streams = 0, n_other = 0;
    std::vector<CUstream> created;
    std::vector<std::vector<char>> other;
    if (pinned) { void *h; CK(cuMemAllocHost(&h, pinned)); memset(h, 0, pinned); }
    int mapped = 0, moved = 0;
    struct Window { CUdeviceptr want, got; size_t size; };
    std::vector<Window> windows;
    // pointers into a window not at its recorded address: moved with it
    auto relocate = [&](std::vector<unsigned char> &p) {
        for (size_t o = 0; o + 8 <= p.size(); o += 8) {
            CUdeviceptr v; memcpy(&v, &p[o], 8);
            for (auto &w : windows)
                if (v >= w.want && v < w.want + w.size) { v = w.got + (v - w.want); memcpy(&p[o], &v, 8); break; }
        }
    };
    struct Seq { std::string kind, a, b; Launch l; };
    struct Named { std::string h; unsigned flags; int prio; };
    std::vector<Seq> seq;
    std::vector<Named> seq_streams, seq_events;
    while (std::getline(in, line)) {
        std::istringstream ss(line);
        std::string what; ss >> what;
        if (what == "image") {
            int id; std::string path; ss >> id >> path;
            std::ifstream f(path, std::ios::binary);
            images.emplace_back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            images.back().push_back(0);  // PTX needs its NUL; harmless after a fatbin or cubin
            if (library) {
                CUlibrary l;
                CUlibraryOption o[] = {CU_LIBRARY_BINARY_IS_PRESERVED};
                void *ov[] = {(void *)1};
                CK(cuLibraryLoadData(&l, images.back().data(), 0, 0, 0, preserved ? o : 0, preserved ? ov : 0, preserved ? 1 : 0));
                libs.push_back(l);
            } else {
                CUmodule m; CK(cuModuleLoadData(&m, images.back().data())); mods.push_back(m);
            }
        } else if (what == "other_image" && want_other) {
            std::string path; ss >> path;
            std::ifstream f(path, std::ios::binary);
            other.emplace_back((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            other.back().push_back(0);
            CUlibrary l;
            if (cuLibraryLoadData(&l, other.back().data(), 0, 0, 0, 0, 0, 0) == CUDA_SUCCESS) n_other++;
        } else if (what == "stream" && want_streams) {
            unsigned flags; int prio; ss >> flags >> prio;
            CUstream st; CK(cuStreamCreateWithPriority(&st, flags, prio)); n_streams++; created.push_back(st);
        } else if (what == "kernel") {
            int id, img; std::string name; ss >> id >> img >> name;
            CUfunction f;
            if (library) { CUkernel k; CK(cuLibraryGetKernel(&k, libs[img], name.c_str())); f = (CUfunction)k; }
            else CK(cuModuleGetFunction(&f, mods[img], name.c_str()));
            funcs.push_back(f);
        } else if (what == "alloc") {
            std::string a; size_t size; ss >> a >> size;
            CUdeviceptr want = strtoull(a.c_str(), 0, 16), got = 0;
            size_t sz = (size + gran - 1) / gran * gran;
            // MIN_MALLOC=1: the allocations from cuMemAlloc, as the program's allocator made them
            // (where the driver places them, the pointers into them moved)
            if (getenv("MIN_MALLOC") && atoi(getenv("MIN_MALLOC"))) {
                CK(cuMemAlloc(&got, sz));
                moved++;
                windows.push_back({want, got, sz});
                CK(cuMemsetD8(got, 0, sz));
                continue;
            }
            CK(cuMemAddressReserve(&got, sz, 0, want, 0));
            if (got != want) moved++; else mapped++;
            windows.push_back({want, got, sz});
            CUmemAllocationProp prop = {};
            prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
            prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            prop.location.id = 0;
            CUmemGenericAllocationHandle h; CK(cuMemCreate(&h, sz, &prop, 0));
            CK(cuMemMap(got, sz, 0, h, 0));
            CUmemAccessDesc acc = {}; acc.location = prop.location; acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            CK(cuMemSetAccess(got, sz, &acc, 1));
            CK(cuMemsetD8(got, 0, sz));
        } else if (what == "seqstream") {
            std::string h; unsigned flags; int prio; ss >> h >> flags >> prio;
            seq_streams.push_back({h, flags, prio});
        } else if (what == "seqevent") {
            std::string h; unsigned flags; ss >> h >> flags;
            seq_events.push_back({h, flags});
        } else if (what == "seq") {
            Seq q; ss >> q.kind;
            if (q.kind == "launch") {
                std::string hex;
                ss >> q.l.k >> q.l.g[0] >> q.l.g[1] >> q.l.g[2] >> q.l.b[0] >> q.l.b[1] >> q.l.b[2] >> q.l.shm >> hex >> q.a;
                q.l.p = unhex(hex);
                relocate(q.l.p);
            } else {
                ss >> q.a >> q.b;
            }
            seq.push_back(q);
        } else if (what == "launch" || what == "before") {
            Launch l; std::string hex;
            ss >> l.k >> l.g[0] >> l.g[1] >> l.g[2] >> l.b[0] >> l.b[1] >> l.b[2] >> l.shm >> hex;
            l.p = unhex(hex);
            relocate(l.p);
            (what == "launch" ? launches : before).push_back(l);
        }
    }
    CUstream cap; CK(cuStreamCreate(&cap, CU_STREAM_NON_BLOCKING));
    // MIN_WARM: where the launches run before the timed graph launches, as the
    // program's warm-up ran them: "cap" (default: the capture stream, before
    // the capture), "side" (another created stream, the legacy stream waiting
    // for it through an event, after the graph is built, as replay's pass
    // runs them), "legacy" (the legacy default stream, after the build).
    // MIN_WARM_REPEAT: how many times.
    const char *warm = getenv("MIN_WARM") ? getenv("MIN_WARM") : "cap";
    int repeat = getenv("MIN_WARM_REPEAT") ? atoi(getenv("MIN_WARM_REPEAT")) : 1;
    // "recorded...": the warm-up runs the launches the program made before its capture, as recorded
    bool as_recorded = strstr(warm, "recorded") != 0;
    auto run_all = [&](CUstream on) {
        for (auto &l : as_recorded && on != cap ? before : launches) {
            size_t sz = l.p.size();
            void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, l.p.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END};
            CK(cuLaunchKernel(funcs[l.k], l.g[0], l.g[1], l.g[2], l.b[0], l.b[1], l.b[2], l.shm, on, 0, extra));
        }
    };
    bool sequence = getenv("MIN_SEQUENCE") && atoi(getenv("MIN_SEQUENCE"));
    if (!strcmp(warm, "cap") && !sequence) {
        for (int r = 0; r < repeat; r++) run_all(cap);
        CK(cuStreamSynchronize(cap));
    }
    // MIN_SEQ_CAPTURE=late (with MIN_SEQUENCE): the graph captured where the program captured
    // it, in the first pass, on the stream it captured on, not before the sequence
    bool late = sequence && getenv("MIN_SEQ_CAPTURE") && !strcmp(getenv("MIN_SEQ_CAPTURE"), "late");
    CUgraph g_ = 0; CUgraphExec ge = 0;
    auto build = [&](CUstream on) {
        CK(cuStreamBeginCapture(on, CU_STREAM_CAPTURE_MODE_RELAXED));
        run_all(on);
        CK(cuStreamEndCapture(on, &g_));
        CK(cuGraphInstantiateWithFlags(&ge, g_, 0x9));
    };
    if (!late) build(cap);
    // MIN_DESTROY_CAP=1: the capture stream destroyed once the graph is built, as replay does
    bool destroy = getenv("MIN_DESTROY_CAP") && atoi(getenv("MIN_DESTROY_CAP"));
    if (destroy) CK(cuStreamDestroy(cap));
    CUstream s = CU_STREAM_LEGACY;
    if (sequence) {
        std::map<std::string, CUstream> st;
        std::map<std::string, CUevent> evs;
        st["0x0"] = CU_STREAM_LEGACY;
        // MIN_SEQ_DEFAULT_STREAMS=1: the program's streams made as the other mode makes its side
        // stream (non-blocking, priority 0), not with their recorded flags and priorities
        bool default_streams = getenv("MIN_SEQ_DEFAULT_STREAMS") && atoi(getenv("MIN_SEQ_DEFAULT_STREAMS"));
        // MIN_SEQ_LAZY=1: each stream and event made where the program made it (in the first
        // pass), not all before the sequence
        bool lazy = getenv("MIN_SEQ_LAZY") && atoi(getenv("MIN_SEQ_LAZY"));
        std::map<std::string, Named> stream_of, event_of;
        for (auto &x : seq_streams) stream_of[x.h] = x;
        for (auto &x : seq_events) event_of[x.h] = x;
        for (auto &x : seq_streams) {
            if (lazy) break;
            CUstream h;
            if (default_streams) CK(cuStreamCreate(&h, CU_STREAM_NON_BLOCKING));
            else CK(cuStreamCreateWithPriority(&h, x.flags, x.prio));
            st[x.h] = h;
        }
        for (auto &x : seq_events) { if (lazy) break; CUevent h; CK(cuEventCreate(&h, x.flags)); evs[x.h] = h; }
        auto stream = [&](const std::string &h) {
            if (!st.count(h)) { CUstream n; CK(cuStreamCreate(&n, CU_STREAM_NON_BLOCKING)); st[h] = n; }
            return st[h];
        };
        auto event = [&](const std::string &h) {
            if (!evs.count(h)) { CUevent n; CK(cuEventCreate(&n, 0)); evs[h] = n; }
            return evs[h];
        };
        std::string skip = getenv("MIN_SEQ_SKIP") ? std::string(",") + getenv("MIN_SEQ_SKIP") + "," : "";
        auto skipped = [&](const Seq &q) {
            std::string k = q.kind.find("sync") != std::string::npos ? "sync" : q.kind;
            return skip.find("," + k + ",") != std::string::npos || (k == "launch" && skip.find(",launch@" + q.a + ",") != std::string::npos);
        };
        int passes = getenv("MIN_SEQ_PASSES") ? atoi(getenv("MIN_SEQ_PASSES")) : 3;
        // MIN_SEQ_TIMING=program: no timing events of our own; each graph launch timed, as the
        // program timed it, by the program's own event records around it on its stream (a record,
        // the launch, the next record on that stream, each event recorded once in the pass)
        bool program_timing = getenv("MIN_SEQ_TIMING") && !strcmp(getenv("MIN_SEQ_TIMING"), "program");
        {
            std::map<std::string, int> per;
            for (auto &q : seq) per[q.kind + (q.kind == "launch" || q.kind == "graph" || q.kind == "streamsync" ? "@" + q.a : "")]++;
            printf("sequence:");
            for (auto &x : per) printf(" %s=%d", x.first.c_str(), x.second);
            for (auto &x : seq_streams) printf(" (stream %s flags %u priority %d)", x.h.c_str(), x.flags, x.prio);
            printf("\n");
        }
        // MIN_SEQ_REBUILD: before each pass's first graph launch, "upload" (cuGraphUpload on its
        // stream), "instantiate" (a new executable graph from the captured one, the old destroyed),
        // "instantiate-once" (the same, in the first pass only)
        std::string rebuild = getenv("MIN_SEQ_REBUILD") ? getenv("MIN_SEQ_REBUILD") : "";
        // MIN_SEQ_LAUNCH_STREAM=HANDLE: every launch outside the graph on that one recorded stream
        std::string launch_stream = getenv("MIN_SEQ_LAUNCH_STREAM") ? getenv("MIN_SEQ_LAUNCH_STREAM") : "";
        double pace_us = getenv("MIN_SEQ_PACE_US") ? atof(getenv("MIN_SEQ_PACE_US")) : 0;
        int graphs = 0;
        for (auto &q : seq) graphs += q.kind == "graph";
        for (int pass = 1; pass <= passes; pass++) {
            std::vector<CUevent> ev(program_timing ? 0 : 2 * graphs);
            for (auto &e : ev) CK(cuEventCreate(&e, 0));
            std::vector<double> cpu;
            int g = 0;
            // program timing: per stream, the last record and the graph launches since it
            std::map<std::string, std::pair<std::string, int>> last_record;
            std::map<std::string, int> recorded;
            std::vector<std::pair<std::string, std::string>> pairs;
            auto last = std::chrono::steady_clock::now();
            for (auto &q : seq) {
                if (skipped(q)) continue;
                // MIN_SEQ_PACE_US: each launch outside the graph submitted no sooner than that
                // long after the previous op (a program's host time between its launches)
                if (pace_us > 0 && q.kind == "launch")
                    while (std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - last).count() < pace_us) {}
                last = std::chrono::steady_clock::now();
                if (q.kind == "launch") {
                    size_t sz = q.l.p.size();
                    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, q.l.p.data(), CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END};
                    CK(cuLaunchKernel(funcs[q.l.k], q.l.g[0], q.l.g[1], q.l.g[2], q.l.b[0], q.l.b[1], q.l.b[2], q.l.shm,
                                      stream(launch_stream.empty() ? q.a : launch_stream), 0, extra));
                } else if (q.kind == "streamcreate") {
                    if (lazy && !st.count(q.a) && stream_of.count(q.a)) {
                        CUstream h; CK(cuStreamCreateWithPriority(&h, stream_of[q.a].flags, stream_of[q.a].prio)); st[q.a] = h;
                    }
                } else if (q.kind == "eventcreate") {
                    if (lazy && !evs.count(q.a) && event_of.count(q.a)) {
                        CUevent h; CK(cuEventCreate(&h, event_of[q.a].flags)); evs[q.a] = h;
                    }
                } else if (q.kind == "capture") {
                    if (late && !ge) build(stream(q.a));
                } else if (q.kind == "record") {
                    CK(cuEventRecord(event(q.a), stream(q.b)));
                    recorded[q.a]++;
                    auto it = last_record.find(q.b);
                    if (it != last_record.end() && it->second.second == 1) pairs.push_back({it->second.first, q.a});
                    last_record[q.b] = {q.a, 0};
                } else if (q.kind == "wait") {
                    CK(cuStreamWaitEvent(stream(q.a), event(q.b), 0));
                } else if (q.kind == "ctxsync") {
                    CK(cuCtxSynchronize());
                } else if (q.kind == "streamsync") {
                    CK(cuStreamSynchronize(stream(q.a)));
                } else if (q.kind == "eventsync") {
                    CK(cuEventSynchronize(event(q.a)));
                } else if (q.kind == "graph") {
                    CUstream on = stream(q.a);
                    if (g == 0 && rebuild == "upload") CK(cuGraphUpload(ge, on));
                    if (g == 0 && (rebuild == "instantiate" || (rebuild == "instantiate-once" && pass == 1))) {
                        CK(cuGraphExecDestroy(ge));
                        CK(cuGraphInstantiateWithFlags(&ge, g_, 0x9));
                    }
                    if (!program_timing) CK(cuEventRecord(ev[2 * g], on));
                    auto c0 = std::chrono::steady_clock::now();
                    CK(cuGraphLaunch(ge, on));
                    cpu.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - c0).count());
                    if (!program_timing) CK(cuEventRecord(ev[2 * g + 1], on));
                    if (last_record.count(q.a)) last_record[q.a].second++;
                    g++;
                }
            }
            CK(cuCtxSynchronize());
            std::vector<float> t;
            if (program_timing) {
                for (auto &pr : pairs)
                    if (recorded[pr.first] == 1 && recorded[pr.second] == 1) {
                        float ms; CK(cuEventElapsedTime(&ms, evs[pr.first], evs[pr.second])); t.push_back(ms * 1e3f);
                    }
            } else {
                for (int i = 0; i < g; i++) { float ms; CK(cuEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1])); t.push_back(ms * 1e3f); }
            }
            std::sort(t.begin(), t.end());
            std::sort(cpu.begin(), cpu.end());
            if (!t.empty()) printf("minimal replay of the recorded sequence (%zu ops, skipped: %s%s%s%s%s%s%s%s%s%s), pass %d: %zu graph launches timed%s, median %.1f us (min %.1f); cuGraphLaunch on the CPU: median %.1f us\n",
                          seq.size(), skip.empty() ? "none" : skip.c_str(), program_timing ? "; timed by the program's events" : "",
                          default_streams ? "; streams non-blocking, priority 0" : "", rebuild.empty() ? "" : "; graph before the first launch: ",
                          rebuild.c_str(), late ? "; captured where the program captured it" : "",
                          launch_stream.empty() ? "" : "; every launch on ", launch_stream.c_str(),
                          lazy ? "; streams and events made where the program made them" : "",
                          pace_us > 0 ? ("; launches paced " + std::to_string((int)pace_us) + " us apart").c_str() : "", pass, t.size(), program_timing ? " by the program" : "", t[t.size() / 2], t[0], cpu[g / 2]);
        }
        return 0;
    }
    // MIN_ROUNDS: the warm-up and the timed graph launches that many times, one
    // after the other, as replay's passes repeat them (each round printed)
    int rounds = getenv("MIN_ROUNDS") ? atoi(getenv("MIN_ROUNDS")) : 1;
    CUstream side = 0;
    if (!strncmp(warm, "side", 4) || as_recorded) {
        // "sideblocking": a blocking stream (flags 0), with which the legacy stream synchronizes
        // "sidehigh": the greatest priority the device has
        int lo, hi; CK(cuCtxGetStreamPriorityRange(&lo, &hi));
        CK(cuStreamCreateWithPriority(&side, strcmp(warm, "sideblocking") ? CU_STREAM_NON_BLOCKING : 0,
                                      strcmp(warm, "sidehigh") ? 0 : hi));
        // "sidefirst": the first of the program's streams (MIN_STREAMS=1), as replay's pass uses it
        if (!strcmp(warm, "sidefirst") && !created.empty()) side = created[0];
    }
    for (int round = 1; round <= rounds; round++) {
        if (side) {
            CUevent e0, e1; CK(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING)); CK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
            CK(cuEventRecord(e0, s)); CK(cuStreamWaitEvent(side, e0, 0));
            for (int r = 0; r < repeat; r++) run_all(side);
            CK(cuEventRecord(e1, side)); CK(cuStreamWaitEvent(s, e1, 0));
            CK(cuCtxSynchronize());
        } else if (!strcmp(warm, "legacy") || (round > 1 && !strcmp(warm, "cap") && !destroy)) {
            for (int r = 0; r < repeat; r++) run_all(strcmp(warm, "legacy") ? cap : s);
            CK(cuCtxSynchronize());
        }
        for (int w = 0; w < 3; w++) CK(cuGraphLaunch(ge, s));
        CK(cuCtxSynchronize());
        int n = 50;
        std::vector<CUevent> ev(n + 1);
        for (auto &e : ev) CK(cuEventCreate(&e, 0));
        std::vector<double> cpu;
        for (int i = 0; i < n; i++) {
            CK(cuEventRecord(ev[i], s));
            auto c0 = std::chrono::steady_clock::now();
            CK(cuGraphLaunch(ge, s));
            cpu.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - c0).count());
        }
        std::sort(cpu.begin(), cpu.end());
        CK(cuEventRecord(ev[n], s));
        CK(cuCtxSynchronize());
        std::vector<float> t;
        for (int i = 0; i < n; i++) { float ms; CK(cuEventElapsedTime(&ms, ev[i], ev[i + 1])); t.push_back(ms * 1e3f); }
        std::sort(t.begin(), t.end());
        printf("minimal replay (%s%s; %zu launches, %d allocations at their address, %d moved; %d streams, %d other images, %zu B pinned; warm-up on %s x%d%s; round %d): median %.1f us per launch (min %.1f); cuGraphLaunch on the CPU: median %.1f us\n",
               argv[2], preserved ? ", binary preserved" : "", launches.size(), mapped, moved, n_streams, n_other, pinned, warm, repeat,
               destroy ? ", capture stream destroyed" : "", round, t[n / 2], t[0], cpu[n / 2]);
    }
}
