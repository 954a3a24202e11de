//! Reading a probed call's arguments at entry: the attach cookie, the
//! register and stack arguments, and the struct argument a cookie names.
//! Shared by every entry program (uprobe.rs, replay.rs, graph.rs,
//! graph_params.rs); imports none of them.
use aya_ebpf::{
    EbpfContext,
    helpers::{bpf_get_attach_cookie, bpf_probe_read_user, bpf_probe_read_user_buf},
    programs::ProbeContext,
};
use tracer_common::{
    cookie::Cookie,
    event::{CallEnterBlob, MAX_ARGS, MAX_LAUNCH_ATTRS},
};

#[inline(always)]
pub(crate) fn cookie<C: EbpfContext>(ctx: &C) -> Cookie {
    Cookie(unsafe { bpf_get_attach_cookie(ctx.as_ptr()) })
}

/// Reads the 6 register arguments and `c.stack_args()` stack arguments
/// into `args`, writing every slot (the ones past the function's own
/// arguments get 0), so callers need not zero it first: a `[0; MAX_ARGS]`
/// assignment compiles to a call of a byte-by-byte memset subprogram in
/// BPF (88 iterations per call, plus 40 for a local buffer: ~15 % of the
/// program's time on a launch, `perf` in `cargo xtask bench collector`).
#[inline(always)]
pub(crate) fn read_args(ctx: &ProbeContext, c: Cookie, args: &mut [u64; MAX_ARGS]) {
    let regs = unsafe { &*ctx.regs };
    args[0] = regs.rdi;
    args[1] = regs.rsi;
    args[2] = regs.rdx;
    args[3] = regs.rcx;
    args[4] = regs.r8;
    args[5] = regs.r9;
    let n = c.stack_args();
    if n == 0 {
        zero(&mut args[6]);
        zero(&mut args[7]);
        zero(&mut args[8]);
        zero(&mut args[9]);
        zero(&mut args[10]);
        return;
    }
    // At the first instruction rsp points at the return address; the 7th
    // argument follows it. One read for all of them, straight into the
    // record (a user-memory read is a helper call plus the kernel's
    // usercopy checks, ~100-200 ns here). The words past the function's own
    // arguments belong to the caller's frame and are zeroed below. Should
    // that wider read fail (the frame at the very top of a stack), the
    // function's own words are read one by one.
    let sp = regs.rsp + 8;
    let ok = unsafe {
        let buf = core::slice::from_raw_parts_mut(args.as_mut_ptr().add(6) as *mut u8, 8 * (MAX_ARGS - 6));
        bpf_probe_read_user_buf(sp as *const u8, buf).is_ok()
    };
    if !ok {
        // Unrolled: indexing in a loop leaves bounds-check panics the
        // verifier rejects.
        let rd = |k: u64| unsafe { bpf_probe_read_user((sp + 8 * k) as *const u64) }.unwrap_or(0);
        args[6] = rd(0);
        if n > 1 {
            args[7] = rd(1);
        }
        if n > 2 {
            args[8] = rd(2);
        }
        if n > 3 {
            args[9] = rd(3);
        }
        if n > 4 {
            args[10] = rd(4);
        }
    }
    // Only the function's own stack arguments: the rest is not ours to report.
    if n < 2 {
        zero(&mut args[7]);
    }
    if n < 3 {
        zero(&mut args[8]);
    }
    if n < 4 {
        zero(&mut args[9]);
    }
    if n < 5 {
        zero(&mut args[10]);
    }
}

/// A single 8-byte store of 0 that LLVM cannot merge with its neighbours
/// into a call of the byte-loop memset.
#[inline(always)]
fn zero(slot: &mut u64) {
    unsafe { core::ptr::write_volatile(slot, 0) }
}

/// `args[i]` with constant indexes only: a variable index compiles to a
/// bounds check on one register and an access through another, which older
/// verifiers (Linux 6.1) cannot relate ("invalid access to memory").
#[inline(always)]
pub(crate) fn arg_at(args: &[u64; MAX_ARGS], i: usize) -> u64 {
    match i {
        0 => args[0],
        1 => args[1],
        2 => args[2],
        3 => args[3],
        4 => args[4],
        5 => args[5],
        6 => args[6],
        7 => args[7],
        8 => args[8],
        9 => args[9],
        10 => args[10],
        _ => 0,
    }
}

const LAUNCH_CONFIG_SIZE: usize = 56;
const LAUNCH_ATTR_SIZE: usize = 72;

#[inline(always)]
pub(crate) fn read_blob(c: Cookie, ptr: u64, rec: &mut CallEnterBlob) {
    if c.launch_config() {
        // CUlaunchConfig: 7 x u32 dims/shmem, pad, hStream @32, attrs @40, numAttrs @48.
        let cfg = &mut rec.data[..LAUNCH_CONFIG_SIZE];
        if unsafe { bpf_probe_read_user_buf(ptr as *const u8, cfg) }.is_err() {
            return;
        }
        rec.len = LAUNCH_CONFIG_SIZE as u32;
        let attrs = u64::from_le_bytes([
            rec.data[40],
            rec.data[41],
            rec.data[42],
            rec.data[43],
            rec.data[44],
            rec.data[45],
            rec.data[46],
            rec.data[47],
        ]);
        let n = u32::from_le_bytes([rec.data[48], rec.data[49], rec.data[50], rec.data[51]]) as usize;
        let mut k = 0;
        while k < MAX_LAUNCH_ATTRS {
            if k >= n {
                break;
            }
            let off = LAUNCH_CONFIG_SIZE + k * LAUNCH_ATTR_SIZE;
            let Some(dst) = rec.data.get_mut(off..off + LAUNCH_ATTR_SIZE) else { break };
            if unsafe { bpf_probe_read_user_buf((attrs + (k * LAUNCH_ATTR_SIZE) as u64) as *const u8, dst) }.is_err() {
                break;
            }
            k += 1;
        }
        rec.nattrs = k as u32;
        rec.len = (LAUNCH_CONFIG_SIZE + k * LAUNCH_ATTR_SIZE) as u32;
        return;
    }
    let size = c.blob_size();
    // Struct sizes are fixed per function: branch to constant-size reads the
    // verifier can check.
    let ok = match size {
        12 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..12]) }.is_ok(),
        16 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..16]) }.is_ok(),
        32 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..32]) }.is_ok(),
        40 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..40]) }.is_ok(),
        56 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..56]) }.is_ok(),
        72 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..72]) }.is_ok(),
        128 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..128]) }.is_ok(),
        200 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..200]) }.is_ok(),
        232 => unsafe { bpf_probe_read_user_buf(ptr as *const u8, &mut rec.data[..232]) }.is_ok(),
        _ => false,
    };
    if ok {
        rec.len = size as u32;
    }
}
