//! Drains the ring buffer into the assembler, the summary and the writer.
use aya::maps::{MapData, RingBuf};
use serde_json::Value;
use tracer_common::decode;

use crate::calls::Assembler;
use crate::summary::Summary;
use crate::writer::TraceWriter;

pub struct Collector {
    pub asm: Assembler,
    pub summary: Summary,
    pub writer: TraceWriter,
}

impl Collector {
    pub fn emit(&mut self, v: Value) {
        self.summary.add(&v);
        self.writer.write(&v);
    }

    /// Reads every record available now. Returns how many were read.
    pub fn drain(&mut self, ring: &mut RingBuf<MapData>) -> usize {
        let mut n = 0;
        let Collector { asm, summary, writer } = self;
        while let Some(item) = ring.next() {
            n += 1;
            match decode::parse(&item) {
                Ok(rec) => asm.push(&rec, &mut |v| {
                    summary.add(&v);
                    writer.write(&v);
                }),
                Err(e) => {
                    asm.stats.bad_records += 1;
                    log::warn!("undecodable record: {e}");
                }
            }
        }
        n
    }

    pub fn finish_calls(&mut self) {
        let Collector { asm, summary, writer } = self;
        asm.finish(&mut |v| {
            summary.add(&v);
            writer.write(&v);
        });
    }
}
