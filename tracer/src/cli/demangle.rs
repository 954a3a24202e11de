//! Readable kernel names: C++ (Itanium ABI, `_Z…`) names demangled by
//! binutils' `c++filt`, one process for all the names of a command. No
//! demangler crate is available to this build; `c++filt` ships with the
//! compilers CUDA needs. Without it the names stay as recorded and the
//! caller says so once.
use std::collections::HashMap;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// Mangled name -> demangled, for the names that are mangled C++ (`_Z…`)
/// and that `c++filt` changed. An error names what is missing.
pub fn demangle<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<HashMap<String, String>, String> {
    let mangled: Vec<&str> = names.into_iter().filter(|n| n.starts_with("_Z") && !n.contains('\n')).collect();
    if mangled.is_empty() {
        return Ok(HashMap::new());
    }
    let mut child = Command::new("c++filt")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("c++filt (binutils) not found ({e}): kernel names are left mangled"))?;
    let input = mangled.join("\n") + "\n";
    let mut stdin = child.stdin.take().unwrap();
    // Written from a thread so that a large output cannot block the input.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(|e| format!("c++filt: {e}"))?;
    let _ = writer.join();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    if !out.status.success() || lines.len() != mangled.len() {
        return Err(format!("c++filt failed ({}): kernel names are left mangled", out.status));
    }
    Ok(mangled.iter().zip(lines).filter(|(m, d)| *m != d).map(|(m, d)| (m.to_string(), d.to_string())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_cxx_names_only() {
        let m = demangle(["_Z6kernelPfi", "nvjet_sm90_hsh_64x8", "_ZN2at6native4fillIfEEvPT_i", "_Znotmangled"]);
        let Ok(m) = m else {
            eprintln!("c++filt not found: skipped");
            return;
        };
        assert_eq!(m.get("_Z6kernelPfi").map(String::as_str), Some("kernel(float*, int)"));
        assert_eq!(
            m.get("_ZN2at6native4fillIfEEvPT_i").map(String::as_str),
            Some("void at::native::fill<float>(float*, int)")
        );
        assert_eq!(m.len(), 2, "{m:?}");
    }
}
