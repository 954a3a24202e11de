//! Command-line errors as one line and exit code 2 (clap's own messages span
//! several lines: the error, a tip, the usage, a pointer to --help).
use clap::error::ErrorKind;

/// clap's rendered error text, as one line: the error, any tip in
/// parentheses, then the first usage line.
pub fn one_line(kind: ErrorKind, text: &str) -> String {
    let text = text.trim();
    let (body, usage) = match text.split_once("\nUsage:") {
        Some((b, u)) => (b, u.lines().next().map(str::trim).filter(|u| !u.is_empty())),
        None => (text, None),
    };
    let mut main = Vec::new();
    let mut tips = Vec::new();
    for l in body.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if l.starts_with("For more information") {
            continue;
        }
        match l.strip_prefix("tip: ") {
            Some(t) => tips.push(t),
            None => main.push(l.strip_prefix("error: ").unwrap_or(l)),
        }
    }
    let mut s = main.join(" ");
    if kind == ErrorKind::MissingRequiredArgument && s.contains("<CMD>") {
        s = "no command to trace: give one after `--` (tracer [OPTIONS] -- CMD [ARGS...]) or attach to a process \
             with -p PID"
            .to_string();
        return s;
    }
    if !tips.is_empty() {
        s = format!("{s} ({})", tips.join("; "));
    }
    match usage {
        Some(u) => format!("{s}; usage: {u}"),
        None => format!("{s}; see tracer --help"),
    }
}

/// Prints help or version (exit 0), or the error as one line (exit 2).
pub fn exit_on_clap_error(e: clap::Error) -> ! {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            e.exit()
        }
        kind => {
            eprintln!("tracer: {}", one_line(kind, &e.render().to_string()));
            std::process::exit(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::Cli;
    use clap::Parser as _;

    fn err(args: &[&str]) -> String {
        let e = Cli::try_parse_from(args).unwrap_err();
        one_line(e.kind(), &e.render().to_string())
    }

    #[test]
    fn clap_errors_on_one_line() {
        // A flag like no other (for '--bogus' clap suggests '--counts').
        assert_eq!(
            err(&["tracer", "--xyzzy"]),
            "unexpected argument '--xyzzy' found (to pass '--xyzzy' as a value, use '-- --xyzzy'); \
             usage: tracer [OPTIONS] [-- <CMD>...]"
        );
        assert_eq!(
            err(&["tracer"]),
            "no command to trace: give one after `--` (tracer [OPTIONS] -- CMD [ARGS...]) or attach to a process \
             with -p PID"
        );
        assert_eq!(
            err(&["tracer", "-p"]),
            "a value is required for '--pid <PID>' but none was supplied; see tracer --help"
        );
        assert_eq!(
            err(&["tracer", "-p", "12x"]),
            "invalid value '12x' for '--pid <PID>': invalid digit found in string; see tracer --help"
        );
        assert_eq!(
            err(&["tracer", "summary"]),
            "the following required arguments were not provided: <TRACE>; usage: tracer summary <TRACE>"
        );
        for args in [&["tracer", "--bogus"][..], &["tracer"], &["tracer", "-p"], &["tracer", "ioctls"]] {
            assert!(!err(args).contains('\n'), "{args:?}");
        }
    }
}
