//! When the default recording asks the injection library for a window
//! (tracer_cupti::sample::DEMAND_ENV), by kernel configuration (name, grid,
//! block, dynamic shared memory: the durations library's key,
//! launch_configs.rs):
//! - a configuration neither the durations library nor this run knew, once it
//!   is launched a second time, or, named by a graph line (a graph runs its
//!   kernels at every launch), at the first graph launch after that. A kernel
//!   launched only once (a fill at start-up) is over before any window could
//!   open: asking for it would open a window in every run and never measure
//!   it.
//! - a configuration the library has with fewer than
//!   `crate::analysis::durations_library::MIN_SAMPLES` samples (measured in a
//!   window or two of earlier runs, often in their warm-up): once the run has
//!   launched it [`UNDER_MEASURED_LAUNCHES`] times, or made that many graph
//!   launches since a graph line named it. A configuration the program runs
//!   that often is measured by one window; one launched less often does not
//!   cost a window in every run. (Asked for when its graph was only built,
//!   in a warm-up, the window would close before the loop that runs it.)
//!
//! So a new geometry of a kernel the library knows by name is new work (a
//! JAX graph node whose grid the library never saw was timed by the median
//! of its name's other geometries, +25 %).
use std::collections::HashSet;

use crate::collect::launch_configs::LaunchConfigs;

/// Launches in this run after which a configuration the library has too few samples of is asked for.
pub const UNDER_MEASURED_LAUNCHES: u64 = 16;

/// What a window was asked for: how many configurations (of them, how many the library had
/// too few samples of), and the first (an index into `LaunchConfigs::configs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asked {
    pub configs: u32,
    pub under_measured: u32,
    pub first: usize,
}

#[derive(Debug, Default)]
pub struct WindowDemand {
    /// Configurations known: the library's well-measured ones, then every one asked for.
    known: HashSet<u64>,
    /// The library's configurations with too few samples, not asked for yet.
    under_measured: HashSet<u64>,
    /// Configurations of the run not settled yet (index into `LaunchConfigs::configs`).
    open: Vec<usize>,
    /// How many of the run's configurations were looked at.
    seen: usize,
}

impl WindowDemand {
    /// `known`: the library's configurations with enough samples; `under_measured`: those with
    /// too few (asked for as the module header says).
    pub fn new(known: impl IntoIterator<Item = u64>, under_measured: impl IntoIterator<Item = u64>) -> Self {
        let known: HashSet<u64> = known.into_iter().collect();
        let under_measured = under_measured.into_iter().filter(|k| !known.contains(k)).collect();
        WindowDemand { known, under_measured, ..Default::default() }
    }

