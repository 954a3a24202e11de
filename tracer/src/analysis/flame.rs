//! A flame graph's tree: paths of frames (root first) with a weight each,
//! merged where they share a prefix; every node's weight is the sum of its
//! paths'. Children are in name order (a flame graph, not a timeline).
use serde::Serialize;

#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Flame {
    pub name: String,
    /// The weight of the paths through this node (ns, or launches).
    pub value: u64,
    pub children: Vec<Flame>,
}

impl Flame {
    pub fn root(name: &str) -> Flame {
        Flame { name: name.into(), value: 0, children: Vec::new() }
    }

    /// Adds one path (root first) of weight `value`.
    pub fn add(&mut self, path: &[String], value: u64) {
        if value == 0 {
            return;
        }
        self.value = self.value.saturating_add(value);
        let Some((first, rest)) = path.split_first() else { return };
        let i = match self.children.binary_search_by(|c| c.name.as_str().cmp(first)) {
            Ok(i) => i,
            Err(i) => {
                self.children.insert(i, Flame::root(first));
                i
            }
        };
        self.children[i].add(rest, value);
    }

    /// The deepest path's length (the root is 1).
    pub fn depth(&self) -> usize {
        1 + self.children.iter().map(Flame::depth).max().unwrap_or(0)
    }

    /// Every node with its depth and its offset from the left (in weight
    /// units), root first, depth-first: what a renderer draws.
    pub fn boxes(&self) -> Vec<(usize, u64, &Flame)> {
        let mut out = Vec::new();
        fn walk<'a>(n: &'a Flame, depth: usize, x: u64, out: &mut Vec<(usize, u64, &'a Flame)>) {
            out.push((depth, x, n));
            let mut at = x;
            for c in &n.children {
                walk(c, depth + 1, at, out);
                at = at.saturating_add(c.value);
            }
        }
        walk(self, 0, 0, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn paths_merge_on_their_prefix() {
        let mut f = Flame::root("all");
        f.add(&p(&["main", "step", "launch"]), 30);
        f.add(&p(&["main", "load"]), 50);
        f.add(&p(&["main", "step", "launch"]), 10);
        f.add(&p(&["other"]), 0);
        assert_eq!((f.value, f.depth()), (90, 4));
        let b: Vec<(usize, u64, &str, u64)> =
            f.boxes().iter().map(|(d, x, n)| (*d, *x, n.name.as_str(), n.value)).collect();
        assert_eq!(
            b,
            [(0, 0, "all", 90), (1, 0, "main", 90), (2, 0, "load", 50), (2, 50, "step", 40), (3, 50, "launch", 40)]
        );
    }
}
