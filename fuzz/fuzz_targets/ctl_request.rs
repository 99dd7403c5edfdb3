//! The control socket's request parser on any line: a JSON reply with `ok`, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    let reply = framescope_core::ctl::answer(line);
    assert!(reply["ok"].is_boolean(), "{reply}");
});
