//! Misuse of the command line that tracer rejects before it needs any
//! privilege: one line on stderr, starting with "tracer: ", and exit code 2.
//! (Output-path misuse is checked after the privilege check:
//! root_reliability.rs.)
use std::process::{Command, Stdio};

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_tracer")).args(args).stdin(Stdio::null()).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn misuse(args: &[&str], want: &str) {
    let (code, stdout, stderr) = run(args);
    assert_eq!(code, Some(2), "tracer {args:?}: {stderr}");
    assert_eq!(stderr, format!("tracer: {want}\n"), "tracer {args:?}");
    assert!(stdout.is_empty(), "tracer {args:?}: {stdout}");
}

#[test]
fn unknown_flag() {
    // A flag like no other (clap suggests a similar one: for '--bogus' it
    // names '--counts').
    misuse(
        &["--xyzzy", "--", "true"],
        "unexpected argument '--xyzzy' found (to pass '--xyzzy' as a value, use '-- --xyzzy'); \
         usage: tracer [OPTIONS] [-- <CMD>...]",
    );
    misuse(
        &["summary", "--bogus", "x"],
        "unexpected argument '--bogus' found (to pass '--bogus' as a value, use '-- --bogus'); usage: tracer summary [OPTIONS] <TRACE>",
    );
}

#[test]
fn no_command() {
    let want = "no command to trace: give one after `--` (tracer [OPTIONS] -- CMD [ARGS...]) or attach to a process with -p PID";
    misuse(&[], want);
    misuse(&["-o", "x.jsonl"], want);
    misuse(&["record"], want);
}

#[test]
fn pid_missing_invalid_or_not_running() {
    misuse(&["-p"], "a value is required for '--pid <PID>' but none was supplied; see tracer --help");
    misuse(&["-p", "abc"], "invalid value 'abc' for '--pid <PID>': invalid digit found in string; see tracer --help");
    // Above any pid_max: never a running process.
    misuse(&["-p", "4294967294"], "-p 4294967294: no such process");
    misuse(
        &["-p", "1", "--", "true"],
        "the argument '--pid <PID>' cannot be used with '[CMD]...'; usage: tracer --pid <PID> [-- <CMD>...]",
    );
}

#[test]
fn bad_values_and_subcommand_arguments() {
    misuse(&["--buffer-size", "3", "--", "true"], "--buffer-size 3: must be a power of two between 1 and 4096 MiB");
    misuse(&["summary"], "the following required arguments were not provided: <TRACE>; usage: tracer summary <TRACE>");
    misuse(
        &["--wakeup", "sometimes", "--", "true"],
        "invalid value 'sometimes' for '--wakeup <WAKEUP>' [possible values: batched, every]; see tracer --help",
    );
}

#[test]
fn help_and_version_are_not_errors() {
    let (code, stdout, stderr) = run(&["--help"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("Usage: tracer"), "{stdout}");
    let (code, stdout, _) = run(&["--version"]);
    assert_eq!(code, Some(0));
    // The version and the commit the binary was built from (build.rs).
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown".to_string(), |o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    assert_eq!(stdout, format!("tracer {} (commit {head})\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn parquet_export_options() {
    // checked before the trace is read: the file need not exist
    misuse(
        &["export", "no-such.jsonl", "--format", "parquet", "-o", "-"],
        "--format parquet writes a directory of files: -o DIR, not -",
    );
    misuse(&["export", "no-such.jsonl", "--format", "parquet", "--host", " "], "--host: an empty host name");
    misuse(&["export", "no-such.jsonl", "--host", "node1"], "--host applies to --format parquet only");
}

/// `tracer agent`'s web options: a bad web config file names the file, the
/// line and the key; POST /record needs a recording directory; a duty
/// cycle is ON/PERIOD with ON shorter.
#[test]
fn agent_web_options() {
    let dir = std::env::temp_dir().join(format!("tracer-misuse-web-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let web = dir.join("web.yml");
    let w = web.to_str().unwrap();
    std::fs::write(&web, "tls_server_config:\n  cert_file: a.crt\n  cipher_suites: [x]\n").unwrap();
    misuse(
        &["agent", "--listen", ":0", "--all-libcuda", "--web.config.file", w],
        &format!(
            "--web.config.file {w}: line 3: tls_server_config: unknown field `cipher_suites`, expected one of `cert_file`, \
             `key_file`, `client_auth_type`, `client_ca_file`, `min_version`, `max_version` at line 3 column 3 (keys: \
             tls_server_config.cert_file/key_file/client_auth_type/client_ca_file/min_version/max_version, basic_auth_users)"
        ),
    );
    std::fs::write(&web, "basic_auth_users:\n  prom: hunter2\n").unwrap();
    misuse(
        &["agent", "--listen", ":0", "--all-libcuda", "--web.config.file", w],
        &format!(
            "--web.config.file {w}: basic_auth_users.prom: not a bcrypt hash ($2y$10$..., e.g. from `htpasswd -nBC 10 prom`)"
        ),
    );
    misuse(
        &["agent", "--listen", ":0", "--all-libcuda", "--web.enable-record"],
        "the following required arguments were not provided: --record-dir <DIR>; usage: tracer agent --listen <ADDR> \
         --record-dir <DIR> --all-libcuda --web.enable-record [-- <CMD>...]",
    );
    misuse(
        &["agent", "--listen", ":0", "--all-libcuda", "--duty-cycle", "3s/1s"],
        "invalid value '3s/1s' for '--duty-cycle <ON/PERIOD>': \"3s/1s\": ON must be more than 0 and less than PERIOD \
         (e.g. 1s/10s); see tracer --help",
    );
    let _ = std::fs::remove_dir_all(&dir);
}
