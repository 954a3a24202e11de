//! Checks of options that record and agent share (one-line usage errors).
/// `-p PID` (record, agent): the process must exist.
pub fn check_pid(pid: u32) -> Result<(), crate::error::UsageError> {
    if std::path::Path::new(&format!("/proc/{pid}")).exists() {
        Ok(())
    } else {
        Err(crate::error::UsageError(format!("-p {pid}: no such process")))
    }
}

/// `--buffer-size MIB` (record, agent): the ring buffer's size, a power of
/// two between 1 and 4096 MiB.
pub fn check_buffer_size(mib: u32) -> Result<(), crate::error::UsageError> {
    if mib == 0 || !mib.is_power_of_two() || mib > 4096 {
        return Err(crate::error::UsageError(format!(
            "--buffer-size {mib}: must be a power of two between 1 and 4096 MiB"
        )));
    }
    Ok(())
}
