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
//! bits 36..47  struct size in bytes (at most 2047)
//! bit  47      --capture-data: stop the thread when the call returns (SIGSTOP),
//!               so that userspace can read what it wrote (device-to-host data)
//! bit  48      struct is a CUlaunchConfig: also read its attributes
//! bits 49..51  out-parameter slot i is 4 bytes wide (else 8)
//! bit  51      --replayable: stop the thread at entry (SIGSTOP) so that
//!               userspace can read memory the call was given (code images,
//!               copy sources) before the call runs
//! bits 52..55  --replayable: what the return probe does ([`role`])
//! bits 55..59  launches: `kernelParams` argument index + 1
//! bits 59..63  launches: `extra` argument index + 1
//! bit  63      launches: the function handle is argument 1 (else 0)
//!               (graph construction calls use bits 55..64 for their node
//!               lists instead: tracer-common/src/graph.rs)
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
        let v = self.0 & !(0x1_7fff << 32)
            | (((idx as u64 + 1) & 0xf) << 32)
            | ((size as u64 & 0x7ff) << 36)
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
        ((self.0 >> 36) & 0x7ff) as usize
    }
    #[inline(always)]
    pub const fn launch_config(self) -> bool {
        (self.0 >> 48) & 1 == 1
    }

    pub const fn with_stop_at_return(self) -> Self {
        Cookie(self.0 | (1 << 47))
    }
    #[inline(always)]
    pub const fn stop_at_return(self) -> bool {
        (self.0 >> 47) & 1 == 1
    }
    pub const fn with_stop(self) -> Self {
        Cookie(self.0 | (1 << 51))
    }
    #[inline(always)]
    pub const fn stop(self) -> bool {
        (self.0 >> 51) & 1 == 1
    }
    pub const fn with_role(self, role: u8) -> Self {
        Cookie(self.0 & !(0x7 << 52) | ((role as u64 & 0x7) << 52))
    }
    #[inline(always)]
    pub const fn role(self) -> u8 {
        ((self.0 >> 52) & 0x7) as u8
    }
    /// Where a launch function's handle, `kernelParams` and `extra` are.
    pub const fn with_launch_args(self, f: u8, kernel_params: u8, extra: Option<u8>) -> Self {
        let e = match extra {
            Some(i) => (i as u64 + 1) & 0xf,
            None => 0,
        };
        Cookie(
            self.0 & !(0x1ff << 55)
                | (((kernel_params as u64 + 1) & 0xf) << 55)
                | (e << 59)
                | (((f == 1) as u64) << 63),
        )
    }
    #[inline(always)]
    pub const fn kernel_params_arg(self) -> Option<usize> {
        self.idx(55)
    }
    #[inline(always)]
    pub const fn extra_arg(self) -> Option<usize> {
        self.idx(59)
    }
    #[inline(always)]
    pub const fn func_handle_arg(self) -> usize {
        (self.0 >> 63) as usize
    }
}

/// What the return probe of a function does for `--replayable` (cookie bits
/// 52..55).
pub mod role {
    pub const NONE: u8 = 0;
    /// A code load: key the returned module/library by the image id
    /// userspace left in PENDING_IMAGE for this thread.
    pub const LOAD: u8 = 1;
    /// cuModuleGetFunction / cuLibraryGetKernel (out handle 0, module 1,
    /// name 2): key the returned handle by the layout of the name.
    pub const GET_FUNCTION: u8 = 2;
    /// cuKernelGetFunction (out 0, kernel 1): the function gets the
    /// kernel's layout.
    pub const ALIAS_LAYOUT: u8 = 3;
    /// cuLibraryGetModule (out 0, library 1): the module gets the
    /// library's image.
    pub const ALIAS_MODULE: u8 = 4;
    /// Not a return role: a graph call that passes kernel node parameters
    /// (cuGraphAddKernelNode*, cuGraph*NodeSetParams*): its entry goes to
    /// the launch program, which also copies the node's parameter bytes
    /// (tracer-ebpf/src/graph_params.rs).
    pub const GRAPH_NODE: u8 = 5;
    /// `--capture-data`: an asynchronous device-to-host copy. Its successful
    /// return marks its process as having bytes to read at the next
    /// synchronization (PENDING_D2H); it does not stop the thread.
    pub const D2H_ASYNC: u8 = 6;
    /// `--capture-data`: a synchronization. Its return stops the thread only
    /// when its process has asynchronous device-to-host copies to read
    /// (PENDING_D2H; a successful one clears the mark).
    pub const SYNC: u8 = 7;

    /// Roles whose entry saves arguments for the return probe (ROLE_ARGS).
    pub const fn saves_args(r: u8) -> bool {
        r != NONE && r < D2H_ASYNC
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
        assert!(!plain.stop());
        assert_eq!(plain.role(), role::NONE);
        assert_eq!(plain.kernel_params_arg(), None);
        assert_eq!(plain.extra_arg(), None);
        assert_eq!(plain.func_handle_arg(), 0);
        let l = c.with_stop().with_role(role::GET_FUNCTION).with_launch_args(1, 2, Some(3));
        assert_eq!((l.func(), l.stack_args(), l.str_arg(), l.blob_size()), (0x1234, 5, Some(2), 344));
        assert_eq!((l.out_is_4(0), l.out_is_4(1)), (false, false));
        assert!(l.stop());
        assert!(!l.stop_at_return());
        let r = l.with_stop_at_return();
        assert!(r.stop_at_return() && r.stop() && r.launch_config());
        assert_eq!((r.blob_size(), r.blob_arg(), r.func()), (344, Some(4), 0x1234));
        assert_eq!(l.role(), role::GET_FUNCTION);
        assert_eq!((l.func_handle_arg(), l.kernel_params_arg(), l.extra_arg()), (1, Some(2), Some(3)));
        let k = Cookie::new(9).with_launch_args(0, 9, Some(10));
        assert_eq!((k.func_handle_arg(), k.kernel_params_arg(), k.extra_arg()), (0, Some(9), Some(10)));
        let co = Cookie::new(9).with_launch_args(0, 9, None).with_out4(1);
        assert_eq!((co.kernel_params_arg(), co.extra_arg(), co.out_is_4(1)), (Some(9), None, true));
    }
}
