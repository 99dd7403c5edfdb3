//! framescope-testapp: a Vulkan app with known, configurable work per frame,
//! run under framescope's layer by the integration tests. See README.md.

mod app;
mod args;
mod context;
mod headless;
mod pipeline;
mod record;
mod record_pass;
mod renderpass;
mod report;
mod scene;
mod submit;
mod swapchain;
mod targets;
mod transitions;
mod window;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(args::ParseOutcome::Run(a)) => a,
        Ok(args::ParseOutcome::Help) => {
            print!("{}", args::HELP);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("framescope-testapp: {e}");
            return ExitCode::from(2);
        }
    };
    let instructions = report::InstructionCounter::start();
    let result = if args.lifecycle > 0 {
        lifecycle(&args)
    } else {
        app::App::new(&args).and_then(|a| a.run())
    };
    match result {
        Ok(mut report) => {
            report.thread_instructions = instructions.read();
            println!("{}", report.line());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("framescope-testapp: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One lifecycle cycle of `--parallel K`: K apps at once, each creating its instance and
/// device, recording and submitting on a thread of its own; the first one's report.
fn parallel_cycle(args: &args::Args) -> Result<report::Report, Box<dyn std::error::Error>> {
    let results: Vec<Result<report::Report, String>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..args.parallel)
            .map(|_| s.spawn(|| app::App::new(args).and_then(|a| a.run()).map_err(|e| e.to_string())))
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|_| Err("an app thread panicked".into())))
            .collect()
    });
    let mut first = None;
    for r in results {
        let r = r?;
        first.get_or_insert(r);
    }
    first.ok_or_else(|| "no app ran".into())
}

/// This process's resident memory (KiB) and open file descriptors, after a pause that lets
/// threads winding down from the last cycle (a layer's, a driver's) finish.
fn footprint() -> (u64, usize) {
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Free heap pages back to the kernel first: what stays resident is what is still in use,
    // so allocator slack (±25 MiB with eight threads) does not read as a leak or hide one.
    // SAFETY: malloc_trim has no preconditions; it only releases free memory.
    unsafe { libc::malloc_trim(0) };
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0);
    // The fewest of a few counts: a leaked descriptor stays in every one, while one a layer's
    // background thread holds for a moment (a counter source reading /proc) is gone in some.
    let fds = (0..5)
        .map(|k| {
            if k > 0 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
        })
        .min()
        .unwrap_or(0);
    (rss, fds)
}

/// `--lifecycle N`: everything created and destroyed N times; the footprint after half of the
/// cycles (allocators and drivers have long warmed up: growth before that is their slack, not
/// a leak) and at the end, for the test to compare.
fn lifecycle(args: &args::Args) -> Result<report::Report, Box<dyn std::error::Error>> {
    let n = args.lifecycle;
    let warm = (n / 2).max(1);
    let mut first = None;
    let mut last = None;
    for i in 1..=n {
        last = Some(if args.parallel > 1 {
            parallel_cycle(args)?
        } else {
            app::App::new(args)?.run()?
        });
        if i == warm {
            first = Some(footprint());
        }
    }
    let ((rss0, fd0), (rss1, fd1)) = (first.unwrap_or_default(), footprint());
    println!("testapp-lifecycle {{\"cycles\":{n},\"rss_kib\":[{rss0},{rss1}],\"fds\":[{fd0},{fd1}]}}");
    last.ok_or_else(|| "no cycle ran".into())
}
