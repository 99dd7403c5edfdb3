//! `framescope counters [--gpu NAME] [--json] [--explain NAME]`: lists the counters of a
//! GPU's counter set, or explains one. The data and its rendering live in
//! `framescope-collectors`; this module only declares the options and picks what to print.

use crate::text::escape;
use framescope_collectors::{databases, listing};

pub const EXAMPLES: &str = "\
examples:
  framescope counters
  framescope counters --gpu mali-g76
  framescope counters --gpu mali-g76 --explain JM.GPU_UTILIZATION";

// `counters`' options (a plain comment: a doc comment would become clap's about text).
#[derive(clap::Args, Debug)]
#[command(args_override_self = true)]
pub struct Args {
    /// list the GPU's counters: kind, unit, formula, description (without it: the known GPUs
    /// and the common metrics)
    #[arg(long, value_name = "NAME", value_parser = crate::usage::text())]
    pub gpu: Option<String>,
    /// show one counter and its resolved hardware-only expression (needs --gpu)
    #[arg(long, value_name = "COUNTER", value_parser = crate::usage::text())]
    pub explain: Option<String>,
    /// print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

pub fn main(args: Args) -> i32 {
    if args.explain.is_some() && args.gpu.is_none() {
        return crate::usage::usage_error::<Args>(
            "counters",
            "framescope counters: --explain needs --gpu: derived counters resolve per GPU",
        );
    }
    let dbs = match databases() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("framescope counters: counter database error: {e}");
            return 1;
        }
    };
    let Some(gpu) = args.gpu else {
        if args.json {
            println!("{:#}", listing::overview_json(dbs));
        } else {
            print!("{}", listing::render_overview(dbs));
        }
        return 0;
    };
    let set = match dbs.counter_set(&gpu) {
        Ok(s) => s,
        Err(e) => {
            let known: Vec<_> = dbs.profiles().iter().map(|p| p.name.as_str()).collect();
            // The message quotes the name given, which may be anything.
            eprintln!(
                "framescope counters: {} (known: {})",
                escape(&e.to_string()),
                known.join(", ")
            );
            return 1;
        }
    };
    match args.explain {
        Some(name) => {
            let Some(c) = set.find(&name) else {
                eprintln!("framescope counters: {} has no counter '{}'", set.gpu(), escape(&name));
                return 1;
            };
            if args.json {
                println!("{:#}", listing::counter_json(set, c));
            } else {
                print!("{}", listing::explain(set, c));
            }
        }
        None if args.json => println!("{:#}", listing::set_json(set)),
        None => print!("{}", listing::render_set(set)),
    }
    0
}
