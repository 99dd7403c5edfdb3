//! `framescope counters [--gpu NAME] [--json] [--explain NAME]`: lists the counters of a
//! GPU's counter set, or explains one. The data and its rendering live in
//! `framescope-collectors`; this module only parses arguments.

use framescope_collectors::{databases, listing};

const USAGE: &str = "usage: framescope counters [--gpu NAME] [--json] [--explain COUNTER]
  (no --gpu)          list the known GPUs and the common metrics
  --gpu NAME          list the GPU's counters: kind, unit, formula, description
  --explain COUNTER   show one counter and its resolved hardware-only expression (needs --gpu)
  --json              print JSON instead of text

examples:
  framescope counters
  framescope counters --gpu mali-g76
  framescope counters --gpu mali-g76 --explain JM.GPU_UTILIZATION";

struct Args {
    gpu: Option<String>,
    explain: Option<String>,
    json: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut out = Args {
        gpu: None,
        explain: None,
        json: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or(format!("{flag} needs a value"))
        };
        match flag {
            "--gpu" => out.gpu = Some(value()?),
            "--explain" => out.explain = Some(value()?),
            "--json" => out.json = true,
            _ => return Err(format!("unknown argument '{a}'")),
        }
    }
    if out.explain.is_some() && out.gpu.is_none() {
        return Err("--explain needs --gpu: derived counters resolve per GPU".into());
    }
    Ok(out)
}

pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let args = match crate::text::all_utf8(args, "an argument of counters") {
        Ok(a) => a,
        Err(e) => {
            eprintln!("framescope counters: {e}");
            return 2;
        }
    };
    let args = &args[..];
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return 0;
    }
    let args = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("framescope counters: {e}\n{USAGE}");
            return 2;
        }
    };
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
            eprintln!("framescope counters: {e} (known: {})", known.join(", "));
            return 1;
        }
    };
    match args.explain {
        Some(name) => {
            let Some(c) = set.find(&name) else {
                eprintln!("framescope counters: {} has no counter '{name}'", set.gpu());
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
