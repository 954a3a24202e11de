//! The 64-bit uprobe attach cookie. One generic eBPF program serves every
//! probed function; the cookie given at attach time tells it which function
//! fired and what to capture, so no map lookup is needed on the hot path.
//!
//! ```text
//! bits  0..16  function id
//! bits 16..20  stack arguments to read (args 7.., 0..=5)
//! bits 20..24  string argument index + 1 (0: none)
//! bits 24..28  first out-parameter index + 1 (0: none)
//! bits 28..32  second out-parameter index + 1
//! bits 32..36  struct argument index + 1
//! bits 36..48  struct size in bytes
//! bit  48      struct is a CUlaunchConfig: also read its attributes
//! bits 49..51  out-parameter slot i is 4 bytes wide (else 8)
//! ```

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cookie(pub u64);

const NONE: u64 = 0;

impl Cookie {
    pub const fn new(func: u16) -> Self {
        Cookie(func as u64)
    }
    pub const fn with_stack_args(self, n: u8) -> Self {
        Cookie(self.0 & !(0xf << 16) | ((n as u64 & 0xf) << 16))
    }
    pub const fn with_str(self, idx: u8) -> Self {
        Cookie(self.0 & !(0xf << 20) | (((idx as u64 + 1) & 0xf) << 20))
    }
    pub const fn with_out(self, slot: usize, idx: u8) -> Self {
        let shift = 24 + 4 * slot as u64;
        Cookie(self.0 & !(0xf << shift) | (((idx as u64 + 1) & 0xf) << shift))
    }
    pub const fn with_blob(self, idx: u8, size: u16, launch_config: bool) -> Self {
        let v = self.0 & !(0x1_ffff << 32)
            | (((idx as u64 + 1) & 0xf) << 32)
            | ((size as u64 & 0xfff) << 36)
            | ((launch_config as u64) << 48);
        Cookie(v)
    }

    pub const fn with_out4(self, slot: usize) -> Self {
        Cookie(self.0 | (1 << (49 + slot as u64)))
    }
    #[inline(always)]
    pub const fn out_is_4(self, slot: usize) -> bool {
        (self.0 >> (49 + slot as u64)) & 1 == 1
    }

    #[inline(always)]
    pub const fn func(self) -> u16 {
        self.0 as u16
    }
    #[inline(always)]
    pub const fn stack_args(self) -> usize {
        ((self.0 >> 16) & 0xf) as usize
    }
    #[inline(always)]
    const fn idx(self, shift: u64) -> Option<usize> {
        let v = (self.0 >> shift) & 0xf;
        if v == NONE { None } else { Some(v as usize - 1) }
    }
    #[inline(always)]
    pub const fn str_arg(self) -> Option<usize> {
        self.idx(20)
    }
    #[inline(always)]
    pub const fn out_arg(self, slot: usize) -> Option<usize> {
        self.idx(24 + 4 * slot as u64)
    }
    #[inline(always)]
    pub const fn has_out(self) -> bool {
        (self.0 >> 24) & 0xff != 0
    }
    #[inline(always)]
    pub const fn blob_arg(self) -> Option<usize> {
        self.idx(32)
    }
    #[inline(always)]
    pub const fn blob_size(self) -> usize {
        ((self.0 >> 36) & 0xfff) as usize
    }
    #[inline(always)]
    pub const fn launch_config(self) -> bool {
        (self.0 >> 48) & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let c =
            Cookie::new(0x1234).with_stack_args(5).with_str(2).with_out(0, 0).with_out(1, 3).with_blob(4, 344, true);
        assert_eq!(c.func(), 0x1234);
        assert_eq!(c.stack_args(), 5);
        assert_eq!(c.str_arg(), Some(2));
        assert_eq!(c.out_arg(0), Some(0));
        assert_eq!(c.out_arg(1), Some(3));
        assert!(c.has_out());
        assert_eq!(c.blob_arg(), Some(4));
        assert_eq!(c.blob_size(), 344);
        assert!(c.launch_config());
        let plain = Cookie::new(7);
        assert_eq!(plain.str_arg(), None);
        assert_eq!(plain.out_arg(0), None);
        assert!(!plain.has_out());
        assert_eq!(plain.blob_arg(), None);
        assert!(!plain.launch_config());
    }
}
