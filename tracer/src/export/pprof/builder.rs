//! Builds a [`Profile`] from samples at stacks: the string table, one
//! function per (name, file), one mapping per (process, module), one
//! location per native address (per mapping) or per Python (function,
//! line), and the samples that refer to them. Knows nothing of traces.
use std::collections::HashMap;

use super::proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};

/// What a frame is (the trace format's `kind`).
pub use tracer_format::line::vocab::FrameKind;

/// One frame of a sample's stack, as the trace has it.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    pub kind: FrameKind,
    pub function: &'a str,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
    /// The mapped file of a native frame.
    pub module: Option<&'a str>,
    /// The address in the process.
    pub addr: Option<u64>,
    /// The offset of `addr` in `module`.
    pub offset: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum LocKey {
    /// A native frame: its address in its mapping.
    Mapped { mapping: u64, addr: u64, function: u64, line: i64 },
    /// A frame of no mapping at one address of one process (jit, unknown).
    Unmapped { pid: u32, addr: u64, function: u64 },
    /// A Python frame (or any frame without an address): its function and line.
    Source { function: u64, line: i64 },
}

/// The address range a mapping's frames showed: the lowest load address
/// (`addr - offset`) and the highest address.
struct Range {
    start: u64,
    limit: u64,
}

pub struct ProfileBuilder {
    p: Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<(i64, i64), u64>,
    mappings: HashMap<(u32, i64), u64>,
    ranges: Vec<Range>,
    locations: HashMap<LocKey, u64>,
}

impl ProfileBuilder {
    /// A profile whose samples have these (type, unit) values, in order.
    pub fn new(sample_types: &[(&str, &str)]) -> ProfileBuilder {
        let mut b = ProfileBuilder {
            p: Profile::default(),
            strings: HashMap::new(),
            functions: HashMap::new(),
            mappings: HashMap::new(),
            ranges: Vec::new(),
            locations: HashMap::new(),
        };
        b.string("");
        for &(ty, unit) in sample_types {
            let v = ValueType { r#type: b.string(ty), unit: b.string(unit) };
            b.p.sample_type.push(v);
        }
        b
    }

    /// The string-table index of `s`.
    pub fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.p.string_table.len() as i64;
        self.p.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), i);
        i
    }

    /// A line of the profile's comments.
    pub fn comment(&mut self, s: &str) {
        let i = self.string(s);
        self.p.comment.push(i);
    }

    /// A sample of process `pid` at `frames` (leaf first) with `values`
    /// (one per sample type) and numeric labels.
    pub fn sample(&mut self, pid: u32, frames: &[Frame<'_>], value: Vec<i64>, labels: &[(&str, i64)]) {
        debug_assert_eq!(value.len(), self.p.sample_type.len());
        let location_id = frames.iter().map(|f| self.location(pid, f)).collect();
        let label = labels.iter().map(|&(k, n)| Label { key: self.string(k), num: n, ..Label::default() }).collect();
        self.p.sample.push(Sample { location_id, value, label });
    }

    fn function(&mut self, name: &str, file: Option<&str>) -> u64 {
        let key = (self.string(name), file.map_or(0, |f| self.string(f)));
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.p.function.len() as u64 + 1;
        self.p.function.push(Function { id, name: key.0, system_name: key.0, filename: key.1, start_line: 0 });
        self.functions.insert(key, id);
        id
    }

    fn mapping(&mut self, pid: u32, module: &str, addr: u64, offset: u64) -> u64 {
        let key = (pid, self.string(module));
        let id = match self.mappings.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.p.mapping.len() as u64 + 1;
                self.p.mapping.push(Mapping {
                    id,
                    filename: key.1,
                    has_functions: true,
                    has_filenames: true,
                    has_line_numbers: true,
                    ..Mapping::default()
                });
                self.ranges.push(Range { start: u64::MAX, limit: 0 });
                self.mappings.insert(key, id);
                id
            }
        };
        let r = &mut self.ranges[id as usize - 1];
        r.start = r.start.min(addr.saturating_sub(offset));
        r.limit = r.limit.max(addr.saturating_add(1));
        id
    }

    fn location(&mut self, pid: u32, f: &Frame<'_>) -> u64 {
        // a native frame's file is its source file; one without names its module
        let file = f.file.or(if f.kind == FrameKind::Python { None } else { f.module });
        let function = self.function(f.function, file);
        let line = f.line.map_or(0, i64::from);
        let (key, mapping, address) = match (f.kind, f.module, f.addr) {
            (FrameKind::Python, _, _) | (_, _, None) => (LocKey::Source { function, line }, 0, 0),
            (_, Some(m), Some(a)) => {
                let mapping = self.mapping(pid, m, a, f.offset.unwrap_or(0));
                (LocKey::Mapped { mapping, addr: a, function, line }, mapping, a)
            }
            (_, None, Some(a)) => (LocKey::Unmapped { pid, addr: a, function }, 0, a),
        };
        if let Some(&id) = self.locations.get(&key) {
            return id;
        }
        let id = self.p.location.len() as u64 + 1;
        self.p.location.push(Location {
            id,
            mapping_id: mapping,
            address,
            line: vec![Line { function_id: function, line }],
            is_folded: false,
        });
        self.locations.insert(key, id);
        id
    }

    /// The profile, with `default_type` (a sample type's name) preferred
    /// by readers, `time_nanos` (wall clock at the start) and the span.
    pub fn finish(mut self, default_type: &str, time_nanos: i64, duration_nanos: i64) -> Profile {
        for (m, r) in self.p.mapping.iter_mut().zip(&self.ranges) {
            m.memory_start = r.start;
            m.memory_limit = r.limit;
        }
        self.executables_first();
        self.p.default_sample_type = self.string(default_type);
        self.p.time_nanos = time_nanos;
        self.p.duration_nanos = duration_nanos;
        self.p
    }
}

