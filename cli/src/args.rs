//! The command line, declared with clap: the commands, their options and help text, and how
//! a usage error is printed. Each command's options are its module's `Args`; parsing ends here,
//! so a command's `main` gets typed values.
//!
//! Paths and the app's command line stay `OsString`/`PathBuf` (bytes: a file name need not be
//! UTF-8); values that must be text go through [`text`]. Usage errors exit 2 and `--help`
//! exits 0, as before clap; every line of a usage error is escaped and cut ([`escape`]), since
//! it can quote an argument: a hostile one is one bounded line, never a terminal escape.

use crate::text::escape;
use crate::{compare, counters, ctl, doctor, export, gpu_sampler, html, install, plot, report, run};
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand};
use std::ffi::OsString;

pub use crate::usage::{text, usage_error, USAGE_EXIT};

#[derive(Parser, Debug)]
#[command(
    name = "framescope",
    bin_name = "framescope",
    version,
    about = "GPU profiling overlay: run apps under the layer, install it, and read dumps",
    subcommand_required = true,
    arg_required_else_help = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// run CMD with framescope enabled (nothing installed)
    #[command(long_about = run::ABOUT, after_help = run::EXAMPLES, after_long_help = run::after_long_help())]
    Run(run::Args),
    /// install the Vulkan layer manifests (implicit + explicit)
    #[command(long_about = install::INSTALL_ABOUT, after_help = install::INSTALL_EXAMPLES)]
    Install(install::Args),
    /// remove the installed Vulkan layer manifests and library
    #[command(long_about = install::UNINSTALL_ABOUT, after_help = install::UNINSTALL_EXAMPLES)]
    Uninstall(install::Args),
    /// print the summary of JSON Lines dumps (one table each)
    #[command(long_about = report::ABOUT, after_help = report::EXAMPLES)]
    Report(report::Args),
    /// a regression gate: per-metric change with a bootstrap interval; exit 0 no regression,
    /// 1 regression, 2 unusable input
    #[command(
        override_usage = compare::USAGE,
        long_about = compare::ABOUT,
        after_help = compare::EXAMPLES,
        after_long_help = compare::AFTER_LONG_HELP
    )]
    Compare(compare::Args),
    /// frame time, GPU time, percentiles and counters, dumps overlaid
    #[command(long_about = plot::ABOUT, after_help = plot::EXAMPLES)]
    Plot(plot::Args),
    /// convert a dump: Perfetto trace, MangoHud CSV, PresentMon CSV, Parquet
    #[command(long_about = export::ABOUT, after_help = export::EXAMPLES)]
    Export(export::Args),
    /// control a running app's dump (capture on/off, marks)
    #[command(override_usage = ctl::USAGE, long_about = ctl::ABOUT, after_help = ctl::EXAMPLES)]
    Ctl(ctl::Args),
    /// list known counters
    #[command(after_help = counters::EXAMPLES)]
    Counters(counters::Args),
    /// check what framescope needs here and name the fix for what is missing
    #[command(long_about = doctor::ABOUT, after_help = doctor::EXAMPLES)]
    Doctor(doctor::Args),
    /// run NVIDIA PM sampling (CUPTI) for the apps beside it: counters `pm_*`, HUD preset `pm`
    #[command(long_about = gpu_sampler::ABOUT, after_help = gpu_sampler::EXAMPLES)]
    GpuSampler(gpu_sampler::Args),
    /// print a shell completion script for framescope
    #[command(
        after_help = "examples:\n  framescope completions bash > ~/.local/share/bash-completion/completions/framescope\n  framescope completions zsh > ~/.zfunc/_framescope\n  framescope completions fish > ~/.config/fish/completions/framescope.fish"
    )]
    Completions(CompletionsArgs),
    /// write framescope's manual pages (framescope.1 and framescope-COMMAND.1) into DIR
    #[command(hide = true)]
    Manpages(ManpagesArgs),
}

#[derive(clap::Args, Debug)]
pub struct ManpagesArgs {
    /// the directory to write the pages into (it must exist)
    #[arg(value_name = "DIR")]
    pub dir: std::path::PathBuf,
}

/// Writes `framescope.1` and one page per visible command into `dir`, as packages install
/// them (`cargo xtask package`).
fn write_manpages(dir: &std::path::Path) -> std::io::Result<()> {
    let top = Cli::command();
    let mut pages = vec![("framescope.1".to_string(), top.clone())];
    for sub in top.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("framescope-{}", sub.get_name());
        // The page's title and usage name the whole command (`framescope-run`).
        let cmd = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("framescope {}", sub.get_name()));
        pages.push((format!("{name}.1"), cmd));
    }
    for (file, cmd) in pages {
        let mut roff = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut roff)?;
        crate::locate::write_atomically(&dir.join(file), &String::from_utf8_lossy(&roff))?;
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// the shell to complete in
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Parses `args` (the first one is the program's name) and runs the command; returns the
/// exit status.
pub fn main(args: impl IntoIterator<Item = OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => return clap_error(&e),
    };
    match cli.command {
        Command::Run(a) => run::main(a),
        Command::Install(a) => install::install_main(a),
        Command::Uninstall(a) => install::uninstall_main(a),
        // Without a DUMP, `report` prints its usage error for both.
        Command::Report(a) => match &a.html {
            Some(out) if !a.dumps.is_empty() => {
                let by_frames = a.aggregate.as_deref() == Some("frames");
                html::main(out, &a.dumps, a.group_by.as_deref().unwrap_or("driver"), by_frames)
            }
            _ => report::main(a),
        },
        Command::Compare(a) => compare::main(a),
        Command::Plot(a) => plot::main(a),
        Command::Export(a) => export::main(a),
        Command::Ctl(a) => ctl::main(a),
        Command::Counters(a) => counters::main(a),
        Command::Doctor(a) => doctor::main(a),
        Command::GpuSampler(a) => gpu_sampler::main(a),
        Command::Completions(a) => {
            clap_complete::generate(a.shell, &mut Cli::command(), "framescope", &mut std::io::stdout());
            0
        }
        Command::Manpages(a) => match write_manpages(&a.dir) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("framescope manpages: {}: {e}", crate::text::show(a.dir.as_os_str()));
                1
            }
        },
    }
}

/// Prints what clap stopped at; returns its exit status (0 for `--help` and `--version`).
fn clap_error(e: &clap::Error) -> i32 {
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        // Our own text only; a write error (a closed pipe) changes nothing.
        let _ = e.print();
        return e.exit_code();
    }
    // Plain text (no colour), so escaping cannot mangle clap's own styling.
    let rendered = e.render().to_string();
    for (n, line) in rendered.lines().enumerate() {
        let line = if n == 0 {
            format!("framescope: {}", line.strip_prefix("error: ").unwrap_or(line))
        } else {
            line.to_string()
        };
        eprintln!("{}", escape(&line));
    }
    USAGE_EXIT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn usage_lines_name_the_command() {
        let mut cli = Cli::command();
        cli.build();
        let usage = cli.find_subcommand_mut("report").unwrap().render_usage().to_string();
        assert!(usage.starts_with("Usage: framescope report"), "{usage}");
    }
}
