//! When the default recording asks the injection library for a window
//! (tracer_cupti::sample::DEMAND_ENV): a kernel whose name neither the
//! durations library nor this run knew, once it is launched a second time,
//! or as soon as a graph line names it (a graph runs its kernels at every
//! launch). A kernel launched only once (a fill at start-up) is over before
//! any window could open: asking for it would open a window in every run
//! and never measure it.
use std::collections::{HashMap, HashSet};

#[derive(Debug, Default)]
pub struct WindowDemand {
    /// Names known: the library's, then every one asked for.
    known: HashSet<String>,
    /// Unknown names launched once so far.
    pending: HashSet<String>,
    /// The sizes of the two maps at the last look.
    seen: (usize, usize),
}

impl WindowDemand {
    pub fn new(known: impl IntoIterator<Item = String>) -> Self {
        WindowDemand { known: known.into_iter().collect(), ..Default::default() }
    }

    /// Whether to ask for a window now, given the run's launches by kernel
    /// name and the kernel names its graph lines named (with their counts).
    pub fn check(&mut self, kernels: &HashMap<String, u64>, graph_kernels: &HashMap<String, u64>) -> bool {
        let mut ask = false;
        if (kernels.len(), graph_kernels.len()) != self.seen {
            self.seen = (kernels.len(), graph_kernels.len());
            for (k, &n) in kernels {
                if self.known.contains(k) || self.pending.contains(k) {
                    continue;
                }
                if n >= 2 {
                    self.known.insert(k.clone());
                    ask = true;
                } else {
                    self.pending.insert(k.clone());
                }
            }
            for k in graph_kernels.keys() {
                if !self.known.contains(k) {
                    self.pending.remove(k);
                    self.known.insert(k.clone());
                    ask = true;
                }
            }
        }
        let known = &mut self.known;
        self.pending.retain(|k| {
            let again = kernels.get(k).is_some_and(|&n| n >= 2);
            if again {
                known.insert(k.clone());
                ask = true;
            }
            !again
        });
        ask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: &[(&str, u64)]) -> HashMap<String, u64> {
        v.iter().map(|&(k, n)| (k.to_string(), n)).collect()
    }

    #[test]
    fn a_new_kernel_is_asked_for_at_its_second_launch_a_graph_kernel_at_once() {
        let mut d = WindowDemand::new(["known".to_string()]);
        let none = HashMap::new();
        // the library's kernel: never; a new one launched once: not yet
        assert!(!d.check(&m(&[("known", 50)]), &none));
        assert!(!d.check(&m(&[("known", 50), ("fill", 1)]), &none));
        assert!(!d.check(&m(&[("known", 60), ("fill", 1)]), &none));
        // launched again: asked for, once
        assert!(d.check(&m(&[("known", 60), ("fill", 2)]), &none));
        assert!(!d.check(&m(&[("known", 60), ("fill", 9)]), &none));
        // a kernel first seen with two launches already: at once
        assert!(d.check(&m(&[("known", 60), ("fill", 9), ("loop", 2)]), &none));
        // a graph's kernel: at once, and not again when launched
        let g = m(&[("fusion_1", 1)]);
        assert!(d.check(&m(&[("known", 60), ("fill", 9), ("loop", 2)]), &g));
        assert!(!d.check(&m(&[("known", 60), ("fill", 9), ("loop", 2), ("fusion_1", 3)]), &g));
        // a name pending (launched once) then named by a graph line: asked for once
        let mut d = WindowDemand::new([]);
        assert!(!d.check(&m(&[("k", 1)]), &none));
        assert!(d.check(&m(&[("k", 1)]), &m(&[("k", 1)])));
        assert!(!d.check(&m(&[("k", 2)]), &m(&[("k", 1)])));
    }
}
