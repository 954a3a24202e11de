//! Reading zstd-compressed traces (`tracer record -o TRACE.jsonl.zst`). The
//! writer flushes a zstd block at least every 100 ms, so a tracer killed
//! with SIGKILL leaves a file whose complete blocks decode to whole lines:
//! the decoder reads them and ends, flagging the cut ([`CutTolerant`]),
//! instead of an error.
use std::io;

pub use super::cut::CutTolerant;

/// The largest zstd window a reader accepts (log2 bytes): 16 MiB. tracer's
/// own traces use 512 KiB (level 1), `zstd -19` 8 MiB; a file asking for more
/// (`zstd --long`, or a hostile one) is an error instead of that much memory.
pub const WINDOW_LOG_MAX: u32 = 24;

/// Reads a .zst trace: the decoded stream (several frames in a row are one
/// stream, as `zstd -d` reads them).
pub fn decoder<R: io::Read + 'static>(r: R, name: String) -> io::Result<Box<dyn io::Read>> {
    Ok(Box::new(bounded_decoder(r, name)?))
}

/// [`decoder`] without boxing (any lifetime).
pub fn bounded_decoder<R: io::Read>(
    r: R,
    name: String,
) -> io::Result<CutTolerant<zstd::stream::read::Decoder<'static, io::BufReader<R>>>> {
    let mut d = zstd::stream::read::Decoder::new(r)?;
    d.window_log_max(WINDOW_LOG_MAX)?;
    let _ = name;
    Ok(CutTolerant::new(d))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::path::{Path, PathBuf};

    use serde_json::json;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tracer-format-zstd-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn read_lines(p: &Path) -> (Vec<u64>, bool) {
        let mut v = Vec::new();
        let (_, truncated) = crate::read::for_each_raw(p, Default::default(), |_, b| {
            v.push(serde_json::from_slice::<serde_json::Value>(b).unwrap()["i"].as_u64().unwrap());
            Ok(())
        })
        .unwrap();
        (v, truncated)
    }

    fn line(i: u64) -> Vec<u8> {
        let mut b = serde_json::to_vec(
            &json!({"i": i, "ts": i, "pid": 1, "type": "kernel", "name": "cuLaunchKernel", "stream": "0x5000", "grid": [1200, 1, 1]}),
        )
        .unwrap();
        b.push(b'\n');
        b
    }

    /// As tracer writes a .zst trace: level 1, checksum; `flush` ends a block.
    fn encoder(p: &Path) -> zstd::stream::write::Encoder<'static, std::fs::File> {
        let mut enc = zstd::stream::write::Encoder::new(std::fs::File::create(p).unwrap(), 1).unwrap();
        enc.include_checksum(true).unwrap();
        enc
    }

    #[test]
    fn round_trip_and_every_reader_reads_it() {
        let d = dir("rt");
        let p = d.join("t.jsonl.zst");
        let mut w = encoder(&p);
        let mut plain_bytes = 0;
        for i in 0..20_000 {
            let l = line(i);
            plain_bytes += l.len() as u64;
            w.write_all(&l).unwrap();
        }
        w.finish().unwrap();
        let zst_bytes = std::fs::metadata(&p).unwrap().len();
        assert!(zst_bytes * 20 < plain_bytes, "{zst_bytes} of {plain_bytes}");
        assert_eq!(read_lines(&p), ((0..20_000).collect(), false));
        // The BufRead path (summary, ioctls) reads it too.
        let mut n = 0;
        crate::read::for_each(&p, |_| n += 1).unwrap();
        assert_eq!(n, 20_000);
        // Two frames in a row are one stream, as `zstd -d` reads them.
        let mut both = std::fs::read(&p).unwrap();
        both.extend_from_slice(&zstd::stream::encode_all(&line(20_000)[..], 3).unwrap());
        let p2 = d.join("two.jsonl.zst");
        std::fs::write(&p2, both).unwrap();
        assert_eq!(read_lines(&p2), ((0..20_001).collect(), false));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_killed_recording_reads_up_to_its_last_flush() {
        let d = dir("cut");
        let p = d.join("t.jsonl.zst");
        let mut w = encoder(&p);
        for i in 0..1000 {
            w.write_all(&line(i)).unwrap();
        }
        w.flush().unwrap();
        let flushed = std::fs::metadata(&p).unwrap().len();
        for i in 1000..1500 {
            w.write_all(&line(i)).unwrap();
        }
        w.flush().unwrap();
        // As if killed now: no end of frame. Both flushes are readable.
        let cut = d.join("cut.jsonl.zst");
        std::fs::copy(&p, &cut).unwrap();
        assert_eq!(read_lines(&cut).0, (0..1500).collect::<Vec<_>>());
        // Killed in the middle of writing the second block: the first reads whole.
        let f = std::fs::OpenOptions::new().write(true).open(&cut).unwrap();
        f.set_len(flushed + 7).unwrap();
        assert_eq!(read_lines(&cut).0, (0..1000).collect::<Vec<_>>());
        drop(w);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_window_too_large_is_an_error() {
        let text = line(1).repeat(4);
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.window_log(super::WINDOW_LOG_MAX + 1).unwrap();
        enc.set_pledged_src_size(None).unwrap();
        enc.write_all(&text).unwrap();
        let big = enc.finish().unwrap();
        let mut out = Vec::new();
        let r = std::io::Read::read_to_end(&mut super::bounded_decoder(&big[..], "big".into()).unwrap(), &mut out);
        assert!(r.is_err(), "{r:?}");
        let mut out = Vec::new();
        let small = zstd::stream::encode_all(&text[..], 3).unwrap();
        std::io::Read::read_to_end(&mut super::bounded_decoder(&small[..], "small".into()).unwrap(), &mut out).unwrap();
        assert_eq!(out, text);
    }
}
