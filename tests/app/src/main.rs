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
    let result = app::App::new(&args).and_then(|a| a.run());
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
