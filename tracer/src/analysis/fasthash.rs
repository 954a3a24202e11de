//! A fast, non-cryptographic hasher (the multiply-rotate scheme of rustc's
//! FxHash) for the loader's small maps: interned names and launch
//! geometries, looked up once or twice per trace line. The maps' contents
//! come from the trace, but their order is never observed (ids are assigned
//! in insertion order), so a weaker hash changes nothing but speed.
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.hash = (self.hash.rotate_left(5) ^ w).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut b = bytes;
        while b.len() >= 8 {
            self.add(u64::from_le_bytes(b[..8].try_into().expect("8 bytes")));
            b = &b[8..];
        }
        if b.len() >= 4 {
            self.add(u64::from(u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))));
            b = &b[4..];
        }
        for &x in b {
            self.add(u64::from(x));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub type FxBuild = BuildHasherDefault<FxHasher>;
pub type FxHashMap<K, V> = std::collections::HashMap<K, V, FxBuild>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn h(x: impl Hash) -> u64 {
        FxBuild::default().hash_one(x)
    }

    #[test]
    fn distinguishes_what_the_loader_keys_on() {
        // Strings differing in one byte, in length, or only in their tail.
        assert_ne!(h("cuLaunchKernel"), h("cuLaunchKernel_ptsz"));
        assert_ne!(h("abcdefgh1"), h("abcdefgh2"));
        assert_ne!(h("a"), h("a\0"));
        assert_ne!(h([1u32, 2, 3]), h([3u32, 2, 1]));
        assert_eq!(h("k"), h("k"));
        let mut m: FxHashMap<Box<str>, u32> = FxHashMap::default();
        for i in 0..10_000u32 {
            m.insert(format!("kernel_{i}").into(), i);
        }
        assert_eq!((0..10_000u32).filter(|i| m[format!("kernel_{i}").as_str()] == *i).count(), 10_000);
    }
}
