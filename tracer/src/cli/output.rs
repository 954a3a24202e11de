//! The files the analysis commands write (`export -o`, `calibrate -o`):
//! never over an existing file unless `--force`, and gzip-compressed when
//! the name ends in `.gz`.
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context as _;
use flate2::write::GzEncoder;

enum Inner {
    Plain(BufWriter<File>),
    Gzip(GzEncoder<BufWriter<File>>),
}

/// An output file; [`OutFile::finish`] flushes it (and ends the gzip stream).
pub struct OutFile {
    inner: Inner,
}

impl OutFile {
    /// Creates `path`: refused if it exists, unless `force` (then truncated);
    /// gzip when the name ends in `.gz`.
    pub fn create(path: &Path, force: bool) -> anyhow::Result<OutFile> {
        OutFile::open(path, force, path.extension().is_some_and(|e| e == "gz"))
    }

    /// [`OutFile::create`] for bytes written as they are whatever the name
    /// (a format that compresses itself: pprof).
    pub fn create_uncompressed(path: &Path, force: bool) -> anyhow::Result<OutFile> {
        OutFile::open(path, force, false)
    }

    fn open(path: &Path, force: bool, gzip: bool) -> anyhow::Result<OutFile> {
        let mut o = OpenOptions::new();
        o.write(true);
        if force {
            o.create(true).truncate(true);
        } else {
            o.create_new(true);
        }
        let f = o.open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                anyhow::anyhow!("output file {} exists (use --force to overwrite)", path.display())
            }
            _ => anyhow::Error::new(e).context(format!("cannot create {}", path.display())),
        })?;
        let w = BufWriter::with_capacity(1 << 20, f);
        let inner = if gzip { Inner::Gzip(GzEncoder::new(w, flate2::Compression::default())) } else { Inner::Plain(w) };
        Ok(OutFile { inner })
    }

    /// Writes what is buffered and, for gzip, the end of the stream.
    pub fn finish(self, path: &Path) -> anyhow::Result<()> {
        let ctx = || format!("writing {}", path.display());
        match self.inner {
            Inner::Plain(mut w) => w.flush().with_context(ctx),
            Inner::Gzip(g) => g.finish().and_then(|mut w| w.flush()).with_context(ctx),
        }
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.inner {
            Inner::Plain(w) => w.write(buf),
            Inner::Gzip(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match &mut self.inner {
            Inner::Plain(w) => w.write_all(buf),
            Inner::Gzip(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.inner {
            Inner::Plain(w) => w.flush(),
            Inner::Gzip(w) => w.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    #[test]
    fn refuses_existing_unless_forced_and_gzips_gz_names() {
        let d = std::env::temp_dir().join(format!("tracer-outfile-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("a.json");
        let mut o = OutFile::create(&p, false).unwrap();
        o.write_all(b"first").unwrap();
        o.finish(&p).unwrap();
        let e = OutFile::create(&p, false).err().unwrap().to_string();
        assert_eq!(e, format!("output file {} exists (use --force to overwrite)", p.display()));
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        let mut o = OutFile::create(&p, true).unwrap();
        o.write_all(b"2nd").unwrap();
        o.finish(&p).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"2nd");
        let g = d.join("a.json.gz");
        let mut o = OutFile::create(&g, false).unwrap();
        o.write_all(b"{\"x\":1}\n").unwrap();
        o.finish(&g).unwrap();
        let bytes = std::fs::read(&g).unwrap();
        assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
        let mut s = String::new();
        flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut s).unwrap();
        assert_eq!(s, "{\"x\":1}\n");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