impl ProfileBuilder {
    /// Readers take `mapping[0]` for the main binary: the mappings of
    /// executables (no `.so` in the name) go first, in order, then the
    /// shared objects; ids are renumbered and locations follow.
    fn executables_first(&mut self) {
        let shared = |m: &Mapping| self.p.string_table[m.filename as usize].contains(".so");
        let mut order: Vec<usize> = (0..self.p.mapping.len()).collect();
        order.sort_by_key(|&i| shared(&self.p.mapping[i]));
        let mut new_id = vec![0u64; order.len() + 1];
        let mut mapping = Vec::with_capacity(order.len());
        for (n, &i) in order.iter().enumerate() {
            let mut m = self.p.mapping[i];
            new_id[m.id as usize] = n as u64 + 1;
            m.id = n as u64 + 1;
            mapping.push(m);
        }
        self.p.mapping = mapping;
        for l in self.p.location.iter_mut().filter(|l| l.mapping_id != 0) {
            l.mapping_id = new_id[l.mapping_id as usize];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py<'a>(function: &'a str, file: &'a str, line: u32) -> Frame<'a> {
        Frame {
            kind: FrameKind::Python,
            function,
            file: Some(file),
            line: Some(line),
            module: None,
            addr: None,
            offset: None,
        }
    }

    fn native<'a>(function: &'a str, module: &'a str, addr: u64, offset: u64) -> Frame<'a> {
        Frame {
            kind: FrameKind::Native,
            function,
            file: None,
            line: None,
            module: Some(module),
            addr: Some(addr),
            offset: Some(offset),
        }
    }

    #[test]
    fn tables_are_shared_and_ids_start_at_one() {
        let mut b = ProfileBuilder::new(&[("launches", "count"), ("gpu_time", "nanoseconds")]);
        let launch = native("cuLaunchKernel", "/lib/libcuda.so.1", 0x7f00_0000_1234, 0x1234);
        let a = [launch, py("step", "train.py", 10), py("main", "train.py", 30)];
        let c = [launch, py("step", "train.py", 11), py("main", "train.py", 30)];
        b.sample(7, &a, vec![2, 500], &[("pid", 7)]);
        b.sample(7, &c, vec![1, 100], &[("pid", 7)]);
        b.sample(8, &a, vec![1, 0], &[("pid", 8)]);
        b.comment("basis");
        let p = b.finish("gpu_time", 5, 6);
        assert_eq!(p.string_table[0], "");
        assert_eq!(p.sample.len(), 3);
        // functions: cuLaunchKernel (file: module), step, main
        assert_eq!(p.function.len(), 3);
        assert_eq!(p.function.iter().map(|f| f.id).collect::<Vec<_>>(), [1, 2, 3]);
        // one mapping per process of libcuda
        assert_eq!(p.mapping.len(), 2);
        assert_eq!((p.mapping[0].memory_start, p.mapping[0].memory_limit), (0x7f00_0000_0000, 0x7f00_0000_1235));
        // locations: libcuda in pid 7, in pid 8; step:10, step:11, main:30
        assert_eq!(p.location.len(), 5);
        assert_eq!(p.sample[0].location_id, [1, 2, 3]);
        assert_eq!(p.sample[1].location_id, [1, 4, 3]);
        assert_eq!(p.sample[2].location_id, [5, 2, 3]);
        let s = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(s(p.default_sample_type), "gpu_time");
        assert_eq!(s(p.comment[0]), "basis");
        assert_eq!(s(p.sample_type[1].r#type), "gpu_time");
        assert_eq!(s(p.sample_type[1].unit), "nanoseconds");
        assert_eq!(s(p.function[0].filename), "/lib/libcuda.so.1");
        assert_eq!(s(p.function[1].filename), "train.py");
        assert_eq!(p.location[3].line, [Line { function_id: 2, line: 11 }]);
        assert_eq!((p.time_nanos, p.duration_nanos), (5, 6));
    }

    #[test]
    fn encodes_and_decodes_unchanged() {
        use prost::Message as _;
        let mut b = ProfileBuilder::new(&[("launches", "count")]);
        b.sample(1, &[py("f", "a.py", 1)], vec![3], &[]);
        let p = b.finish("launches", 0, 0);
        let bytes = p.encode_to_vec();
        assert_eq!(Profile::decode(bytes.as_slice()).unwrap(), p);
    }
}
