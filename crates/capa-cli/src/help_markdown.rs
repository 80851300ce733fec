//! `capa help-markdown`: the command reference as Markdown, from the same
//! clap definitions that parse the flags, so docs/cli.md cannot drift from
//! them (a test compares the two).

use std::fmt::Write;

use clap::{Arg, Command};

/// The reference of `capa` and `capa-train`, every subcommand in order.
pub fn markdown(capa: &Command) -> String {
    let mut out = String::from(
        "# Command reference\n\n\
         Generated from the binaries' own argument definitions by `capa help-markdown > docs/cli.md`; \
         do not edit by hand. `capa <command> --help` prints the same text.\n",
    );
    for root in [capa.clone(), capa_train::cli::command()] {
        let mut root = root;
        root.build();
        section(&mut out, &root, 2);
    }
    out
}

/// One command's section, then its subcommands' one level deeper.
fn section(out: &mut String, command: &Command, level: usize) {
    let name = command.get_bin_name().unwrap_or_else(|| command.get_name());
    let _ = writeln!(out, "\n{} `{name}`\n", "#".repeat(level.min(4)));
    if let Some(about) = command.get_long_about().or_else(|| command.get_about()) {
        let _ = writeln!(out, "{}\n", about.to_string().trim_end());
    }
    let usage = command.clone().render_usage().to_string();
    let _ = writeln!(out, "```text\n{}\n```", usage.trim_end());
    let arguments: Vec<&Arg> = command.get_arguments().filter(|arg| !arg.is_hide_set() && !is_builtin(arg)).collect();
    if !arguments.is_empty() {
        out.push('\n');
        for arg in arguments {
            argument(out, arg);
        }
    }
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help") {
        section(out, sub, level + 1);
    }
}

/// `--help` and `--version`: clap's own, the same everywhere.
fn is_builtin(arg: &Arg) -> bool {
    matches!(arg.get_id().as_str(), "help" | "version")
}

/// One argument as a list item: its syntax, help, choices and default.
fn argument(out: &mut String, arg: &Arg) {
    let value =
        arg.get_value_names().map(|names| names.join(" ")).unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    let syntax = match (arg.get_long(), arg.get_short()) {
        (Some(long), _) if takes_value => format!("--{long} <{value}>"),
        (Some(long), _) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => format!("<{value}>"),
    };
    let help = arg.get_long_help().or_else(|| arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
    let mut help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    if !help.is_empty() && !help.ends_with(['.', '!', '?']) {
        help.push('.');
    }
    let _ = write!(out, "- `{syntax}`: {help}");
    let choices: Vec<String> =
        arg.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| format!("`{}`", v.get_name())).collect();
    if !choices.is_empty() && takes_value {
        let _ = write!(out, " One of {}.", choices.join(", "));
    }
    let defaults: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
    if !defaults.is_empty() && takes_value {
        let _ = write!(out, " Default: `{}`.", defaults.join(" "));
    }
    out.push('\n');
}
