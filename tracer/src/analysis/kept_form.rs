//! The form every kept file's text has (the durations library, the host speed
//! history): one JSON object whose `format` names what it is and whose
//! `version` says which version of that form it is. Parsing checks both
//! before the fields, so that a file of another program or of a newer tracer
//! is told apart from a corrupt one (the file side, crate::collect::kept_file,
//! moves a corrupt or foreign file aside and leaves a newer one alone).
use serde::de::DeserializeOwned;
use serde_json::Value;

/// One kept file's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Form {
    /// Its `format` ("tracer-durations-library").
    pub format: &'static str,
    /// The version this tracer reads and writes.
    pub version: u32,
    /// What the messages call it ("durations library").
    pub what: &'static str,
}

/// Why a text is not a file of its form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormError {
    /// Not JSON, a wrong `version`, or not the form's fields.
    Corrupt(String),
    /// Another `format` (None: no `format` field, or not an object).
    Foreign(Option<String>),
    /// A `version` newer than the form's.
    Newer(u32),
}

impl Form {
    /// The text as `T`, once its `format` and `version` are this form's.
    pub fn parse<T: DeserializeOwned>(&self, text: &str) -> Result<T, FormError> {
        let v: Value = serde_json::from_str(text).map_err(|e| FormError::Corrupt(e.to_string()))?;
        match v.get("format") {
            Some(Value::String(f)) if f == self.format => {}
            Some(Value::String(f)) => return Err(FormError::Foreign(Some(f.clone()))),
            _ => return Err(FormError::Foreign(None)),
        }
        let version = self.version as u64;
        match v.get("version").and_then(Value::as_u64) {
            Some(n) if n == version => {}
            Some(n) if n > version => return Err(FormError::Newer(n.min(u32::MAX as u64) as u32)),
            _ => return Err(FormError::Corrupt(format!("\"version\" is {}, expected {version}", v["version"]))),
        }
        serde_json::from_value(v).map_err(|e| FormError::Corrupt(e.to_string()))
    }

    /// The file's text for `value` (which holds this form's `format` and `version`): one line of JSON.
    pub fn line<T: serde::Serialize>(&self, value: &T) -> String {
        let mut s = serde_json::to_string(value).unwrap_or_else(|e| panic!("a {} serializes: {e}", self.what));
        s.push('\n');
        s
    }

    /// What is wrong, for a message "…: the durations library is {this}".
    pub fn describe(&self, e: &FormError) -> String {
        let (what, format, version) = (self.what, self.format, self.version);
        match e {
            FormError::Corrupt(e) => format!("corrupt ({e})"),
            FormError::Foreign(Some(x)) => format!("not a {what} (format {x:?}, expected {format:?})"),
            FormError::Foreign(None) => format!("not a {what} (no \"format\" field)"),
            FormError::Newer(v) => format!("version {v}, newer than this tracer reads ({version})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORM: Form = Form { format: "tracer-test-file", version: 2, what: "test file" };

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct File {
        version: u32,
        n: u32,
    }

    #[test]
    fn a_text_is_its_forms_or_says_why_not() {
        assert_eq!(
            FORM.parse::<File>(r#"{"format":"tracer-test-file","version":2,"n":7}"#),
            Ok(File { version: 2, n: 7 })
        );
        let cases: [(&str, FormError, &str); 7] = [
            ("{}", FormError::Foreign(None), "not a test file (no \"format\" field)"),
            ("[1]", FormError::Foreign(None), "not a test file (no \"format\" field)"),
            (
                r#"{"format":"tracer-other","version":2}"#,
                FormError::Foreign(Some("tracer-other".into())),
                "not a test file (format \"tracer-other\", expected \"tracer-test-file\")",
            ),
            (
                r#"{"format":"tracer-test-file","version":3,"n":1}"#,
                FormError::Newer(3),
                "version 3, newer than this tracer reads (2)",
            ),
            (
                r#"{"format":"tracer-test-file","version":1,"n":1}"#,
                FormError::Corrupt("\"version\" is 1, expected 2".into()),
                "corrupt (\"version\" is 1, expected 2)",
            ),
            (
                r#"{"format":"tracer-test-file","version":"2","n":1}"#,
                FormError::Corrupt("\"version\" is \"2\", expected 2".into()),
                "corrupt (\"version\" is \"2\", expected 2)",
            ),
            (
                r#"{"format":"tracer-test-file","version":2}"#,
                FormError::Corrupt("missing field `n`".into()),
                "corrupt (missing field `n`)",
            ),
        ];
        for (text, err, said) in cases {
            let e = FORM.parse::<File>(text).unwrap_err();
            assert_eq!((&e, FORM.describe(&e).as_str()), (&err, said), "{text}");
        }
        let e = FORM.parse::<File>("not json").unwrap_err();
        assert!(matches!(&e, FormError::Corrupt(_)) && FORM.describe(&e).starts_with("corrupt (expected "), "{e:?}");
    }
}
