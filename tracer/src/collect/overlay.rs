//! The file under an overlay: a container image's libcuda lives in a layer
//! shared by every container of the image, each of which sees it through
//! its own overlay mount (another device number for `stat`). Uprobes go on
//! the layer's file, so the probes must be attached (and counted) once per
//! layer file, not once per container: this finds that file from the
//! overlay's mount options (`upperdir`, `lowerdir`), as the process's
//! `/proc/PID/mountinfo` shows them.
use std::path::{Path, PathBuf};

/// The file of an upper or lower layer that `path` (as process `pid` sees
/// it) shows through an overlay mount; None when `path` is not on an
/// overlay or no layer has it.
pub fn layer_file(pid: u32, path: &Path) -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).ok()?;
    let (mount_point, layers) = overlay_of(&mountinfo, path)?;
    let rel = path.strip_prefix(&mount_point).ok()?;
    layers.iter().map(|l| l.join(rel)).find(|p| p.symlink_metadata().is_ok_and(|m| m.is_file()))
}

/// The mount point and layers (upper first, then the lowers in order) of the
/// overlay mount that holds `path`, from a mountinfo text; None when the
/// mount holding `path` is not an overlay.
pub fn overlay_of(mountinfo: &str, path: &Path) -> Option<(PathBuf, Vec<PathBuf>)> {
    let mut best: Option<(PathBuf, &str, &str)> = None;
    for l in mountinfo.lines() {
        let Some((left, right)) = l.split_once(" - ") else { continue };
        let Some(mp) = left.split_whitespace().nth(4) else { continue };
        let mp = PathBuf::from(unescape(mp));
        if !path.starts_with(&mp) {
            continue;
        }
        let mut r = right.split_whitespace();
        let fstype = r.next().unwrap_or("");
        let opts = r.nth(1).unwrap_or("");
        // The last mount on the longest matching mount point wins (later
        // lines are mounted over earlier ones).
        if best.as_ref().is_none_or(|(b, _, _)| mp.as_os_str().len() >= b.as_os_str().len()) {
            best = Some((mp, fstype, opts));
        }
    }
    let (mp, fstype, opts) = best?;
    if fstype != "overlay" {
        return None;
    }
    let mut upper = Vec::new();
    let mut lower = Vec::new();
    for o in split_unescaped(opts, ',') {
        if let Some(v) = o.strip_prefix("upperdir=") {
            upper.push(PathBuf::from(unescape(v)));
        } else if let Some(v) = o.strip_prefix("lowerdir=") {
            lower.extend(
                split_unescaped(v, ':').into_iter().filter(|d| !d.is_empty()).map(|d| PathBuf::from(unescape(d))),
            );
        } else if let Some(v) = o.strip_prefix("lowerdir+=") {
            lower.push(PathBuf::from(unescape(v)));
        }
    }
    upper.extend(lower);
    Some((mp, upper))
}

/// Splits at `sep` not preceded by a backslash.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            c if c == sep && !escaped => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => escaped = false,
        }
    }
    out.push(&s[start..]);
    out
}

/// mountinfo's octal escapes (`\040` for a space) and overlay's backslash
/// escapes of `,` and `:`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            if i + 4 <= b.len()
                && let Some(v) = std::str::from_utf8(&b[i + 1..i + 4]).ok().and_then(|o| u8::from_str_radix(o, 8).ok())
            {
                out.push(v);
                i += 4;
                continue;
            }
            out.push(b[i + 1]);
            i += 2;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MI: &str = "\
22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
69 22 0:40 / /tmp/ov/m1 rw,relatime - overlay overlay rw,lowerdir=/l/a:/l/b,upperdir=/u/1,workdir=/w/1
70 22 0:41 / /run/containerd/x/rootfs rw - overlay overlay rw,lowerdir+=/snap/3/fs,lowerdir+=/snap/2/fs,upperdir=/snap/9/fs,workdir=/snap/9/work
71 69 0:42 / /tmp/ov/m1/usr/lib/x86_64-linux-gnu/libcuda.so.1 ro - ext4 /dev/sda1 ro
72 22 0:43 / /tmp/ov/m2 rw - overlay overlay rw,lowerdir=/l/with\\:colon:/l/sp\\040ace,upperdir=/u/2,workdir=/w/2
";

    #[test]
    fn layers_of_the_overlay_holding_a_path() {
        let (mp, layers) = overlay_of(MI, Path::new("/tmp/ov/m1/lib/libcuda.so.1")).unwrap();
        assert_eq!(mp, PathBuf::from("/tmp/ov/m1"));
        assert_eq!(layers, [PathBuf::from("/u/1"), PathBuf::from("/l/a"), PathBuf::from("/l/b")]);
        let (_, layers) = overlay_of(MI, Path::new("/run/containerd/x/rootfs/usr/lib/libcuda.so.1")).unwrap();
        assert_eq!(layers, [PathBuf::from("/snap/9/fs"), PathBuf::from("/snap/3/fs"), PathBuf::from("/snap/2/fs")]);
        let (_, layers) = overlay_of(MI, Path::new("/tmp/ov/m2/x")).unwrap();
        assert_eq!(layers, [PathBuf::from("/u/2"), PathBuf::from("/l/with:colon"), PathBuf::from("/l/sp ace")]);
        // A file bind-mounted over the overlay (what the NVIDIA container
        // toolkit does) is not the overlay's.
        assert_eq!(overlay_of(MI, Path::new("/tmp/ov/m1/usr/lib/x86_64-linux-gnu/libcuda.so.1")), None);
        assert_eq!(overlay_of(MI, Path::new("/usr/lib/libcuda.so.1")), None);
    }

    #[test]
    fn own_files_are_on_no_overlay_layer_here() {
        let exe = std::env::current_exe().unwrap();
        // This test runs outside any overlay, or finds the exe in a layer.
        if let Some(f) = layer_file(std::process::id(), &exe) {
            assert!(f.ends_with(exe.file_name().unwrap()));
        }
    }
}
