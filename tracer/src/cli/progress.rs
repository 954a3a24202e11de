//! Progress on stderr for long work: a bar appears only when stderr is a
//! terminal and the work has run for more than a second.
use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    shown: bool,
    enabled: bool,
}

impl Progress {
    /// `total`: units of work (bytes, events); `what`: the message.
    pub fn new(total: u64, what: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template("{msg} [{bar:40}] {percent:>3}% {elapsed}/{duration}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(what.to_string());
        Progress { bar, started: Instant::now(), shown: false, enabled: std::io::stderr().is_terminal() }
    }

    /// Sets the position; draws once the work has taken over a second.
    pub fn set(&mut self, pos: u64) {
        if !self.enabled {
            return;
        }
        if !self.shown && self.started.elapsed() > Duration::from_secs(1) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(10));
            self.shown = true;
        }
        self.bar.set_position(pos);
    }

    pub fn message(&mut self, what: &str) {
        self.bar.set_message(what.to_string());
    }

    pub fn finish(self) {
        if self.shown {
            self.bar.finish_and_clear();
        }
    }
}
