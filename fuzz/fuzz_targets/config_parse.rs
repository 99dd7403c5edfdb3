//! The config parser on any text (FRAMESCOPE_CONFIG entries and config file lines): no panic,
//! and every error line it makes is bounded, whatever the input's size.

#![no_main]

use framescope_core::config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (_, errors) = config::parse(text);
    for line in config::error_lines(&errors) {
        assert!(line.len() < 4096, "an error line of {} bytes", line.len());
    }
    let mut c = config::Config::default();
    let _ = c.apply_file_str(text, "/fuzz.conf");
});
