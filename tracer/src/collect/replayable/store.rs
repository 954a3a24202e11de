//! The recording directory (docs/recording-format.md): `trace.jsonl` (or
//! `trace.jsonl.zst`), `images/<sha256>`, `data/<sha256>`, `manifest.json`. Files are written
//! under a temporary name and renamed, so a crash never leaves a partial
//! file under a content address; each content is stored once.
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use tracer_format::recording::{self, DATA, IMAGES, MANIFEST, TRACE, TRACE_ZST};

use crate::collect::spawn::RunAs;

pub struct Store {
    pub dir: PathBuf,
    /// The trace's file name in `dir`: [`TRACE`], or [`TRACE_ZST`]
    /// (`--compress zstd`).
    pub trace: &'static str,
    owner: Option<(u32, u32)>,
    mode: u32,
}

impl Store {
    /// Creates `dir` with `images/` and `data/`. An existing directory is
    /// refused unless `force`, and then only if it is a recording
    /// (has a trace.jsonl, trace.jsonl.zst or manifest.json), which is
    /// emptied. The trace is `trace.jsonl` unless [`Store::zstd`].
    pub fn create(dir: &Path, force: bool, run_as: Option<&RunAs>, private: bool) -> anyhow::Result<Store> {
        if let Ok(md) = fs::symlink_metadata(dir) {
            if !force {
                bail!("recording directory {} exists (use --force to overwrite)", dir.display());
            }
            if !md.is_dir() || ![TRACE, TRACE_ZST, MANIFEST].iter().any(|f| dir.join(f).exists()) {
                bail!(
                    "{} exists and is not a recording directory (no trace.jsonl or manifest.json): not overwriting it",
                    dir.display()
                );
            }
            fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
        }
        let mode = if private { 0o700 } else { 0o755 };
        let st = Store { dir: dir.to_path_buf(), trace: TRACE, owner: run_as.map(|r| (r.uid, r.gid)), mode };
        for d in [dir.to_path_buf(), dir.join(IMAGES), dir.join(DATA)] {
            st.mkdir(&d)?;
        }
        Ok(st)
    }

    fn mkdir(&self, d: &Path) -> anyhow::Result<()> {
        use std::os::unix::fs::DirBuilderExt as _;
        fs::DirBuilder::new().mode(self.mode).create(d).map_err(|e| {
            anyhow::anyhow!("cannot create {}: {}", d.display(), crate::collect::spawn::os_error_text(&e))
        })?;
        self.chown(d)
    }

    fn chown(&self, p: &Path) -> anyhow::Result<()> {
        if let Some((uid, gid)) = self.owner {
            std::os::unix::fs::chown(p, Some(uid), Some(gid))
                .with_context(|| format!("giving {} to uid {uid}", p.display()))?;
        }
        Ok(())
    }

    /// The trace zstd-compressed, `trace.jsonl.zst`, when `zstd`.
    pub fn zstd(mut self, zstd: bool) -> Store {
        self.trace = if zstd { TRACE_ZST } else { TRACE };
        self
    }

    /// Where the trace is written.
    pub fn trace_path(&self) -> PathBuf {
        self.dir.join(self.trace)
    }

    /// Stores `bytes` as `sub/<sha256>` ([`IMAGES`] or [`DATA`]) unless
    /// already there. Returns the hash and whether the file is new.
    pub fn put(&self, sub: &str, bytes: &[u8]) -> anyhow::Result<(String, bool)> {
        let (sha, path) = recording::store_path(&self.dir, sub, bytes);
        let new = !path.exists();
        if new {
            self.write_atomic(&path, bytes)?;
        }
        Ok((sha, new))
    }

    /// Writes a whole file under a temporary name, then renames it.
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let tmp = path.with_extension("partial");
        let file_mode = self.mode & 0o666;
        let r = (|| -> std::io::Result<()> {
            let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(file_mode).open(&tmp)?;
            f.write_all(bytes)?;
            f.flush()
        })();
        if let Err(e) = r {
            let _ = fs::remove_file(&tmp);
            bail!("writing {}: {}", path.display(), crate::collect::spawn::os_error_text(&e));
        }
        self.chown(&tmp)?;
        fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_once_and_refuses_to_clobber() {
        let base = std::env::temp_dir().join(format!("tracer-store-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).unwrap();
        let dir = base.join("x.rec");
        let st = Store::create(&dir, false, None, false).unwrap();
        let (sha, new) = st.put("images", b"abc").unwrap();
        assert!(new);
        assert_eq!(sha, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(fs::read(dir.join("images").join(&sha)).unwrap(), b"abc");
        assert_eq!(st.put("images", b"abc").unwrap(), (sha.clone(), false));
        assert_eq!(fs::read_dir(dir.join("images")).unwrap().count(), 1);
        let e = Store::create(&dir, false, None, false).err().unwrap().to_string();
        assert!(e.contains("exists (use --force to overwrite)"), "{e}");
        // --force on something that is not a recording: refused.
        let other = base.join("notes");
        fs::create_dir(&other).unwrap();
        fs::write(other.join("a.txt"), "keep").unwrap();
        let e = Store::create(&other, true, None, false).err().unwrap().to_string();
        assert!(e.contains("is not a recording directory"), "{e}");
        assert!(other.join("a.txt").exists());
        // --force on a recording: emptied and recreated.
        fs::write(dir.join("trace.jsonl"), "{}\n").unwrap();
        Store::create(&dir, true, None, false).unwrap();
        assert_eq!(fs::read_dir(dir.join("images")).unwrap().count(), 0);
        // A zstd recording (cut off before its manifest) is one too.
        fs::write(dir.join("trace.jsonl.zst"), "").unwrap();
        let st = Store::create(&dir, true, None, false).unwrap().zstd(true);
        assert!(!dir.join("trace.jsonl.zst").exists());
        assert_eq!(st.trace_path(), dir.join("trace.jsonl.zst"));
        let _ = fs::remove_dir_all(&base);
    }
}
