//! Boots the kernel and initramfs under qemu TCG, logs the serial console, reads the verdict
//! from the exit code: isa-debug-exit makes qemu exit with (value << 1) | 1, and /init
//! writes 0 when every test passed, 1 otherwise.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::tools::Tools;
use crate::util;

const TIMEOUT: Duration = Duration::from_secs(600);
/// Console lines shown as they arrive (everything goes to console.log).
const SHOWN: &[&str] = &["init: ", "PASS: ", "FAIL: ", "SKIP: ", "VERDICT: "];

pub fn boot(tools: &Tools, vmlinuz: &Path, initrd: &Path, console: &Path) -> Result<()> {
    let mut qemu = tools.qemu();
    // TCG: this host's /dev/kvm is kvm-pvm, on which a stock kernel hangs while booting.
    qemu.args(["-accel", "tcg", "-cpu", "max", "-m", "1G", "-smp", "2", "-nographic", "-no-reboot", "-nic", "none"])
        .args(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-kernel"])
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(initrd)
        .args(["-append", "console=ttyS0 panic=-1 quiet loglevel=3"]);
    println!("kprobe-vm: booting {} (TCG, timeout {} s)", vmlinuz.display(), TIMEOUT.as_secs());
    let start = Instant::now();
    let mut child =
        qemu.stdin(Stdio::null()).stdout(Stdio::piped()).spawn().context("cannot run qemu-system-x86_64")?;

    let stdout = child.stdout.take().context("qemu stdout")?;
    let mut log = File::create(console).with_context(|| format!("creating {}", console.display()))?;
    let reader = thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).split(b'\n').map_while(Result::ok) {
            let line = strip_escapes(&String::from_utf8_lossy(&line));
            let _ = writeln!(log, "{line}");
            if SHOWN.iter().any(|p| line.starts_with(p)) {
                println!("vm: {line} [host {}]", util::secs(start.elapsed()));
            }
            lines.push(line);
        }
        lines
    });

    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(50));
    };
    let lines = reader.join().unwrap_or_default();
    println!("kprobe-vm: qemu ran {} (boot to verdict); console: {}", util::secs(start.elapsed()), console.display());

    let outcome = match status.map(|s| s.code()) {
        Some(Some(1)) => return Ok(()),
        Some(Some(3)) => "a test failed".to_owned(),
        Some(Some(0)) => "no verdict: the kernel panicked or /init died".to_owned(),
        Some(code) => format!("qemu failed (exit code {code:?})"),
        None => format!("timed out after {} s", TIMEOUT.as_secs()),
    };
    println!("-- last console lines:");
    for l in &lines[lines.len().saturating_sub(40)..] {
        println!("{l}");
    }
    bail!("{outcome}")
}

/// Drops \r and the terminal escape sequences SeaBIOS and the tracer's logger print.
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {}
            // ESC [ params final-byte (CSI), or ESC plus one character.
            '\x1b' => {
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}