    /// Whether to ask for a window now, given the run's configurations so far: what it is asked for.
    pub fn check(&mut self, run: &LaunchConfigs) -> Option<Asked> {
        let configs = run.configs();
        self.open.extend(self.seen..configs.len());
        self.seen = configs.len();
        let mut ask: Option<Asked> = None;
        let graph_launches = run.graph_launches();
        let (known, under) = (&mut self.known, &mut self.under_measured);
        self.open.retain(|&i| {
            let c = &configs[i];
            if known.contains(&c.key) {
                return false;
            }
            let few = under.contains(&c.key);
            let (need, need_graph) = if few { (UNDER_MEASURED_LAUNCHES, UNDER_MEASURED_LAUNCHES) } else { (2, 1) };
            let graph_runs = c.named_at.map(|at| graph_launches - at);
            if c.launches >= need || graph_runs.is_some_and(|n| n >= need_graph) {
                known.insert(c.key);
                under.remove(&c.key);
                let a = ask.get_or_insert(Asked { configs: 0, under_measured: 0, first: i });
                a.configs += 1;
                a.under_measured += few as u32;
                return false;
            }
            true
        });
        ask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: [u32; 7] = [1, 1, 1, 32, 1, 1, 0];

    fn key(name: &str, g: [u32; 7]) -> u64 {
        tracer_cupti::sample::kernel_key(name.as_bytes(), [g[0], g[1], g[2]], [g[3], g[4], g[5]], g[6])
    }

    fn launches(c: &mut LaunchConfigs, name: &str, g: [u32; 7], n: u64) {
        for _ in 0..n {
            c.launch(1, 0x10 + name.len() as u64 + g[0] as u64, name, g);
        }
    }

    #[test]
    fn a_new_configuration_is_asked_for_at_its_second_launch_a_graph_node_at_its_graphs_launch() {
        let mut d = WindowDemand::new([key("known", G)], []);
        let mut c = LaunchConfigs::default();
        // the library's configuration: never; a new one launched once: not yet
        launches(&mut c, "known", G, 50);
        assert_eq!(d.check(&c), None);
        launches(&mut c, "fill", G, 1);
        assert_eq!(d.check(&c), None);
        launches(&mut c, "known", G, 10);
        assert_eq!(d.check(&c), None);
        // launched again: asked for, once
        launches(&mut c, "fill", G, 1);
        assert_eq!(d.check(&c), Some(Asked { configs: 1, under_measured: 0, first: 1 }));
        launches(&mut c, "fill", G, 7);
        assert_eq!(d.check(&c), None);
        // a known kernel in a geometry the library never measured: new work
        let other = [8, 1, 1, 32, 1, 1, 0];
        launches(&mut c, "known", other, 1);
        assert_eq!(d.check(&c), None);
        launches(&mut c, "known", other, 1);
        assert_eq!(d.check(&c), Some(Asked { configs: 1, under_measured: 0, first: 2 }));
        // a graph's node: at the first graph launch after it was named, and not again
        node(&mut c, "fusion_1");
        assert_eq!(d.check(&c), None);
        graph_launch(&mut c);
        assert_eq!(d.check(&c), Some(Asked { configs: 1, under_measured: 0, first: 3 }));
        launches(&mut c, "fusion_1", G, 3);
        graph_launch(&mut c);
        assert_eq!(d.check(&c), None);
    }

    #[test]
    fn a_configuration_the_library_has_few_samples_of_is_asked_for_once_when_launched_often() {
        let mut d = WindowDemand::new([key("known", G)], [key("few", G), key("rare", G), key("known", G)]);
        let mut c = LaunchConfigs::default();
        // launched fewer than UNDER_MEASURED_LAUNCHES times: not asked for
        launches(&mut c, "known", G, 50);
        launches(&mut c, "few", G, 15);
        launches(&mut c, "rare", G, 3);
        assert_eq!(d.check(&c), None);
        assert_eq!(d.check(&c), None);
        // the 16th launch: asked for, once
        launches(&mut c, "few", G, 1);
        assert_eq!(d.check(&c), Some(Asked { configs: 1, under_measured: 1, first: 1 }));
        launches(&mut c, "few", G, 400);
        assert_eq!(d.check(&c), None);
        // one a graph line names: after 16 graph launches since, once (graph launches
        // before it was named do not count)
        graph_launch(&mut c);
        node(&mut c, "rare");
        for _ in 0..15 {
            graph_launch(&mut c);
            node(&mut c, "rare");
        }
        assert_eq!(d.check(&c), None);
        graph_launch(&mut c);
        assert_eq!(d.check(&c), Some(Asked { configs: 1, under_measured: 1, first: 2 }));
        launches(&mut c, "rare", G, 30);
        graph_launch(&mut c);
        assert_eq!(d.check(&c), None);
        // "known", in both lists, counts as known: its 50 launches above never asked for a window
    }

    /// Configurations settled in one look are one demand: counted, the first named.
    #[test]
    fn configurations_asked_for_together_are_one_demand() {
        let mut d = WindowDemand::new([], [key("few", G)]);
        let mut c = LaunchConfigs::default();
        launches(&mut c, "a", G, 1);
        launches(&mut c, "b", G, 1);
        launches(&mut c, "few", G, 15);
        assert_eq!(d.check(&c), None);
        launches(&mut c, "a", G, 1);
        launches(&mut c, "b", G, 1);
        launches(&mut c, "few", G, 1);
        assert_eq!(d.check(&c), Some(Asked { configs: 3, under_measured: 1, first: 0 }));
        assert_eq!(c.name(0), "a");
        assert_eq!(c.name(2), "few");
        assert_eq!(c.name(3), "");
        assert_eq!(d.check(&c), None);
    }

    fn node(c: &mut LaunchConfigs, name: &str) {
        c.observe(&Line::Value(serde_json::json!({"type": "graph", "op": "graph_exec_kernel_node_set_params",
            "kernel": name, "grid": [1, 1, 1], "block": [32, 1, 1], "shared_mem": 0})));
    }

    fn graph_launch(c: &mut LaunchConfigs) {
        c.observe(&Line::Value(serde_json::json!({"type": "graph", "op": "graph_launch", "name": "cuGraphLaunch"})));
    }

    use crate::decode::fastline::Line;
}
