//! A launch's captured parameter bytes and the trace fields they become
//! (`params` + `params_from`, or `params_error`; docs/recording-format.md).
//! Pure: shared by the general line path (calls.rs) and the fast one
//! (fastline.rs), which must write the same bytes.
use serde_json::{Map, Value, json};
use tracer_common::params::status;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapturedParams {
    /// [`tracer_common::params::status`].
    pub status: u32,
    /// Layout id the eBPF side used (0: none).
    pub layout: u32,
    pub data: Vec<u8>,
}

/// What a launch line says about its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    Bytes { data: &'a [u8], from: &'static str },
    Error(&'static str),
}

pub const SPAN_SHORT: &str =
    "the parameters were read as one span of memory that does not hold every parameter of the kernel's layout";
pub const NO_LAYOUT: &str = "no parameter layout known for this function handle (its image load or GetFunction/GetKernel call was not captured)";

impl CapturedParams {
    pub fn outcome(&self) -> Outcome<'_> {
        match self.status {
            status::LAYOUT => Outcome::Bytes { data: &self.data, from: "layout" },
            status::EXTRA => Outcome::Bytes { data: &self.data, from: "extra" },
            status::NO_LAYOUT => Outcome::Error(NO_LAYOUT),
            status::READ_FAILED => Outcome::Error("the parameters could not be read from the process's memory"),
            status::TOO_MANY => Outcome::Error("the kernel has more than 64 parameters"),
            status::TOO_BIG => Outcome::Error(
                "the parameter buffer is larger than 32764 bytes, or `extra` has no buffer pointer and size",
            ),
            status::NONE_GIVEN => {
                Outcome::Error("neither kernelParams nor extra was given to a kernel with parameters")
            }
            status::SPAN => Outcome::Error(SPAN_SHORT),
            _ => Outcome::Error("unknown capture status"),
        }
    }

    /// Adds the fields to a line built as a JSON map.
    pub fn insert_fields(&self, m: &mut Map<String, Value>) {
        match self.outcome() {
            Outcome::Bytes { data, from } => {
                m.insert("params".into(), json!(tracer_format::hex::bytes(data)));
                m.insert("params_from".into(), json!(from));
            }
            Outcome::Error(e) => {
                m.insert("params_error".into(), json!(e));
            }
        }
    }

    /// Appends `,"params":"..","params_from":".."` or `,"params_error":".."`:
    /// the same text serde_json writes for [`Self::insert_fields`], at the
    /// place sorted keys put it (after `op`, before `pid`).
    pub fn write_fields(&self, b: &mut Vec<u8>) {
        match self.outcome() {
            Outcome::Bytes { data, from } => {
                b.extend_from_slice(b",\"params\":\"");
                tracer_format::hex::push_bytes(b, data);
                b.extend_from_slice(b"\",\"params_from\":\"");
                b.extend_from_slice(from.as_bytes());
                b.push(b'"');
            }
            Outcome::Error(e) => {
                b.extend_from_slice(b",\"params_error\":");
                serde_json::to_writer(&mut *b, e).expect("writing to a Vec");
            }
        }
    }
}

/// Short reasons by status, for the coverage counts.
pub fn reason_key(status: u32) -> Option<&'static str> {
    Some(match status {
        status::LAYOUT | status::EXTRA => return None,
        status::NO_LAYOUT => "no layout for the function handle",
        status::READ_FAILED => "memory not readable",
        status::TOO_MANY => "more than 64 parameters",
        status::TOO_BIG => "larger than 32764 bytes or incomplete extra",
        status::NONE_GIVEN => "neither kernelParams nor extra",
        status::SPAN => "span short of the layout",
        _ => "unknown status",
    })
}

/// The status whose line text is `e`, if any.
pub fn status_of_error(e: &str) -> Option<u32> {
    (0..=8).find(
        |&s| matches!(CapturedParams { status: s, layout: 0, data: vec![] }.outcome(), Outcome::Error(t) if t == e),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(p: &CapturedParams) -> Value {
        let mut b = b"{\"op\":\"launch\"".to_vec();
        p.write_fields(&mut b);
        b.push(b'}');
        serde_json::from_slice(&b).unwrap()
    }

    #[test]
    fn both_paths_give_the_same_fields() {
        for p in [
            CapturedParams { status: status::LAYOUT, layout: 3, data: vec![0, 1, 0xab, 0xff] },
            CapturedParams { status: status::EXTRA, layout: 0, data: vec![] },
            CapturedParams { status: status::NO_LAYOUT, layout: 0, data: vec![] },
            CapturedParams { status: 99, layout: 0, data: vec![] },
        ] {
            let mut m = Map::new();
            m.insert("op".into(), json!("launch"));
            p.insert_fields(&mut m);
            assert_eq!(written(&p), Value::Object(m.clone()));
            // and in the order serde_json writes them
            let mut b = b"{\"op\":\"launch\"".to_vec();
            p.write_fields(&mut b);
            b.push(b'}');
            assert_eq!(String::from_utf8(b).unwrap(), serde_json::to_string(&m).unwrap());
        }
        let p = CapturedParams { status: status::LAYOUT, layout: 3, data: vec![0, 1, 0xab, 0xff] };
        assert_eq!(written(&p)["params"], "0001abff");
        assert_eq!(written(&p)["params_from"], "layout");
        assert_eq!(tracer_format::hex::parse_bytes("0001abff").unwrap(), vec![0, 1, 0xab, 0xff]);
        assert_eq!(tracer_format::hex::parse_bytes("0g"), None);
        assert_eq!(tracer_format::hex::parse_bytes("abc"), None);
    }
}
