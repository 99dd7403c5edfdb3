//! Every reader of dump bytes in the CLI (`report`, `export` to all four formats) on any
//! input: no panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    framescope_cli::fuzzing::dump_readers(data);
});
