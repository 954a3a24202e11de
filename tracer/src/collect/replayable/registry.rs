//! The images of a replayable recording and the layouts they gave, with
//! the ids the eBPF maps use. Pure: the recorder feeds it what it read and
//! pushes what it returns into the maps.
use std::collections::HashMap;

use tracer_common::decode::{Params, Record};
use tracer_common::params::{Layout, MAX_PARAMS, layout_key, pack_span, status};
use tracer_format::recording::KernelLayout;

use crate::decode::cudaimage::layouts::Layouts;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageInfo {
    pub id: u32,
    pub sha256: String,
    pub bytes: u64,
    /// "fatbin", "cubin", "ptx".
    pub kind: &'static str,
    pub loads: u64,
    pub kernels: Vec<KernelLayout>,
    /// Why the layouts could not be read (the image is still stored).
    pub layout_error: Option<String>,
    /// Kernels left out of the name map because another kernel of the
    /// image has the same key (their launches need `extra`).
    pub key_collisions: Vec<String>,
}

/// What the eBPF maps must get for a newly seen image.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapUpdates {
    pub layouts: Vec<(u32, Layout)>,
    /// layout_key(image, name) -> layout id.
    pub names: Vec<(u64, u32)>,
}

#[derive(Default)]
pub struct Registry {
    pub images: Vec<ImageInfo>,
    by_sha: HashMap<String, u32>,
    layout_ids: HashMap<(u32, Vec<u32>), u32>,
    /// The layout of each id (id `i` at `i - 1`), as the maps have it.
    by_id: Vec<Layout>,
}

/// The eBPF form of a layout: `offset | size << 16` per parameter. More
/// than MAX_PARAMS parameters keep their count (the probe then reports
/// "too many") and only the first MAX_PARAMS slots.
pub fn encode(k: &KernelLayout) -> Layout {
    let covered: u64 = k.params.iter().map(|&(_, s)| s as u64).sum();
    let mut l = Layout {
        n: k.params.len() as u32,
        size: k.param_size,
        padded: (covered != k.param_size as u64) as u32,
        params: [0; MAX_PARAMS],
    };
    for (slot, &(off, size)) in l.params.iter_mut().zip(&k.params) {
        *slot = (off & 0xffff) | (size & 0xffff) << 16;
    }
    l
}

