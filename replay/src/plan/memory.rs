//! Device address ranges of the recording, and the parameter words that point
//! into them (relocation candidates).

use std::collections::{BTreeMap, HashMap};

use super::types::{AddrRange, RangeKind, RelocCandidate};
use crate::recording::KernelLayout;

#[derive(Debug, Default)]
pub struct Ranges {
    pub all: Vec<AddrRange>,
    /// Live ranges kernels can point to, by start address (per pid).
    live: BTreeMap<(u32, u64), usize>,
    /// Live reservations (cuMemAddressReserve), by start.
    reserved: BTreeMap<(u32, u64), usize>,
    /// Physical allocations of cuMemCreate: handle -> size.
    pub vmm_handles: HashMap<(u32, u64), u64>,
}

impl Ranges {
    pub fn add(
        &mut self,
        pid: u32,
        start: u64,
        size: u64,
        kind: RangeKind,
        line: usize,
        global: Option<(usize, String)>,
    ) -> usize {
        let id = self.all.len();
        self.all.push(AddrRange { id, pid, start, size, kind, line, freed_line: None, global });
        if kind == RangeKind::VmmReserve {
            self.reserved.insert((pid, start), id);
        } else if let Some(old) = self.live.insert((pid, start), id) {
            // A new range at a live range's start: the old one is gone (missed free).
            if self.all[old].freed_line.is_none() {
                self.all[old].freed_line = Some(line);
            }
        }
        id
    }

    /// End the live range starting at `start` (free, unmap, unregister); false if none.
    pub fn free(&mut self, pid: u32, start: u64, line: usize, reservation: bool) -> bool {
        let map = if reservation { &mut self.reserved } else { &mut self.live };
        match map.remove(&(pid, start)) {
            Some(id) => {
                self.all[id].freed_line = Some(line);
                true
            }
            None => false,
        }
    }

    /// cuMemUnmap of `[start, start+size)`: ends the mappings inside it.
    pub fn unmap(&mut self, pid: u32, start: u64, size: u64, line: usize) {
        let ids: Vec<(u64, usize)> = self
            .live
            .range((pid, start)..(pid, start.saturating_add(size)))
            .filter(|(_, id)| self.all[**id].kind == RangeKind::VmmMap)
            .map(|(k, id)| (k.1, *id))
            .collect();
        for (s, id) in ids {
            self.live.remove(&(pid, s));
            self.all[id].freed_line = Some(line);
        }
    }

    /// The live range containing `addr` (ranges of unknown size contain only their start).
    pub fn find(&self, pid: u32, addr: u64) -> Option<usize> {
        let (_, &id) = self.live.range((pid, 0)..=(pid, addr)).next_back()?;
        let r = &self.all[id];
        let inside = if r.size == 0 { addr == r.start } else { addr < r.end() };
        inside.then_some(id)
    }

    /// Relocation candidates of a launch's parameter buffer: every 8-aligned
    /// 8-byte word inside a parameter (of the layout; the whole buffer without
    /// one) whose value lies in a live range.
    pub fn candidates(
        &self,
        pid: u32,
        op: usize,
        line: usize,
        params: &[u8],
        layout: Option<&KernelLayout>,
    ) -> Vec<RelocCandidate> {
        let whole;
        let spans: &[(u32, u32)] = match layout {
            Some(l) => &l.params,
            None => {
                whole = [(0u32, params.len() as u32)];
                &whole
            }
        };
        let mut out = Vec::new();
        for (pi, &(off, size)) in spans.iter().enumerate() {
            let mut o = off.next_multiple_of(8);
            while o + 8 <= off + size && (o as usize + 8) <= params.len() {
                let v = u64::from_le_bytes(params[o as usize..o as usize + 8].try_into().unwrap());
                if v != 0
                    && let Some(range) = self.find(pid, v)
                {
                    out.push(RelocCandidate {
                        op,
                        line,
                        offset: o,
                        param: pi,
                        whole_param: layout.is_some() && off == o && size == 8,
                        value: v,
                        range,
                    });
                }
                o += 8;
            }
        }
        out
    }
}

/// Address windows replay must map: the union of the device ranges (device
/// allocations and VMM mappings over the whole run), each rounded out to
/// `granularity` and merged. `(start, size)`, sorted.
pub fn windows(ranges: &[AddrRange], granularity: u64) -> Vec<(u64, u64)> {
    let g = granularity.max(1);
    let mut iv: Vec<(u64, u64)> = ranges
        .iter()
        .filter(|r| r.needs_device_memory() && r.size > 0)
        .map(|r| (r.start / g * g, r.end().div_ceil(g) * g))
        .collect();
    iv.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, e) in iv {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out.into_iter().map(|(s, e)| (s, e - s)).collect()
}
