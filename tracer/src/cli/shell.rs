//! `tracer completions bash|zsh|fish` and `tracer man`: shell completions
//! (clap_complete) and a man page (clap_mangen) generated from the command
//! line's own definition, so they list exactly the subcommands, options and
//! values `tracer` accepts.
use clap::{Command, CommandFactory as _};

use super::args::Shell;

/// The command line, built (with its generated `--help` and `--version`).
fn cli() -> Command {
    let mut c = super::args::Cli::command();
    c.build();
    c
}

/// `tracer completions SHELL`.
pub fn completions(shell: Shell) -> String {
    let sh = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(sh, &mut visible(&cli()), "tracer", &mut out);
    let s = String::from_utf8_lossy(&out).into_owned();
    match shell {
        Shell::Bash => bash_after_dashes(&s),
        _ => s,
    }
}

/// `c` without its hidden options and subcommands (benchmark switches,
/// aliases): clap_complete 4.6 completes hidden options too. Help and
/// version are left to the new command to generate.
fn visible(c: &Command) -> Command {
    let mut n = Command::new(c.get_name().to_string()).bin_name(c.get_bin_name().unwrap_or(c.get_name()).to_string());
    if let Some(a) = c.get_about() {
        n = n.about(a.clone());
    }
    if let Some(v) = c.get_version() {
        n = n.version(v.to_string());
    }
    for a in c.get_arguments().filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version")) {
        n = n.arg(a.clone());
    }
    for sub in c.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        n = n.subcommand(visible(sub));
    }
    n
}

/// clap_complete's bash function goes on offering tracer's options after
/// `--`, where the words are the recorded command's: there, complete files.
fn bash_after_dashes(script: &str) -> String {
    let body = script.replacen("_tracer() {", "_tracer_options() {", 1);
    format!(
        "{body}\n# After `--`: the recorded command's words (files).\n_tracer() {{\n    local i\n    for ((i = 1; i < \
         COMP_CWORD; i++)); do\n        if [[ ${{COMP_WORDS[i]}} == -- ]]; then COMPREPLY=($(compgen -f -- \"$2\")); \
         return 0; fi\n    done\n    _tracer_options \"$@\"\n}}\n"
    )
}

/// The visible subcommands (not `help`).
fn subcommands(c: &Command) -> Vec<Command> {
    c.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help").cloned().collect()
}

/// `tracer man`: the man page (section 1), in roff: clap_mangen's page of
/// `tracer` (name, synopsis, description, options, commands, version), then
/// one section per subcommand with its synopsis, description and options.
pub fn man() -> String {
    let c = cli();
    let mut page = Vec::new();
    let _ = clap_mangen::Man::new(c.clone()).render(&mut page);
    let mut s = String::from_utf8_lossy(&page).into_owned();
    s.push_str(".SH \"COMMAND DETAILS\"\n");
    for sub in subcommands(&c) {
        let name = sub.get_name().to_string();
        let sub = sub.bin_name(format!("tracer {name}"));
        let mut part = Vec::new();
        let m = clap_mangen::Man::new(sub.clone());
        let _ = m.render_synopsis_section(&mut part);
        let _ = m.render_description_section(&mut part);
        if sub.get_arguments().any(|a| !a.is_hide_set()) {
            let _ = m.render_options_section(&mut part);
        }
        let text = String::from_utf8_lossy(&part)
            .replace(".SH SYNOPSIS\n", "")
            .replace(".SH DESCRIPTION\n", ".PP\n")
            .replace(".SH OPTIONS\n", ".PP\nOptions:\n");
        s.push_str(&format!(".SS tracer {name}\n{text}"));
    }
    s = ascii_roff(&s);
    s.push_str(
        ".SH \"EXIT STATUS\"\n0 on success; 1 on a run\\-time failure; 2 on a misuse of the command line; 127 when the \
         command to record is not found; when recording, the recorded command's own exit status.\n.SH \"SEE ALSO\"\n\
         README.md and docs/ in tracer's repository.\n",
    );
    s
}

/// Characters beyond ASCII as roff's `\[uXXXX]`: clap_mangen writes them
/// raw, which groff reads correctly only through preconv (man does, `groff
/// -man` does not and warns).
fn ascii_roff(t: &str) -> String {
    t.chars().map(|c| if c.is_ascii() { c.to_string() } else { format!("\\[u{:04X}]", c as u32) }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_ascii_escaped() {
        assert_eq!(ascii_roff("10-40× …"), "10-40\\[u00D7] \\[u2026]");
    }
}
