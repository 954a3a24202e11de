//! `tracer agent` end to end (root): a real Prometheus server (Debian's
//! `prometheus`, started here on 127.0.0.1) scrapes the agent while
//! programs linked against the fake libcuda run; the launch counter read
//! through Prometheus' HTTP API equals the launches made, a process's
//! series disappear after it exits (grace period), a process started
//! before the agent and one started after are both reported, and a
//! restarted agent picks up a process that was already running. Also: a
//! process outside the selection is not reported, and duty-cycled
//! recording pauses on a full disk (metrics go on) and resumes. Issue 31:
//! processes of about a millisecond counted exactly with name and cgroup
//! and no argument; POST /record opt-in, 409 and 429, private files;
//! `--listen :PORT` under slow clients; Prometheus over TLS with basic
//! auth; `--duty-cycle` exact within windows. Tests whose mode is
//! machine-wide select their own processes by cgroup.
mod common;

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// GET or POST `path` on `addr`: (status code, body).
fn http(addr: SocketAddr, method: &str, path: &str) -> std::io::Result<(u32, String)> {
    let mut c = TcpStream::connect_timeout(&addr, LIMIT)?;
    c.set_read_timeout(Some(LIMIT))?;
    write!(c, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
    let mut out = String::new();
    c.read_to_string(&mut out)?;
    let code = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    Ok((code, body))
}

fn wait_until<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(t0.elapsed() < limit, "hung: timed out after {limit:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A running agent, killed on drop if the test did not stop it.
struct Agent {
    child: Child,
    addr: SocketAddr,
    stderr: PathBuf,
}

impl Agent {
    fn start(tag: &str, port: u16, args: &[&str]) -> Agent {
        Agent::start_env(tag, port, args, &[])
    }

    fn start_env(tag: &str, port: u16, args: &[&str], env: &[(&str, &str)]) -> Agent {
        let f = common::fake();
        let stderr = common::fresh_output(tag).with_extension("agent.stderr");
        let child = Command::new(common::tracer_bin())
            .envs(env.iter().copied())
            .args(["agent", "--listen", &format!("127.0.0.1:{port}"), "--libcuda"])
            .arg(&f.lib)
            .args(if args.contains(&"--grace") { &[][..] } else { &["--grace", "2s"][..] })
            .args(["--scan-interval-ms", "100"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("starting tracer agent");
        let mut a = Agent { child, addr: format!("127.0.0.1:{port}").parse().unwrap(), stderr };
        wait_until("the agent to serve /metrics", LIMIT, || {
            if let Some(st) = a.child.try_wait().unwrap() {
                panic!("tracer agent exited ({st}) at start:\n{}", a.stderr_text());
            }
            http(a.addr, "GET", "/metrics").ok().filter(|r| r.0 == 200)
        });
        a
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn metrics(&self) -> String {
        let (code, body) = http(self.addr, "GET", "/metrics").expect("GET /metrics");
        assert_eq!(code, 200, "{body}");
        body
    }

    /// The value of the sample `name` whose labels include `pid`, if any.
    fn value(&self, name: &str, pid: u32) -> Option<f64> {
        let needle = format!("pid=\"{pid}\"");
        self.metrics()
            .lines()
            .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(&needle))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    }

    /// SIGTERM; the agent exits 0 saying every probe was detached.
    fn stop(mut self) {
        // SAFETY: kill on our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let st = common::wait_with_timeout(&mut self.child, LIMIT, false, "tracer agent after SIGTERM");
        let err = self.stderr_text();
        assert_eq!(common::shell_code(&st), 0, "{err}");
        assert!(err.contains("every probe detached"), "{err}");
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One run of tests/fakecuda/agent_load.c, with its control directory.
struct Load {
    child: Child,
    dir: PathBuf,
}

impl Load {
    fn start(tag: &str, launches: &[u32]) -> Load {
        let dir = common::fresh_output(tag).with_extension("dir");
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = Command::new(common::fake_program("agent_load"));
        c.arg(&dir).args(launches.iter().map(|n| n.to_string()));
        let child = c.stdin(Stdio::null()).spawn().expect("starting agent_load");
        Load { child, dir }
    }
    fn pid(&self) -> u32 {
        self.child.id()
    }
    fn touch(&self, name: &str) {
        std::fs::write(self.dir.join(name), b"").unwrap();
    }
    fn wait_file(&self, name: &str) {
        wait_until(&format!("{}/{name}", self.dir.display()), LIMIT, || self.dir.join(name).exists().then_some(()));
    }
    fn finish(mut self) {
        self.touch("exit");
        let st = common::wait_with_timeout(&mut self.child, LIMIT, false, "agent_load");
        assert!(st.success(), "agent_load: {st}");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until the agent reports `load` (its cuInit calls while it waits
/// for `go`), then lets it do its counted work and waits for `done`.
fn run_phase(agent: &Agent, load: &Load, go: &str, done: &str) {
    wait_until(&format!("the agent to report pid {}", load.pid()), LIMIT, || {
        agent.value("tracer_driver_calls_total", load.pid())
    });
    load.touch(go);
    load.wait_file(done);
}

/// A Prometheus server scraping `target` every second.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl Prometheus {
    fn start(target: SocketAddr) -> Prometheus {
        Prometheus::start_jobs(&format!("  - job_name: tracer\n    static_configs:\n      - targets: ['{target}']\n"))
    }

    /// With these scrape jobs (YAML list items under scrape_configs).
    fn start_jobs(jobs: &str) -> Prometheus {
        let bin = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("prometheus is not installed: `cargo xtask setup` installs Debian's prometheus package");
        let dir = common::fresh_output("prometheus").with_extension("prom");
        std::fs::create_dir_all(&dir).unwrap();
        let config = format!("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n{jobs}");
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let port = free_port();
        let child = Command::new(bin)
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .spawn()
            .expect("starting prometheus");
        let p = Prometheus { child, addr: format!("127.0.0.1:{port}").parse().unwrap(), dir };
        wait_until("prometheus to be ready", LIMIT, || http(p.addr, "GET", "/-/ready").ok().filter(|r| r.0 == 200));
        p
    }

    /// An instant query: (labels, value) of each series.
    fn query(&self, q: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        let enc: String = q
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (code, body) = http(self.addr, "GET", &format!("/api/v1/query?query={enc}")).expect("prometheus query");
        assert_eq!(code, 200, "{q}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{q}: {e}: {body}"));
        assert_eq!(v["status"], "success", "{body}");
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let labels = r["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect();
                (labels, r["value"][1].as_str().unwrap().parse().unwrap())
            })
            .collect()
    }

    fn launches(&self, pid: u32) -> Option<f64> {
        let r = self.query(&format!("tracer_kernel_launches_total{{pid=\"{pid}\",api=\"cuLaunchKernel\"}}"));
        assert!(r.len() <= 1, "{r:?}");
        r.first().map(|x| x.1)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[test]
fn prometheus_scrapes_launches_drops_exited_processes_and_survives_a_restart() {
    if !common::root_tests_enabled() {
        return;
    }
    let port = free_port();
    // The test's own processes, selected by cgroup: under --all-libcuda or
    // --system every process of the machine that calls a libcuda (other
    // test runs beside this one) would be counted, and dropped.
    let cg = common::cgroups::TestCgroup::create("tracer-agent-prom");
    let sel = ["--cgroup", &cg.arg()];
    // A: started before the agent; B: after it, and it outlives the agent.
    let a = Load::start("agent-a", &[7]);
    cg.add(a.pid());
    let agent = Agent::start("agent-1", port, &sel);
    let b = Load::start("agent-b", &[11, 5]);
    cg.add(b.pid());
    let prom = Prometheus::start(agent.addr);
    run_phase(&agent, &a, "go", "done");
    run_phase(&agent, &b, "go", "done");
    let (pa, pb) = (a.pid(), b.pid());
    wait_until("prometheus to scrape 7 and 11 launches", LIMIT, || {
        (prom.launches(pa) == Some(7.0) && prom.launches(pb) == Some(11.0)).then_some(())
    });
    // The other counters of A, through Prometheus too.
    let one = |q: &str| {
        let r = prom.query(q);
        assert_eq!(r.len(), 1, "{q}: {r:?}\nprometheus: {}", prom.stderr());
        r[0].clone()
    };
    let (labels, v) = one(&format!("tracer_kernels_total{{pid=\"{pa}\"}}"));
    assert_eq!((labels["family"].as_str(), v), ("gemm", 7.0));
    // The executable's name, not its arguments; the cgroup's path.
    assert_eq!(labels["command"], "agent_load");
    assert_eq!(labels["cgroup"], cg.arg());
    assert_eq!(one(&format!("tracer_copy_bytes_total{{pid=\"{pa}\",direction=\"h2d\"}}")).1, 3000.0);
    assert_eq!(one(&format!("tracer_copies_total{{pid=\"{pa}\",direction=\"h2d\"}}")).1, 3.0);
    assert_eq!(one(&format!("tracer_allocated_bytes_live{{pid=\"{pa}\"}}")).1, 4096.0);
    assert_eq!(one(&format!("tracer_allocations_total{{pid=\"{pa}\"}}")).1, 2.0);
    assert_eq!(one(&format!("tracer_synchronizations_total{{pid=\"{pa}\"}}")).1, 1.0);
    assert_eq!(one("tracer_lost_records_total").1, 0.0);

    // A exits: its series go after the grace period (2 s); B's stay.
    a.finish();
    wait_until(&format!("pid {pa}'s series to disappear from Prometheus"), LIMIT, || {
        prom.launches(pa).is_none().then_some(())
    });
    assert_eq!(prom.launches(pb), Some(11.0));
    assert_eq!(one("tracer_processes_dropped_total").1, 1.0);

    // The agent restarts; B, started before the new agent, is found again
    // and its next launches counted from zero.
    agent.stop();
    let agent = Agent::start("agent-2", port, &sel);
    run_phase(&agent, &b, "go2", "done2");
    wait_until("the restarted agent to count 5 launches", LIMIT, || {
        (agent.value("tracer_kernel_launches_total", pb) == Some(5.0)).then_some(())
    });
    wait_until("prometheus to scrape the restarted agent's 5 launches", LIMIT, || {
        (prom.launches(pb) == Some(5.0)).then_some(())
    });
    b.finish();
    agent.stop();
}

/// Driver 580's libnvidia-ml loads libcuda while it initialises, in the
/// agent's own process. Under --system that open must not be stopped by the
/// agent's libcuda watch: the agent is the one that continues stopped
/// processes, and on the GPU machine it stopped itself (State T) and never
/// answered. A stand-in NVML (tests/fakecuda/fakenvml.c) found through
/// LD_LIBRARY_PATH dlopens the fake libcuda the same way.
#[test]
fn the_agents_own_libcuda_open_through_nvml_does_not_stop_it() {
    if !common::root_tests_enabled() {
        return;
    }
    let f = common::fake();
    let dir = f.dir.join("fakenvml");
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libnvidia-ml.so.1");
    let out = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(common::LIB_CFLAGS)
        .arg(format!("-DFAKE_LIBCUDA=\"{}\"", f.lib.display()))
        .arg("-o")
        .arg(&lib)
        .arg(common::src_dir().join("fakenvml.c"))
        .arg("-ldl")
        .output()
        .unwrap();
    assert!(out.status.success(), "building the stand-in NVML: {}", String::from_utf8_lossy(&out.stderr));
    let agent =
        Agent::start_env("agent-own-nvml", free_port(), &["--system"], &[("LD_LIBRARY_PATH", dir.to_str().unwrap())]);
    let pid = agent.child.id();
    // The stand-in was loaded and its dlopen of libcuda in the agent worked
    // (its init returns 9, "driver not loaded", only then; 999 otherwise)...
    let m = agent.metrics();
    assert_eq!(
        m.lines().find(|l| l.starts_with("tracer_power_available{")),
        Some(r#"tracer_power_available{reason="NVML unavailable: libnvidia-ml.so.1: NVIDIA driver is not loaded"} 0"#),
        "{m}"
    );
    // ...and the agent still runs and answers, scrape after scrape.
    for _ in 0..3 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let state = status.lines().find(|l| l.starts_with("State:")).unwrap().to_string();
        assert!(!state.contains("stopped"), "the agent stopped itself: {state}");
        assert!(agent.metrics().contains("tracer_power_available"), "no power metric");
        std::thread::sleep(Duration::from_millis(200));
    }
    agent.stop();
}

#[test]
fn a_process_outside_the_selection_is_not_reported() {
    if !common::root_tests_enabled() {
        return;
    }
    let a = Load::start("agent-sel-a", &[3]);
    let c = Load::start("agent-sel-c", &[4]);
    let agent = Agent::start("agent-sel", free_port(), &["-p", &a.pid().to_string()]);
    a_counted_c_not_reported(agent, a, c);
}

/// A (3 launches, selected) and C (4, not selected) both run their work;
/// whatever C did was seen by the same probes: a scrape after A's work and
/// C's shows A's launches and nothing of C. Then both finish and the agent
/// stops.
fn a_counted_c_not_reported(agent: Agent, a: Load, c: Load) {
    run_phase(&agent, &a, "go", "done");
    c.touch("go");
    c.wait_file("done");
    wait_until("the agent to count A's 3 launches", LIMIT, || {
        (agent.value("tracer_kernel_launches_total", a.pid()) == Some(3.0)).then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    let text = agent.metrics();
    assert!(!text.contains(&format!("pid=\"{}\"", c.pid())), "{text}");
    a.finish();
    c.finish();
    agent.stop();
}

/// With a durations library that has the program's kernel (gemm_kernel at
/// grid 1, block 32: 100 ns) and its copies (1 ns each), the agent infers
/// the process's busy time from it: basis calibrated, and busy exactly its
/// 7 kernels and 3 copies (launches arrive µs apart: nothing queues).
#[test]
fn busy_time_is_inferred_from_the_durations_library() {
    if !common::root_tests_enabled() {
        return;
    }
    let dir = common::fresh_output("agent-durations").with_extension("d");
    std::fs::create_dir_all(&dir).unwrap();
    let library = dir.join("durations.json");
    std::fs::write(
        &library,
        r#"{"format":"tracer-durations-library","version":1,"gpus":[{"model":"Fake GPU","driver":"1.0","runs":1,"updated_unix":1,
            "kernels":[{"kernel":"gemm_kernel","grid":[1,1,1],"block":[32,1,1],"shared_mem":0,"count":5,"median_ns":100,"p10_ns":100,"p90_ns":100}],
            "copies":[{"kind":"h2d","count":3,"base_ns":1,"ns_per_byte":0.0}]}]}"#,
    )
    .unwrap();
    let cg = common::cgroups::TestCgroup::create("tracer-agent-durations");
    let a = Load::start("agent-dur-a", &[7]);
    cg.add(a.pid());
    let env = [("TRACER_DURATIONS_LIBRARY", library.to_str().unwrap()), ("TRACER_GPU_KEY", "Fake GPU;1.0")];
    let agent = Agent::start_env("agent-dur", free_port(), &["--cgroup", &cg.arg()], &env);
    assert!(
        agent.stderr_text().contains("inferred from the durations library ")
            && agent.stderr_text().contains("1 kernel entries"),
        "{}",
        agent.stderr_text()
    );
    run_phase(&agent, &a, "go", "done");
    wait_until("the agent to count A's 7 launches", LIMIT, || {
        (agent.value("tracer_kernel_launches_total", a.pid()) == Some(7.0)).then_some(())
    });
    let text = agent.metrics();
    let basis: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("tracer_gpu_busy_basis{") && l.contains(&format!("pid=\"{}\"", a.pid())))
        .collect();
    assert_eq!(basis.len(), 1, "{text}");
    assert!(basis[0].contains("basis=\"calibrated\""), "{}", basis[0]);
    let busy = agent.value("tracer_gpu_busy_seconds_total", a.pid()).expect("busy seconds");
    assert!((busy - 703e-9).abs() < 1e-12, "busy {busy}: {text}");
    a.finish();
    agent.stop();
}

/// A tmpfs of `kib` KiB mounted at a fresh directory (unmounted on drop).
struct SmallFs(PathBuf);

impl SmallFs {
    fn mount(kib: u32) -> SmallFs {
        let dir = common::fresh_output("agent-tmpfs").with_extension("mnt");
        std::fs::create_dir_all(&dir).unwrap();
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tracer-agent"])
            .arg(&dir)
            .status();
        assert!(st.is_ok_and(|s| s.success()), "mounting a tmpfs at {}", dir.display());
        SmallFs(dir)
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn recording_pauses_on_a_full_disk_and_metrics_go_on() {
    if !common::root_tests_enabled() {
        return;
    }
    let fs = SmallFs::mount(256);
    let records = fs.0.join("traces");
    std::fs::create_dir_all(&records).unwrap();
    // Fill the file system: nothing left for a trace file.
    let filler = fs.0.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    while f.write_all(&[0u8; 4096]).is_ok() {}
    drop(f);
    // cuStreamQuery every millisecond: lines in every window.
    let mut busy = common::driver_cmd(&["sleep_loop"]).stdin(Stdio::null()).spawn().unwrap();
    let pid = busy.id().to_string();
    let rec = records.to_str().unwrap();
    let agent = Agent::start(
        "agent-rec",
        free_port(),
        &["-p", &pid, "--record-dir", rec, "--record-every", "1s", "--record-for", "300ms"],
    );
    let paused = |reason: &str| format!("tracer_recording_paused{{reason=\"{reason}\"}} 1");
    wait_until("recording paused with reason disk_full", LIMIT, || {
        agent.metrics().contains(&paused("disk_full")).then_some(())
    });
    // Metrics keep flowing while recording is paused.
    let calls = |a: &Agent| a.value("tracer_driver_calls_total", busy.id()).unwrap_or(0.0);
    let before = calls(&agent);
    wait_until("more calls counted while paused", LIMIT, || (calls(&agent) > before + 50.0).then_some(()));
    // Space again: the next window is written whole and the pause ends.
    std::fs::remove_file(&filler).unwrap();
    wait_until("recording to resume", LIMIT, || {
        agent.metrics().contains("tracer_recording_paused{reason=\"\"} 0").then_some(())
    });
    // Without --web.enable-record, POST /record is refused.
    let (code, body) = http(agent.addr, "POST", "/record").unwrap();
    assert_eq!(code, 403, "{body}");
    agent.stop();
    let _ = busy.kill();
    let _ = busy.wait();
    // Every file whole (header first, footer last) and read by `tracer summary`.
    let mut whole = 0;
    for e in std::fs::read_dir(&records).unwrap().flatten() {
        let out = Command::new(common::tracer_bin()).args(["summary", "--json"]).arg(e.path()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if e.metadata().unwrap().len() == 0 || !out.status.success() {
            // The windows cut by the full disk.
            continue;
        }
        let s: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let calls = s["functions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == "cuStreamQuery")
            .and_then(|f| f["calls"].as_u64())
            .unwrap_or(0);
        assert!(calls > 10, "{}: {s}", e.path().display());
        whole += 1;
    }
    assert!(whole >= 1, "no whole window file in {}", records.display());
}

/// tests/fakecuda/agent_dlopen.c, built without linking libcuda.
fn dlopen_program() -> PathBuf {
    let f = common::fake();
    let out = f.dir.join("agent_dlopen");
    let tmp = f.dir.join("agent_dlopen.tmp");
    let st = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O1", "-Wall", "-Wextra", "-o"])
        .arg(&tmp)
        .arg(common::src_dir().join("agent_dlopen.c"))
        .arg("-ldl")
        .status()
        .unwrap();
    assert!(st.success(), "building agent_dlopen.c");
    std::fs::rename(&tmp, &out).unwrap();
    out
}

/// A process that maps libcuda only after the agent looked at it: found by
/// the next scan, every launch after that counted.
#[test]
fn a_process_that_loads_libcuda_late_is_found() {
    if !common::root_tests_enabled() {
        return;
    }
    let agent = Agent::start("agent-late", free_port(), &["--all-libcuda"]);
    let dir = common::fresh_output("agent-late").with_extension("dir");
    std::fs::create_dir_all(&dir).unwrap();
    let mut p = Command::new(dlopen_program())
        .arg(&dir)
        .arg(&common::fake().lib)
        .arg("9")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = p.id();
    // Several scans (100 ms) go by while it has no libcuda mapped.
    std::thread::sleep(Duration::from_millis(500));
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    assert!(!maps.contains("libcuda"), "{maps}");
    std::fs::write(dir.join("open"), b"").unwrap();
    wait_until("the agent to report the late process", LIMIT, || agent.value("tracer_driver_calls_total", pid));
    std::fs::write(dir.join("go"), b"").unwrap();
    wait_until("done", LIMIT, || dir.join("done").exists().then_some(()));
    wait_until("9 launches counted", LIMIT, || {
        (agent.value("tracer_kernel_launches_total", pid) == Some(9.0)).then_some(())
    });
    std::fs::write(dir.join("exit"), b"").unwrap();
    let st = common::wait_with_timeout(&mut p, LIMIT, false, "agent_dlopen");
    assert!(st.success(), "{st}");
    let _ = std::fs::remove_dir_all(&dir);
    agent.stop();
}

/// The functions probed in each libcuda file the agent probes: inode -> (path, count).
fn probed_files(text: &str) -> BTreeMap<u64, (String, f64)> {
    let label = |l: &str, k: &str| -> Option<String> {
        Some(l.split(&format!("{k}=\"")).nth(1)?.split('"').next()?.to_string())
    };
    text.lines()
        .filter(|l| l.starts_with("tracer_libcuda_file_probed_functions{"))
        .filter_map(|l| {
            let ino = label(l, "inode")?.parse().ok()?;
            Some((ino, (label(l, "path")?, l.rsplit(' ').next()?.parse().ok()?)))
        })
        .collect()
}

/// A copy of the fake libcuda at another path (another inode), and the
/// control directory of an agent_dlopen run that will load it.
struct Copy {
    dir: PathBuf,
    lib_dir: PathBuf,
    lib: PathBuf,
    ino: u64,
}

impl Copy {
    fn new(tag: &str) -> Copy {
        use std::os::unix::fs::MetadataExt as _;
        let dir = common::fresh_output(tag).with_extension("dir");
        let lib_dir = common::fresh_output(tag).with_extension("lib");
        for d in [&dir, &lib_dir] {
            std::fs::create_dir_all(d).unwrap();
        }
        let lib = lib_dir.join("libcuda.so.1");
        std::fs::copy(&common::fake().lib, &lib).unwrap();
        let ino = std::fs::metadata(&lib).unwrap().ino();
        assert_ne!(ino, std::fs::metadata(&common::fake().lib).unwrap().ino());
        Copy { dir, lib_dir, lib, ino }
    }

    /// agent_dlopen on the copy, 9 launches; waits for DIR/open.
    fn spawn(&self) -> KillOnDrop {
        KillOnDrop(
            Command::new(dlopen_program()).arg(&self.dir).arg(&self.lib).arg("9").stdin(Stdio::null()).spawn().unwrap(),
        )
    }

    fn touch(&self, name: &str) {
        std::fs::write(self.dir.join(name), b"").unwrap();
    }

    /// Removes the marker files, for the copy to be run again.
    fn reset(&self) {
        for name in ["go", "open", "done", "exit"] {
            let _ = std::fs::remove_file(self.dir.join(name));
        }
    }

    /// Waits for DIR/done, lets it exit: it must succeed.
    fn finish(&self, mut p: KillOnDrop, what: &str) {
        wait_until("done", LIMIT, || self.dir.join("done").exists().then_some(()));
        self.touch("exit");
        let st = common::wait_with_timeout(&mut p.0, LIMIT, false, "agent_dlopen");
        assert!(st.success(), "{what}: {st}");
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_dir_all(&self.lib_dir);
    }
}

/// A process started after the agent that dlopens another libcuda file (a
/// copy of the fake at another path: another inode) gets that file probed
/// too, and its exact launches counted; it runs to its end. `--system` and
/// `--cgroup`: the kernel stops it as it opens the copy until the copy is
/// probed, so launches made right after the dlopen are counted;
/// `--all-libcuda`: found by the next scan of /proc (it calls cuInit until
/// told to launch).
#[test]
fn a_process_started_later_with_another_libcuda_file_is_counted() {
    if !common::root_tests_enabled() {
        return;
    }
    use std::os::unix::fs::MetadataExt as _;
    let fake = std::fs::metadata(&common::fake().lib).unwrap();
    let cg = common::cgroups::TestCgroup::create("tracer-agent-copy");
    for mode in ["--system", "--cgroup", "--all-libcuda"] {
        let tag = format!("agent-copy{mode}");
        let copy = Copy::new(&tag);
        let args: Vec<String> = match mode {
            "--cgroup" => vec![mode.into(), cg.arg()],
            _ => vec![mode.into()],
        };
        let agent = Agent::start(&tag, free_port(), &args.iter().map(String::as_str).collect::<Vec<_>>());
        // The file chosen at start (from the first housekeeping round on;
        // other processes of the machine may have other libcuda files
        // mapped, probed too: only the copy is sure to be new).
        let before = wait_until("the agent to list its libcuda file", LIMIT, || {
            Some(probed_files(&agent.metrics())).filter(|f| f.contains_key(&fake.ino()))
        });
        let (path, n) = before[&fake.ino()].clone();
        assert_eq!(path, common::fake().lib.to_str().unwrap());
        assert!(n > 10.0, "{before:?}");
        assert!(!before.contains_key(&copy.ino), "{before:?}");
        let p = copy.spawn();
        let pid = p.0.id();
        if mode == "--cgroup" {
            cg.add(pid);
        }
        if mode != "--all-libcuda" {
            // Launch at once after the dlopen: no wait for the agent.
            copy.touch("go");
        }
        copy.touch("open");
        if mode == "--all-libcuda" {
            wait_until("the agent to report the process", LIMIT, || agent.value("tracer_driver_calls_total", pid));
            copy.touch("go");
        }
        wait_until("done", LIMIT, || copy.dir.join("done").exists().then_some(()));
        wait_until(&format!("{mode}: 9 launches counted"), LIMIT, || {
            (agent.value("tracer_kernel_launches_total", pid) == Some(9.0)).then_some(())
        });
        // The copy: probed once, as many functions as the fake.
        let after = wait_until("the housekeeping round", LIMIT, || {
            Some(probed_files(&agent.metrics())).filter(|f| f.contains_key(&copy.ino))
        });
        assert_eq!(after[&copy.ino], (copy.lib.to_str().unwrap().to_string(), n), "{after:?}");
        assert_eq!(total(&agent.metrics(), "tracer_libcuda_files_not_probed_total"), 0.0);
        copy.finish(p, mode);
        agent.stop();
    }
}

/// `--max-libcuda-files 1`: the file chosen at start is the one; a process
/// opening a copy is continued with the copy unprobed (counted once, however
/// many processes open it, and none of its calls seen) and runs to its end.
/// Selected by cgroup: under `--system` any process of the machine that opens
/// a libcuda file (the kprobe VM's image builder, beside the root tests in
/// CI) would be counted too.
#[test]
fn past_the_file_limit_a_process_runs_unprobed_and_is_counted() {
    if !common::root_tests_enabled() {
        return;
    }
    let copy = Copy::new("agent-limit");
    let cg = common::cgroups::TestCgroup::create("tracer-agent-limit");
    let agent = Agent::start("agent-limit", free_port(), &["--cgroup", &cg.arg(), "--max-libcuda-files", "1"]);
    let p = copy.spawn();
    let pid = p.0.id();
    cg.add(pid);
    copy.touch("go");
    copy.touch("open");
    copy.finish(p, "past the limit");
    wait_until("the copy to be counted not probed", LIMIT, || {
        (total(&agent.metrics(), "tracer_libcuda_files_not_probed_total") >= 1.0).then_some(())
    });
    let opens = total(&agent.metrics(), "tracer_libcuda_opens_total");
    assert!(opens >= 1.0);
    // A second process opening the same copy: one more open, still one file not probed.
    copy.reset();
    let p = copy.spawn();
    cg.add(p.0.id());
    copy.touch("go");
    copy.touch("open");
    copy.finish(p, "past the limit, again");
    wait_until("the second open", LIMIT, || {
        (total(&agent.metrics(), "tracer_libcuda_opens_total") > opens).then_some(())
    });
    assert_eq!(total(&agent.metrics(), "tracer_libcuda_files_not_probed_total"), 1.0);
    let warned = agent.stderr_text().matches("libcuda files are probed already (the limit)").count();
    assert_eq!(warned, 1, "{}", agent.stderr_text());
    let files = probed_files(&agent.metrics());
    assert_eq!(
        files.keys().copied().collect::<Vec<_>>(),
        [std::fs::metadata(&common::fake().lib)
            .map(|m| {
                use std::os::unix::fs::MetadataExt as _;
                m.ino()
            })
            .unwrap()]
    );
    assert_eq!(agent.value("tracer_driver_calls_total", pid), None);
    assert!(agent.stderr_text().contains("libcuda files are probed already (the limit)"), "{}", agent.stderr_text());
    agent.stop();
}

/// A child killed when the test fails.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The sum of every sample of `name` in an exposition.
fn total(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Two runs of 101 000 launches in a row (tests/fakecuda/bench.c, children
/// of a traced shell): every launch counted, and the agent's resident
/// memory after the second run within 1 MiB of that after the first.
#[test]
fn memory_stays_flat_across_runs() {
    if !common::root_tests_enabled() {
        return;
    }
    let bench = common::fake_program("bench");
    let dir = common::fresh_output("agent-mem").with_extension("dir");
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(
        "d={d}; for r in 1 2; do while [ ! -e $d/go$r ]; do sleep 0.05; done; \
         {b} calls launch 100000 1 >/dev/null || exit 1; touch $d/done$r; done; \
         while [ ! -e $d/exit ]; do sleep 0.05; done",
        d = dir.display(),
        b = bench.display()
    );
    let mut sh = KillOnDrop(Command::new("sh").args(["-c", &script]).stdin(Stdio::null()).spawn().unwrap());
    let agent = Agent::start("agent-mem", free_port(), &["-p", &sh.0.id().to_string(), "--grace", "600s"]);
    let mut rss = vec![];
    for r in 1..=2 {
        std::fs::write(dir.join(format!("go{r}")), b"").unwrap();
        wait_until(&format!("run {r}"), LIMIT, || dir.join(format!("done{r}")).exists().then_some(()));
        let want = 101_000.0 * r as f64;
        let text = wait_until(&format!("{want} launches counted"), LIMIT, || {
            let t = agent.metrics();
            (total(&t, "tracer_kernel_launches_total") == want).then_some(t)
        });
        assert_eq!(total(&text, "tracer_lost_records_total"), 0.0);
        // The housekeeping round (every second) that reads the agent's memory.
        std::thread::sleep(Duration::from_millis(1200));
        rss.push(total(&agent.metrics(), "tracer_agent_resident_bytes"));
    }
    eprintln!("agent resident bytes after each run: {rss:?}");
    assert!(rss[0] > 0.0, "{rss:?}");
    assert!(rss[1] - rss[0] < 1024.0 * 1024.0, "resident memory grew from {} to {} bytes", rss[0], rss[1]);
    std::fs::write(dir.join("exit"), b"").unwrap();
    let st = common::wait_with_timeout(&mut sh.0, LIMIT, false, "the bench shell");
    assert!(st.success(), "{st}");
    let _ = std::fs::remove_dir_all(&dir);
    agent.stop();
}

/// `--cgroup`: the kernel selects the processes of one cgroup (and, as with
/// `tracer record --cgroup`, nothing else); no -p, no /proc scan.
#[test]
fn cgroup_selects_the_processes_inside_in_the_kernel() {
    if !common::root_tests_enabled() {
        return;
    }
    let cg = common::cgroups::TestCgroup::create("tracer-agent-cg");
    let a = Load::start("agent-cg-a", &[3]);
    let c = Load::start("agent-cg-c", &[4]);
    cg.add(a.pid());
    let agent = Agent::start("agent-cg", free_port(), &["--cgroup", &cg.arg()]);
    assert!(agent.stderr_text().contains("selected in the kernel"), "{}", agent.stderr_text());
    a_counted_c_not_reported(agent, a, c);
    drop(cg);
}

/// The labels of the first sample of `name` for `pid`: label -> value.
fn labels_of(text: &str, name: &str, pid: u32) -> BTreeMap<String, String> {
    let needle = format!("pid=\"{pid}\"");
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(&needle))
        .unwrap_or_else(|| panic!("no {name} for pid {pid} in:\n{text}"));
    let inner = line.split_once('{').unwrap().1.rsplit_once('}').unwrap().0;
    inner
        .split("\",")
        .filter_map(|kv| {
            let (k, v) = kv.split_once("=\"")?;
            Some((k.to_string(), v.trim_end_matches('"').to_string()))
        })
        .collect()
}

/// Under `--system` and `--all-libcuda`, processes that live about a
/// millisecond (777 launches, then exit) are counted exactly, each named
/// by the kernel's note at its first call (the executable's name, never
/// its arguments: the secret on its command line appears nowhere) and in
/// its cgroup. They run in a test cgroup; the test reads their pids only.
#[test]
fn short_lived_processes_are_counted_exactly_with_their_name_and_cgroup() {
    if !common::root_tests_enabled() {
        return;
    }
    let prog = common::fake_program("short_lived");
    let cg = common::cgroups::TestCgroup::create("tracer-agent-short");
    for mode in ["--system", "--all-libcuda"] {
        let agent = Agent::start(&format!("agent-short{mode}"), free_port(), &[mode, "--grace", "60s"]);
        let mut pids = vec![];
        for _ in 0..5 {
            // The shell moves itself into the cgroup, then becomes the program.
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "echo $$ > {} && echo $$ >&2 && exec {} 777 --api-key=hunter2-secret",
                    cg.procs().display(),
                    prog.display()
                ))
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{err}");
            let pid: u32 = err.lines().next().unwrap().trim().parse().unwrap();
            eprintln!("{mode}: pid {pid}: {}", err.lines().nth(1).unwrap_or(""));
            pids.push(pid);
        }
        for &pid in &pids {
            wait_until(&format!("{mode}: 777 launches of pid {pid}"), LIMIT, || {
                (agent.value("tracer_kernel_launches_total", pid) == Some(777.0)).then_some(())
            });
        }
        let text = agent.metrics();
        for &pid in &pids {
            let l = labels_of(&text, "tracer_kernel_launches_total", pid);
            assert_eq!(l["command"], "short_lived", "{mode}: {l:?}");
            assert_eq!(l["cgroup"], cg.arg(), "{mode}: {l:?}");
        }
        assert!(!text.contains("hunter2"), "{mode}: an argument in the labels:\n{text}");
        agent.stop();
    }
}

/// `POST /record` is refused (403) unless `--web.enable-record`; enabled,
/// it starts a window (202), answers 409 while it records and 429 within
/// `--web.record-min-interval`; the trace file is 0600 in a 0700 directory.
#[test]
fn post_record_is_opt_in_busy_aware_and_rate_limited() {
    if !common::root_tests_enabled() {
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    let mut busy = KillOnDrop(common::driver_cmd(&["sleep_loop"]).stdin(Stdio::null()).spawn().unwrap());
    let pid = busy.0.id().to_string();
    let records = common::fresh_output("agent-post").with_extension("records");
    let _ = std::fs::remove_dir_all(&records);
    let rec = records.to_str().unwrap();
    let off = Agent::start("agent-post-off", free_port(), &["-p", &pid, "--record-dir", rec]);
    let (code, body) = http(off.addr, "POST", "/record").unwrap();
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("--web.enable-record"), "{body}");
    off.stop();
    let agent = Agent::start(
        "agent-post",
        free_port(),
        &[
            "-p",
            &pid,
            "--record-dir",
            rec,
            "--record-for",
            "2s",
            "--web.enable-record",
            "--web.record-min-interval",
            "60s",
        ],
    );
    let (code, body) = http(agent.addr, "POST", "/record").unwrap();
    assert_eq!(code, 202, "{body}");
    let (code, body) = http(agent.addr, "POST", "/record").unwrap();
    assert_eq!(code, 409, "{body}");
    wait_until("the window to be written", LIMIT, || {
        (total(&agent.metrics(), "tracer_recordings_total") == 1.0).then_some(())
    });
    let mut c = TcpStream::connect(agent.addr).unwrap();
    c.set_read_timeout(Some(LIMIT)).unwrap();
    write!(c, "POST /record HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 429"), "{out}");
    let retry: u64 = out
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("retry-after: ").map(|v| v.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("{out}"));
    assert!((50..=60).contains(&retry), "{out}");
    agent.stop();
    let _ = busy.0.kill();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&records), 0o700);
    let files: Vec<PathBuf> = std::fs::read_dir(&records).unwrap().flatten().map(|e| e.path()).collect();
    assert!(!files.is_empty());
    for f in &files {
        assert_eq!(mode(f), 0o600, "{}", f.display());
    }
    let _ = std::fs::remove_dir_all(&records);
}

/// `--listen :PORT` (every address) serves /metrics whole, over IPv4 and
/// IPv6 loopback, while 100 clients hold connections sending a header line
/// now and then (slowloris) and 4 never read their answers. How long the
/// scrapes took is printed, not judged.
#[test]
fn listen_any_port_answers_whole_under_slow_clients() {
    if !common::root_tests_enabled() {
        return;
    }
    let port = free_port();
    let cg = common::cgroups::TestCgroup::create("tracer-agent-slow");
    let f = common::fake();
    let stderr = common::fresh_output("agent-any").with_extension("agent.stderr");
    let child = Command::new(common::tracer_bin())
        .args(["agent", "--listen", &format!(":{port}"), "--libcuda"])
        .arg(&f.lib)
        .args(["--cgroup", &cg.arg()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let agent = Agent { child, addr: format!("127.0.0.1:{port}").parse().unwrap(), stderr };
    wait_until("the agent to serve /metrics", LIMIT, || {
        http(agent.addr, "GET", "/metrics").ok().filter(|r| r.0 == 200)
    });
    let mut slow: Vec<TcpStream> = (0..100)
        .map(|_| {
            let mut c = TcpStream::connect(agent.addr).unwrap();
            c.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
            c
        })
        .collect();
    let silent: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = TcpStream::connect(agent.addr).unwrap();
            for _ in 0..50 {
                let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            }
            c
        })
        .collect();
    let v6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    let mut worst: f64 = 0.0;
    for i in 0..10 {
        for c in slow.iter_mut() {
            let _ = c.write_all(format!("X-{i}: y\r\n").as_bytes());
        }
        for addr in [agent.addr, v6] {
            let t = Instant::now();
            let (code, body) = http(addr, "GET", "/metrics").unwrap();
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(code, 200, "{body}");
            assert!(body.ends_with("# EOF\n"));
            worst = worst.max(secs);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("worst scrape under 100 slow and 4 silent clients: {worst:.3} s");
    drop((slow, silent));
    agent.stop();
}

/// `--web.config.file` with the exporter-toolkit keys: Debian's Prometheus
/// scrapes the agent over TLS (a self-signed certificate made here with
/// openssl, trusted as the CA) with basic auth (a bcrypt hash), and reads
/// the exact launch count; its jobs with a wrong password and over plain
/// HTTP are down (`up` 0), the wrong password counted as unauthorized.
#[test]
fn prometheus_scrapes_over_tls_with_basic_auth() {
    if !common::root_tests_enabled() {
        return;
    }
    let dir = common::fresh_output("agent-tls").with_extension("tls");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("agent.crt"), dir.join("agent.key"));
    let out = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=tracer-agent-test", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl (`cargo xtask setup` installs it)");
    assert!(out.status.success(), "openssl: {}", String::from_utf8_lossy(&out.stderr));
    let hash = bcrypt::hash("s3cret", 6).unwrap();
    let web = dir.join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: agent.crt\n  key_file: agent.key\nbasic_auth_users:\n  prom: '{hash}'\n"
        ),
    )
    .unwrap();
    let cg = common::cgroups::TestCgroup::create("tracer-agent-tls");
    let load = Load::start("agent-tls-load", &[13]);
    cg.add(load.pid());
    let port = free_port();
    let f = common::fake();
    let stderr = dir.join("agent.stderr");
    let child = Command::new(common::tracer_bin())
        .args(["agent", "--listen", &format!("127.0.0.1:{port}"), "--libcuda"])
        .arg(&f.lib)
        .args(["--cgroup", &cg.arg(), "--web.config.file"])
        .arg(&web)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let agent = Agent { child, addr: format!("127.0.0.1:{port}").parse().unwrap(), stderr };
    wait_until("the agent to say it serves https", LIMIT, || {
        agent.stderr_text().contains(&format!("serving https://127.0.0.1:{port}/metrics")).then_some(())
    });
    // Plain HTTP to the TLS port: no answer (the handshake fails).
    let plain = http(agent.addr, "GET", "/metrics");
    assert!(plain.as_ref().map_or(true, |r| r.0 == 0), "{plain:?}");
    let ca = cert.display();
    let job = |name: &str, scheme: &str, password: &str| {
        format!(
            "  - job_name: {name}\n    scheme: {scheme}\n    tls_config:\n      ca_file: {ca}\n      server_name: localhost\n\
             \x20   basic_auth:\n      username: prom\n      password: {password}\n\
             \x20   static_configs:\n      - targets: ['127.0.0.1:{port}']\n"
        )
    };
    let jobs =
        [job("tracer", "https", "s3cret"), job("wrong", "https", "nope"), job("plain", "http", "s3cret")].concat();
    let prom = Prometheus::start_jobs(&jobs);
    load.touch("go");
    load.wait_file("done");
    wait_until("prometheus to scrape 13 launches over TLS", LIMIT, || {
        (prom.launches(load.pid()) == Some(13.0)).then_some(())
    });
    let up = |job: &str| {
        let r = prom.query(&format!("up{{job=\"{job}\"}}"));
        r.first().map(|x| x.1)
    };
    assert_eq!(up("tracer"), Some(1.0), "{}", prom.stderr());
    wait_until("the other jobs to be scraped", LIMIT, || {
        (up("wrong").is_some() && up("plain").is_some()).then_some(())
    });
    assert_eq!((up("wrong"), up("plain")), (Some(0.0), Some(0.0)));
    // Counted at the agent's next housekeeping round, read at the next scrape.
    wait_until("the wrong password to be counted", LIMIT, || {
        prom.query("tracer_http_unauthorized_total").first().is_some_and(|x| x.1 >= 1.0).then_some(())
    });
    load.finish();
    agent.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--duty-cycle 1s/3s`: the probes are attached 1 s in every 3. A
/// short-lived process (777 launches) run inside a window is counted
/// exactly; one run while the probes are detached is not seen at all; a
/// process calling cuStreamQuery every millisecond is counted only in the
/// windows (its count stands still while detached); the series say
/// sampled="true" and the last window's launch rate is exported: its 777
/// launches over the window's attached seconds. Each check is made within
/// one window or one pause between windows, known from the agent's own
/// counts (attached, windows ended) being the same before and after it; on a
/// loaded machine a check that straddled an edge is made again in the next.
#[test]
fn duty_cycle_counts_exactly_within_windows_and_nothing_between() {
    if !common::root_tests_enabled() {
        return;
    }
    let prog = common::fake_program("short_lived");
    let cg = common::cgroups::TestCgroup::create("tracer-agent-duty");
    let agent =
        Agent::start("agent-duty", free_port(), &["--cgroup", &cg.arg(), "--duty-cycle", "1s/3s", "--grace", "60s"]);
    let attached = |a: &Agent| total(&a.metrics(), "tracer_probes_attached") == 1.0;
    let edge = |a: &Agent, to: bool| {
        // Wait for the other state first, then for the change: a fresh edge.
        wait_until("the other state", LIMIT, || (attached(a) != to).then_some(()));
        wait_until(&format!("an edge to attached={to}"), LIMIT, || (attached(a) == to).then_some(()));
    };
    // (attached, windows ended, attached seconds of the windows ended).
    let state = |text: &str| {
        (
            total(text, "tracer_probes_attached") == 1.0,
            total(text, "tracer_sampling_windows_total"),
            total(text, "tracer_probes_attached_seconds_total"),
        )
    };
    // `check` after a fresh edge to attached=`to`, until the agent's state is
    // the same after it as before: it ran within one window or one pause.
    let within = |a: &Agent, to: bool, what: &str, check: &mut dyn FnMut() -> String| -> String {
        for _ in 0..10 {
            edge(a, to);
            let before = state(&a.metrics());
            let text = check();
            if state(&a.metrics()) == before {
                return text;
            }
        }
        panic!("{what}: in 10 tries no {} held it whole", if to { "window" } else { "pause" });
    };
    let run = |n: u32| -> u32 {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("echo $$ > {} && echo $$ >&2 && exec {} {n}", cg.procs().display(), prog.display()))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        err.lines().next().unwrap().trim().parse().unwrap()
    };
    let busy = KillOnDrop(common::driver_cmd(&["sleep_loop"]).stdin(Stdio::null()).spawn().unwrap());
    cg.add(busy.0.id());
    let queries = |a: &Agent| a.value("tracer_driver_calls_total", busy.0.id()).unwrap_or(0.0);

    // Inside a window, then the pause right after it (the window's rate).
    let (mut inside, mut window) = (0, None);
    for _ in 0..10 {
        edge(&agent, true);
        let before = state(&agent.metrics());
        inside = run(777);
        if state(&agent.metrics()) != before {
            continue;
        }
        edge(&agent, false);
        let text = agent.metrics();
        let after = state(&text);
        if after.1 == before.1 + 1.0 {
            window = Some((text, after.2 - before.2));
            break;
        }
    }
    let (text, seconds) = window.expect("in 10 tries no window held the 777 launches whole");
    assert_eq!(agent.value("tracer_kernel_launches_total", inside), Some(777.0));
    let l = labels_of(&text, "tracer_kernel_launches_total", inside);
    assert_eq!(l.get("sampled").map(String::as_str), Some("true"), "{l:?}");
    let rate = agent.value("tracer_kernel_launch_rate", inside).expect("the window's launch rate");
    assert!(seconds > 0.0 && (rate - 777.0 / seconds).abs() < 1e-6 * rate, "777 launches in {seconds} s: {rate}/s");
    assert!((total(&text, "tracer_duty_cycle_ratio") - 1.0 / 3.0).abs() < 1e-9);

    // Between windows: a process is not seen; the busy process's count stands still.
    let mut outside = 0;
    let text = within(&agent, false, "a process run between windows", &mut || {
        outside = run(555);
        agent.metrics()
    });
    assert!(!text.contains(&format!("pid=\"{outside}\"")), "a process run between windows was seen:\n{text}");
    let (mut q1, mut q1_later) = (0.0, 0.0);
    within(&agent, false, "the busy process between windows", &mut || {
        std::thread::sleep(Duration::from_millis(100));
        q1 = queries(&agent);
        std::thread::sleep(Duration::from_millis(800));
        q1_later = queries(&agent);
        String::new()
    });
    assert_eq!(q1_later, q1, "calls counted while the probes were detached");
    assert!(q1 > 100.0, "{q1}");
    // The next window counts again.
    let mut q2 = 0.0;
    within(&agent, true, "the busy process in a window", &mut || {
        std::thread::sleep(Duration::from_millis(300));
        q2 = queries(&agent);
        String::new()
    });
    assert!(q2 > q1 + 50.0, "{q2} after {q1}");
    drop(busy);
    agent.stop();
}

/// `tracer_off_cpu_seconds_total{cause}` of one process (0 when absent).
fn off_cpu(text: &str, pid: u32, cause: &str) -> f64 {
    let (p, c) = (format!("pid=\"{pid}\""), format!("cause=\"{cause}\""));
    text.lines()
        .find(|l| l.starts_with("tracer_off_cpu_seconds_total{") && l.contains(&p) && l.contains(&c))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

/// tests/fakecuda/fourgaps.c under the agent (`--cgroup`): its two 80 ms
/// nanosleeps (main thread and "pipewriter"), its 80 ms read of a pipe and
/// its 80 ms behind the SCHED_FIFO hog are off-CPU seconds by cause; the
/// scheduler lines are no driver calls.
#[test]
fn off_cpu_seconds_of_the_four_gap_program() {
    if !common::root_tests_enabled() {
        return;
    }
    let prog = common::fake_program("fourgaps");
    let cg = common::cgroups::TestCgroup::create("tracer-agent-offcpu");
    let agent = Agent::start("agent-offcpu", free_port(), &["--cgroup", &cg.arg(), "--grace", "60s"]);
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("echo $$ > {} && echo $$ >&2 && exec {}", cg.procs().display(), prog.display()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "fourgaps: {err}");
    let pid: u32 = err.lines().next().unwrap().trim().parse().unwrap();
    // 5 launches, then every interval up to the exit counted
    wait_until("fourgaps' 5 launches and its off-CPU time", LIMIT, || {
        let text = agent.metrics();
        let launches = text
            .lines()
            .find(|l| l.starts_with("tracer_kernel_launches_total{") && l.contains(&format!("pid=\"{pid}\"")))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
        let of = |c: &str| off_cpu(&text, pid, c);
        (launches == Some(5.0) && of("blocked_clock_nanosleep") + of("unknown") >= 0.159 && of("runnable") > 0.0)
            .then_some(())
    });
    let text = agent.metrics();
    let of = |c: &str| off_cpu(&text, pid, c);
    let (sleep, read, runnable, unknown) =
        (of("blocked_clock_nanosleep"), of("blocked_read"), of("runnable"), of("unknown"));
    let family: Vec<&str> = text.lines().filter(|l| l.starts_with("tracer_off_cpu_seconds_total{")).collect();
    eprintln!(
        "pid {pid}: nanosleep {sleep} s, read {read} s, runnable {runnable} s, unknown {unknown} s\n{}",
        family.join("\n")
    );
    // The main thread's sleep alone: blocked from its switch-out (µs after the
    // call) to the timer (80 ms after the call, plus the timer slack).
    assert!((0.0799..0.5).contains(&sleep), "blocked_clock_nanosleep {sleep}:\n{text}");
    // Time whose switch events were lost (or look lost: a record numbered
    // before a later one on its CPU but read after it) is unknown, never
    // another cause: the writer thread's sleep, the read and the time behind
    // the hog are their cause or unknown.
    assert!(sleep + unknown >= 0.159, "two sleeps of 80 ms: {sleep} s + unknown {unknown} s:\n{text}");
    // the read waits for the writer's 80 ms sleep, begun µs before it
    assert!(read < 2.0 && read + unknown >= 0.07, "blocked_read {read}:\n{text}");
    // behind the hog: runnable about 80 ms (more on a busy machine)
    assert!(runnable < 5.0 && runnable + unknown >= 0.07, "runnable {runnable}:\n{text}");
    let l = labels_of(&text, "tracer_off_cpu_seconds_total", pid);
    assert_eq!((l["command"].as_str(), l.get("gpu")), ("fourgaps", None), "{l:?}");
    assert!(
        !text.contains("api=\"clock_nanosleep\"") && !text.contains("api=\"read\""),
        "sched lines as calls:\n{text}"
    );
    agent.stop();
    drop(cg);
}
