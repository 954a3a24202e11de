//! Lines that do not come from the eBPF side: NVML power samples and the
//! program's phase markers. Each has its own thread; both feed one bounded
//! channel that the collection loop drains every tick, so neither can stall
//! the collector, and neither blocks on it (a full channel drops and counts).
use std::ffi::OsString;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use serde_json::{Value, json};

use crate::collect::collector::Collector;
use crate::collect::markers::{self, MarkerFifo, MarkerReader};
use crate::collect::power::{Power, PowerOptions};
use crate::collect::spawn::RunAs;

/// Lines queued between the side threads and the writer: 100 samples per
/// GPU per second at the default interval, drained every 10 ms.
const CHANNEL_LINES: usize = 16384;

/// What `tracer record` asked of the side lines (from its command line).
#[derive(Debug, Clone, Copy)]
pub struct SideOptions {
    /// `--no-markers`: no marker FIFO.
    pub no_markers: bool,
    /// Attached with `-p`: a running process's environment cannot be set.
    pub attached: bool,
    /// `--no-power`: no NVML sampling.
    pub no_power: bool,
    /// `--power-interval-ms`.
    pub power_interval_ms: u64,
}

pub struct Side {
    tx: Option<SyncSender<Value>>,
    rx: Option<Receiver<Value>>,
    fifo: Option<MarkerFifo>,
    markers_header: Value,
    reader: Option<MarkerReader>,
    power: Option<Power>,
}

impl Side {
    /// Before the command is created: the marker FIFO (its path goes into
    /// the command's environment). Failing to create it is not fatal: the
    /// header says why markers are off.
    pub fn new(args: &SideOptions, run_as: Option<&RunAs>) -> Side {
        let (tx, rx) = sync_channel(CHANNEL_LINES);
        let (fifo, markers_header) = if args.no_markers {
            (None, json!({ "enabled": false, "reason": "disabled (--no-markers)" }))
        } else if args.attached {
            (
                None,
                json!({ "enabled": false, "reason": "attached with -p: a running process's environment cannot be set" }),
            )
        } else {
            match MarkerFifo::create(run_as) {
                Ok(f) => {
                    let h = json!({
                        "enabled": true,
                        "env": markers::ENV_VAR,
                        "path": f.path.display().to_string(),
                        "protocol": "OP LABEL [ts=NS] [pid=PID] [tid=TID] [tokens=N], OP: phase|iteration|mark (docs/markers.md)",
                    });
                    (Some(f), h)
                }
                Err(e) => {
                    let reason = format!("{e:#}");
                    log::warn!("markers disabled: {reason}");
                    (None, json!({ "enabled": false, "reason": reason }))
                }
            }
        };
        Side { tx: Some(tx), rx: Some(rx), fifo, markers_header, reader: None, power: None }
    }

    /// Variables to add to the command's environment.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        self.fifo.iter().map(MarkerFifo::env).collect()
    }

    /// Once the command exists (suspended) or is attached to: starts the
    /// marker reader and the NVML sampler (which waits for NVML to load).
    pub fn start(&mut self, args: &SideOptions, root_pid: u32, libcuda: &Path) {
        let tx = self.tx.take().expect("Side::start called twice");
        if let Some(fifo) = self.fifo.take() {
            match MarkerReader::start(fifo, root_pid, tx.clone()) {
                Ok(r) => self.reader = Some(r),
                Err(e) => self.markers_header = json!({ "enabled": false, "reason": format!("{e:#}") }),
            }
        }
        self.power = Some(if args.no_power {
            Power::disabled("disabled (--no-power)")
        } else {
            Power::start(
                &PowerOptions { interval_ms: args.power_interval_ms, libcuda: Some(libcuda.to_path_buf()) },
                root_pid,
                tx,
            )
        });
    }

    /// Adds "power" and "markers" to the header.
    pub fn header(&mut self, h: &mut Value) {
        h["power"] = match self.power.as_mut() {
            Some(p) => p.header().clone(),
            None => Power::disabled("not started").header().clone(),
        };
        h["markers"] = self.markers_header.clone();
    }

    /// The receiving end, for the collector.
    pub fn receiver(&mut self) -> Option<Receiver<Value>> {
        self.rx.take()
    }

    /// After the command ended: last power sample, last markers, everything
    /// queued written; adds "power" and "markers" to the footer. Warns about
    /// malformed marker lines unless quiet.
    pub fn finish(&mut self, col: &mut Collector, quiet: bool) -> Value {
        let power = self.power.as_mut().map_or(json!({ "available": false }), Power::stop);
        let markers = match self.reader.take().map(MarkerReader::stop) {
            None => json!({ "enabled": false }),
            Some(Err(e)) => json!({ "enabled": true, "error": format!("{e:#}") }),
            Some(Ok(st)) => {
                if st.malformed > 0 && !quiet {
                    eprintln!(
                        "tracer: {} malformed marker line(s) ignored; first: {}",
                        st.malformed,
                        st.examples.first().map_or("", String::as_str)
                    );
                }
                let mut v = st.to_json();
                v["enabled"] = json!(true);
                v
            }
        };
        col.drain_side();
        json!({ "power": power, "markers": markers })
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        // An early error: stop the threads (the reader removes the FIFO).
        if let Some(p) = self.power.as_mut() {
            p.stop();
        }
        if let Some(r) = self.reader.take() {
            let _ = r.stop();
        }
    }
}

impl Collector {
    /// Writes every queued side line.
    pub fn drain_side(&mut self) {
        let Some(rx) = self.side.take() else { return };
        while let Ok(v) = rx.try_recv() {
            self.emit(v);
        }
        self.side = Some(rx);
    }
}
