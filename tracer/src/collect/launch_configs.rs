//! The run's kernel configurations (name, grid, block, dynamic shared
//! memory), counted from the lines as they are written, under the key the
//! durations library and the injection library's windows use
//! (`tracer_cupti::sample::kernel_key`): what windows on demand
//! (window_demand.rs) compare with what the library has measured. A launch
//! counts once per line; a graph line that names a kernel node (added,
//! updated, captured) marks its configuration as one a graph runs at every
//! launch, with the number of graph launches the run had made then, so that
//! the graph launches since can be told (a graph is built and updated in a
//! program's warm-up, and runs its kernels only when launched).
//!
//! Hot path: launch lines are looked up by (process, function handle,
//! geometry) without hashing the name; the key, whose hash runs over the
//! kernel's name, is computed once per new entry (and again when a handle
//! is reused for a kernel of another name).
use std::collections::HashMap;

use serde_json::Value;

use crate::collect::gpu_durations::u32x3;
use crate::decode::fastcall::Norm;
use crate::decode::fastline::Line;

/// grid x, y, z, block x, y, z, dynamic shared memory.
pub type Geometry = [u32; 7];

/// One configuration of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `tracer_cupti::sample::kernel_key`.
    pub key: u64,
    /// Launch lines of it.
    pub launches: u64,
    /// Named by a graph line (a node or a captured launch): runs at every launch of its graph.
    /// The run's graph launches when it was first named.
    pub named_at: Option<u64>,
}

#[derive(Debug, Default)]
pub struct LaunchConfigs {
    /// (pid, function handle, geometry) -> (index into `configs`, the kernel's name).
    by_call: HashMap<(u32, u64, Geometry), (usize, String)>,
    by_key: HashMap<u64, usize>,
    configs: Vec<Config>,
    /// The kernel's name of each configuration, as `configs`.
    names: Vec<String>,
    /// The time (`ts`) of the last launch or graph line looked at.
    last_ts: u64,
    /// Graph launch lines so far.
    graph_launches: u64,
}

fn key_of(name: &str, g: &Geometry) -> u64 {
    tracer_cupti::sample::kernel_key(name.as_bytes(), [g[0], g[1], g[2]], [g[3], g[4], g[5]], g[6])
}

impl LaunchConfigs {
    /// Every configuration so far, in the order first seen.
    pub fn configs(&self) -> &[Config] {
        &self.configs
    }

    /// Graph launch lines so far.
    pub fn graph_launches(&self) -> u64 {
        self.graph_launches
    }

    /// The time of the last launch or graph line looked at (0: none yet): how far behind the
    /// program a demand made now is.
    pub fn last_ts(&self) -> u64 {
        self.last_ts
    }

    /// The kernel's name of configuration `i` (an index into [`LaunchConfigs::configs`]).
    pub fn name(&self, i: usize) -> &str {
        self.names.get(i).map_or("", String::as_str)
    }

    fn entry(&mut self, key: u64, name: &str) -> usize {
        let n = self.configs.len();
        *self.by_key.entry(key).or_insert_with(|| {
            self.configs.push(Config { key, launches: 0, named_at: None });
            self.names.push(name.to_string());
            n
        })
    }

    /// A launch of kernel `name` (function handle `f` in process `pid`).
    pub fn launch(&mut self, pid: u32, f: u64, name: &str, g: Geometry) {
        let i = match self.by_call.get(&(pid, f, g)) {
            Some((i, n)) if n == name => *i,
            _ => {
                let i = self.entry(key_of(name, &g), name);
                self.by_call.insert((pid, f, g), (i, name.to_string()));
                i
            }
        };
        self.configs[i].launches += 1;
    }

    /// A line the recording writes.
    pub fn observe(&mut self, l: &Line) {
        match l {
            Line::Launch(l) => {
                self.last_ts = l.hdr.ts;
                if let Some(k) = l.kernel {
                    let a = &l.args;
                    let d = |i: usize| a[i] as u32;
                    self.launch(l.hdr.pid, a[0], k, [d(1), d(2), d(3), d(4), d(5), d(6), d(7)]);
                }
            }
            Line::Call(c) => {
                if let Norm::LaunchEx { f, kernel: Some(k), cfg: Some(cfg), .. } = &c.norm {
                    self.last_ts = c.hdr.ts;
                    let (gr, b) = (cfg.grid, cfg.block);
                    self.launch(c.hdr.pid, *f, k, [gr[0], gr[1], gr[2], b[0], b[1], b[2], cfg.shared_mem]);
                }
            }
            Line::Value(v) => self.observe_value(v),
        }
    }

