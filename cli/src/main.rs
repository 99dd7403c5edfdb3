//! `framescope`: run apps under the layer, install it, and read dumps. The commands live in
//! the library (`framescope_cli`); this is their dispatch.

use framescope_cli::{compare, counters, ctl, export, install, plot, report, run, text};

const USAGE: &str = "\
usage: framescope <command> [args]

commands:
  run [--] CMD ARGS...     run CMD with framescope enabled (nothing installed)
  install [--prefix DIR]   install the Vulkan layer manifests (implicit + explicit)
  uninstall [--prefix DIR] remove them
  report DUMP...           print the summary of JSON Lines dumps (one table each)
  compare BASE NEW         a regression gate: per-metric change with a bootstrap interval;
                           exit 0 no regression, 1 regression, 2 unusable input
  plot DUMP... -o FILE.svg|FILE.png [--counter NAME]...
                           frame time, GPU time, percentiles and counters, dumps overlaid
  export DUMP (--perfetto FILE | --csv FILE | --presentmon FILE | --parquet FILE)...
                           convert a dump: Perfetto trace, MangoHud CSV, PresentMon CSV
  ctl PID start|stop|status|mark LABEL
                           control a running app's dump (capture on/off, marks)
  counters [--gpu NAME] [--json] [--explain NAME]
                           list known counters
";

fn main() {
    // Arguments are bytes (paths, the app's own arguments); only what must be text is checked,
    // where it is used.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let Some(cmd) = args.first() else {
        eprint!("{USAGE}");
        std::process::exit(2);
    };
    let rest = &args[1..];
    let code = match cmd.to_str().unwrap_or("") {
        "run" => run::main(rest),
        "install" => install::install_main(rest),
        "uninstall" => install::uninstall_main(rest),
        "report" => report::main(rest),
        "export" => export::main(rest),
        "compare" => compare::main(rest),
        "plot" => plot::main(rest),
        "ctl" => ctl::main(rest),
        "counters" => counters::main(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            0
        }
        _ => {
            eprintln!("framescope: unknown command '{}'\n{USAGE}", text::show(cmd));
            2
        }
    };
    std::process::exit(code);
}
