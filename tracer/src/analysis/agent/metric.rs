//! The metrics the agent serves, as plain data: families of samples with
//! labels. `crate::export::openmetrics` writes them as OpenMetrics text.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One histogram: cumulative counts per upper bound (+Inf last), sum, count.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// (upper bound, cumulative count); the last bound is +Inf.
    pub buckets: Vec<(f64, u64)>,
    pub sum: f64,
    pub count: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Number(f64),
    Histogram(Histogram),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: Value,
}

/// A metric family: `name` without the `_total` suffix of counters (the
/// renderer adds it to the samples), its help text, kind and samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

impl Family {
    pub fn new(name: &'static str, kind: Kind, help: &'static str) -> Family {
        Family { name, help, kind, samples: Vec::new() }
    }

    pub fn push(&mut self, labels: Vec<(&'static str, String)>, v: f64) {
        self.samples.push(Sample { labels, value: Value::Number(v) });
    }

    pub fn push_histogram(&mut self, labels: Vec<(&'static str, String)>, h: Histogram) {
        self.samples.push(Sample { labels, value: Value::Histogram(h) });
    }
}