    /// Launch lines of the general path and graph lines: each key hashed (these lines are rare).
    fn observe_value(&mut self, v: &Value) {
        if let Some(ts) = v["ts"].as_u64().filter(|_| v["type"] == "graph" || v["op"] == "launch") {
            self.last_ts = ts;
        }
        if v["op"] == "graph_launch" {
            self.graph_launches += 1;
            return;
        }
        let (Some(name), Some(grid), Some(block)) = (v["kernel"].as_str(), u32x3(&v["grid"]), u32x3(&v["block"]))
        else {
            return;
        };
        let smem = v["shared_mem"].as_u64().unwrap_or(0) as u32;
        let graph = v["type"] == "graph" || v.get("capture").is_some();
        let launch = v["op"] == "launch" && v.get("capture").is_none();
        if !graph && !launch {
            return;
        }
        let g = [grid[0], grid[1], grid[2], block[0], block[1], block[2], smem];
        let i = self.entry(key_of(name, &g), name);
        let c = &mut self.configs[i];
        if graph && c.named_at.is_none() {
            c.named_at = Some(self.graph_launches);
        }
        c.launches += launch as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn launches_count_per_configuration_across_handles_and_processes() {
        let mut c = LaunchConfigs::default();
        let g = [4, 1, 1, 128, 1, 1, 0];
        c.launch(1, 0x10, "relu", g);
        c.launch(1, 0x10, "relu", g);
        // the same kernel and geometry in another process, under another handle: one configuration
        c.launch(2, 0x99, "relu", g);
        // another geometry: another configuration
        c.launch(1, 0x10, "relu", [8, 1, 1, 128, 1, 1, 0]);
        // a handle reused for another kernel
        c.launch(1, 0x10, "gelu", g);
        let want = |name: &str, g: Geometry, launches| Config { key: key_of(name, &g), launches, named_at: None };
        assert_eq!(c.configs(), &[want("relu", g, 3), want("relu", [8, 1, 1, 128, 1, 1, 0], 1), want("gelu", g, 1)]);
        assert_eq!(
            c.configs()[0].key,
            tracer_cupti::sample::kernel_key(b"relu", [4, 1, 1], [128, 1, 1], 0),
            "the injection library's key"
        );
    }

    #[test]
    fn fast_launch_lines_count_by_their_arguments() {
        let mut c = LaunchConfigs::default();
        let hdr = tracer_common::event::Header { kind: 0, func: 0, cpu: 0, seq: 0, ts: 1, pid: 7, tid: 7 };
        // f, grid 3x2x1, block 64x1x1, 512 bytes of shared memory, stream, kernelParams, extra
        let args = [0xf0, 3, 2, 1, 64, 1, 1, 512, 0x5, 0x6, 0];
        let line = |kernel| crate::decode::fastline::LaunchLine {
            hdr,
            name: "cuLaunchKernel",
            args,
            kernel,
            returned: None,
            params: None,
            device: Some(0),
            stack: None,
        };
        c.observe(&Line::Launch(line(Some("k"))));
        c.observe(&Line::Launch(line(Some("k"))));
        // a launch of a handle without a name has no configuration
        c.observe(&Line::Launch(line(None)));
        let key = tracer_cupti::sample::kernel_key(b"k", [3, 2, 1], [64, 1, 1], 512);
        assert_eq!(c.configs(), &[Config { key, launches: 2, named_at: None }]);
    }

    #[test]
    fn launch_ex_lines_count_by_their_config() {
        use crate::decode::args::LaunchConfig;
        use crate::decode::fastcall::{CallLine, ConfigArg};
        let mut c = LaunchConfigs::default();
        let hdr = tracer_common::event::Header { kind: 0, func: 0, cpu: 0, seq: 0, ts: 1, pid: 7, tid: 7 };
        let spec = tracer_common::funcs::lookup("cuLaunchKernelEx").and_then(|id| id.spec()).unwrap();
        let line = |cfg: Option<LaunchConfig>| {
            Line::Call(CallLine {
                hdr,
                spec,
                variant: 0,
                args: [0; tracer_common::event::MAX_ARGS],
                returned: None,
                norm: Norm::LaunchEx { f: 0x77, kernel: Some("kex"), cfg, config_arg: ConfigArg::Parsed },
                device: Default::default(),
                stack: None,
            })
        };
        let cfg = LaunchConfig {
            grid: [5, 1, 1],
            block: [256, 1, 1],
            shared_mem: 1024,
            stream: 0,
            num_attrs: 0,
            attrs: vec![],
        };
        c.observe(&line(Some(cfg.clone())));
        c.observe(&line(Some(cfg)));
        // a config that could not be read: no geometry, no configuration
        c.observe(&line(None));
        let key = tracer_cupti::sample::kernel_key(b"kex", [5, 1, 1], [256, 1, 1], 1024);
        assert_eq!(c.configs(), &[Config { key, launches: 2, named_at: None }]);
    }

    #[test]
    fn graph_lines_mark_their_nodes_and_general_launch_lines_count() {
        let mut c = LaunchConfigs::default();
        c.observe(&Line::Value(json!({"type": "graph", "op": "graph_launch", "name": "cuGraphLaunch"})));
        let node = json!({"type": "graph", "op": "graph_exec_kernel_node_set_params", "kernel": "gemm_fusion_dot_4",
            "grid": [128, 1, 1], "block": [64, 1, 1], "shared_mem": 32768});
        c.observe(&Line::Value(node));
        let coop = json!({"type": "kernel", "op": "launch", "name": "cuLaunchCooperativeKernel", "kernel": "k",
            "grid": [2, 1, 1], "block": [32, 1, 1], "shared_mem": 0});
        c.observe(&Line::Value(coop.clone()));
        c.observe(&Line::Value(coop));
        // a launch recorded by stream capture runs with its graph
        let captured = json!({"type": "kernel", "op": "launch", "kernel": "k", "capture": 7,
            "grid": [2, 1, 1], "block": [32, 1, 1], "shared_mem": 0});
        c.observe(&Line::Value(captured));
        // a graph line without a geometry names no configuration; graph launches are counted
        c.observe(&Line::Value(json!({"type": "graph", "op": "graph_instantiate", "kernel": "x"})));
        c.observe(&Line::Value(json!({"type": "graph", "op": "graph_launch", "name": "cuGraphLaunch"})));
        assert_eq!(c.graph_launches(), 2);
        let key = |n: &str, g: [u32; 3], b: [u32; 3], s| tracer_cupti::sample::kernel_key(n.as_bytes(), g, b, s);
        assert_eq!(
            c.configs(),
            &[
                Config {
                    key: key("gemm_fusion_dot_4", [128, 1, 1], [64, 1, 1], 32768),
                    launches: 0,
                    named_at: Some(1)
                },
                Config { key: key("k", [2, 1, 1], [32, 1, 1], 0), launches: 2, named_at: Some(1) },
            ]
        );
    }
}