impl Registry {
    /// Records one load of an image. The first load of a content also
    /// returns the map entries for its kernels.
    pub fn add(
        &mut self,
        sha256: &str,
        bytes: u64,
        kind: &'static str,
        layouts: impl FnOnce() -> Result<Layouts, String>,
    ) -> (u32, Option<MapUpdates>) {
        if let Some(&id) = self.by_sha.get(sha256) {
            self.images[id as usize - 1].loads += 1;
            return (id, None);
        }
        let id = self.images.len() as u32 + 1;
        let (kernels, layout_error) = match layouts() {
            Ok(l) => (
                l.kernels
                    .into_iter()
                    .map(|(name, k)| KernelLayout {
                        name,
                        param_size: k.size,
                        params: k.params.iter().map(|p| (p.offset, p.size)).collect(),
                    })
                    .collect(),
                None,
            ),
            Err(e) => (Vec::new(), Some(e)),
        };
        let mut up = MapUpdates::default();
        // Each name hashed once (C++ names run to kilobytes, images to
        // thousands of kernels, and the loading process waits meanwhile).
        let keys: Vec<u64> = kernels.iter().map(|k| layout_key(id, k.name.as_bytes())).collect();
        let mut first: HashMap<u64, usize> = HashMap::new();
        let mut collided = vec![false; kernels.len()];
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&j) = first.get(&key) {
                collided[i] = true;
                collided[j] = true;
            } else {
                first.insert(key, i);
            }
        }
        let mut key_collisions = Vec::new();
        for (i, k) in kernels.iter().enumerate() {
            if collided[i] {
                key_collisions.push(k.name.clone());
                continue;
            }
            let enc = encode(k);
            let sig = (enc.size, std::iter::once(enc.n).chain(enc.params).collect::<Vec<u32>>());
            let next = self.layout_ids.len() as u32 + 1;
            let by_id = &mut self.by_id;
            let lid = *self.layout_ids.entry(sig).or_insert_with(|| {
                up.layouts.push((next, enc));
                by_id.push(enc);
                next
            });
            up.names.push((keys[i], lid));
        }
        self.images.push(ImageInfo {
            id,
            sha256: sha256.to_string(),
            bytes,
            kind,
            loads: 1,
            kernels,
            layout_error,
            key_collisions,
        });
        self.by_sha.insert(sha256.to_string(), id);
        (id, Some(up))
    }

    pub fn layout_count(&self) -> usize {
        self.layout_ids.len()
    }

    /// A launch record whose parameters came as a span (`status::SPAN`: the
    /// pointers and the memory they point into) with its parameter buffer
    /// cut out, in `buf`, with the layout the probe used: the buffer the
    /// probe would have built (`status::LAYOUT`). A span that does not
    /// cover the layout, or an unknown layout id, keeps `status::SPAN` with
    /// no bytes, which the line reports as an error. Every other record is
    /// returned as it is.
    pub fn unpack<'a>(&self, rec: Record<'a>, buf: &'a mut Vec<u8>) -> Record<'a> {
        let Record::Enter { hdr, args, string, string_truncated, blob, nattrs, params: Some(p) } = rec else {
            return rec;
        };
        if p.status != status::SPAN {
            return rec;
        }
        let packed = self.layout(p.layout).is_some_and(|lay| {
            buf.clear();
            buf.resize(lay.size as usize, 0);
            pack_span(lay, p.data, buf)
        });
        let params =
            if packed { Params { status: status::LAYOUT, data: &buf[..], ..p } } else { Params { data: &[], ..p } };
        Record::Enter { hdr, args, string, string_truncated, blob, nattrs, params: Some(params) }
    }

    /// The layout the maps have under id `lid`.
    pub fn layout(&self, lid: u32) -> Option<&Layout> {
        self.by_id.get((lid as usize).checked_sub(1)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::cudaimage::layouts::kernel_layouts;

    const FAT: &[u8] =
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/kernels.no-compress.fatbin"));
    const CUBIN: &[u8] =
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cuda/kernels.sm_90.cubin"));

    fn launch<'a>(status: u32, layout: u32, data: &'a [u8]) -> Record<'a> {
        Record::Enter {
            hdr: tracer_common::event::Header { kind: 0, func: 0, cpu: 0, seq: 0, ts: 5, pid: 1, tid: 1 },
            args: [0; tracer_common::event::MAX_ARGS],
            string: None,
            string_truncated: false,
            blob: None,
            nattrs: 0,
            params: Some(Params { layout, status, data }),
        }
    }

    fn params_of<'a>(r: &Record<'a>) -> Params<'a> {
        let Record::Enter { params: Some(p), .. } = r else { panic!("{r:?}") };
        *p
    }

    #[test]
    fn a_span_becomes_the_layout_buffer_of_its_kernel() {
        let mut r = Registry::default();
        let (_, up) = r.add("aa", FAT.len() as u64, "fatbin", || kernel_layouts(FAT, None).map_err(|e| e.to_string()));
        let up = up.unwrap();
        let lid = up.names.iter().find(|(k, _)| *k == layout_key(1, b"k_struct")).unwrap().1;
        // k_struct(char tag @0, Odd o @8 (24), Rgb p @32 (3), short h @36, double *out @40):
        // five locals of a launch stub, at 0x7000 + {40, 0, 32, 36, 24}.
        let at = [40u64, 0, 32, 36, 24];
        let sizes = [1usize, 24, 3, 2, 8];
        let mut span = [0u8; 48];
        for (i, (&a, &n)) in at.iter().zip(&sizes).enumerate() {
            span[a as usize..a as usize + n].fill(0x10 + i as u8);
        }
        let mut data: Vec<u8> = at.iter().flat_map(|a| (0x7000 + a).to_le_bytes()).collect();
        data.extend_from_slice(&span[..41]);
        let mut buf = Vec::new();
        let p = params_of(&r.unpack(launch(status::SPAN, lid, &data), &mut buf));
        let mut want = vec![0u8; 48];
        for (i, (off, n)) in [(0, 1), (8, 24), (32, 3), (36, 2), (40, 8)].into_iter().enumerate() {
            want[off..off + n].fill(0x10 + i as u8);
        }
        assert_eq!(p, Params { layout: lid, status: status::LAYOUT, data: &want });
        // One byte short of `tag`'s end, or a layout the maps never had: kept as a span, no bytes.
        let mut buf = Vec::new();
        let p = params_of(&r.unpack(launch(status::SPAN, lid, &data[..data.len() - 1]), &mut buf));
        assert_eq!(p, Params { layout: lid, status: status::SPAN, data: &[] });
        let mut buf = Vec::new();
        let p = params_of(&r.unpack(launch(status::SPAN, 999, &data), &mut buf));
        assert_eq!(p, Params { layout: 999, status: status::SPAN, data: &[] });
        // Buffers built by the probe pass through.
        let mut buf = Vec::new();
        assert_eq!(params_of(&r.unpack(launch(status::LAYOUT, lid, &want), &mut buf)).data, &want[..]);
        assert!(buf.is_empty());
    }

    #[test]
    fn images_once_layouts_shared_and_keys_per_image() {
        let mut r = Registry::default();
        let (a, up) = r.add("aa", FAT.len() as u64, "fatbin", || kernel_layouts(FAT, None).map_err(|e| e.to_string()));
        let up = up.unwrap();
        assert_eq!(a, 1);
        let img = &r.images[0];
        let ks = img.kernels.iter().find(|k| k.name == "k_struct").unwrap();
        // kernels.cu: k_struct(char tag, Odd o, Rgb p, short h, double *out)
        assert_eq!((ks.param_size, ks.params.clone()), (48, vec![(0, 1), (8, 24), (32, 3), (36, 2), (40, 8)]));
        assert_eq!(up.names.len(), img.kernels.len());
        let lid = up.names.iter().find(|(k, _)| *k == layout_key(1, b"k_struct")).unwrap().1;
        let l = up.layouts.iter().find(|(id, _)| *id == lid).unwrap().1;
        assert_eq!(r.layout(lid), Some(&l));
        assert_eq!(r.layout(0), None);
        assert_eq!(r.layout(r.layout_count() as u32 + 1), None);
        assert_eq!((l.n, l.size, l.padded), (5, 48, 1));
        assert_eq!(&l.params[..5], &[1 << 16, 8 | 24 << 16, 32 | 3 << 16, 36 | 2 << 16, 40 | 8 << 16]);
        // Identical layouts share an id: fewer layouts than kernels
        // (k_template<float,4> and k_cpp both are (ptr, 4 bytes)).
        assert!(up.layouts.len() < up.names.len(), "{} {}", up.layouts.len(), up.names.len());
        // Same content again: counted, nothing new for the maps.
        let (again, none) = r.add("aa", FAT.len() as u64, "fatbin", || panic!("not parsed twice"));
        assert_eq!((again, none), (1, None));
        assert_eq!(r.images[0].loads, 2);
        // Another image with the same kernels: new keys, no new layouts.
        let (b, up2) =
            r.add("bb", CUBIN.len() as u64, "cubin", || kernel_layouts(CUBIN, None).map_err(|e| e.to_string()));
        let up2 = up2.unwrap();
        assert_eq!(b, 2);
        assert!(up2.layouts.is_empty());
        assert!(up2.names.iter().any(|(k, l)| *k == layout_key(2, b"k_struct") && *l == lid));
        // An image whose layouts cannot be read is still registered.
        let (c, up3) = r.add("cc", 3, "ptx", || Err("bad".into()));
        assert_eq!((c, up3.unwrap()), (3, MapUpdates::default()));
        assert_eq!(r.images[2].layout_error.as_deref(), Some("bad"));
    }

    #[test]
    fn more_than_max_params_keep_their_count() {
        let k = KernelLayout { name: "x".into(), param_size: 8 * 70, params: (0..70).map(|i| (i * 8, 8)).collect() };
        let l = encode(&k);
        assert_eq!((l.n, l.size, l.padded, l.params[63]), (70, 560, 0, (63 * 8) | (8 << 16)));
    }
}
