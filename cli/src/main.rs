//! `framescope`: run apps under the layer, install it, and read dumps. The commands and their
//! command line live in the library (`framescope_cli`).

fn main() {
    // Arguments are bytes (paths, the app's own arguments); only what must be text is checked,
    // where it is parsed.
    std::process::exit(framescope_cli::args::main(std::env::args_os()));
}
