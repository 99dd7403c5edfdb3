//! Intel OA record and report parsing on arbitrary bytes: i915 record framing, Xe raw
//! report splitting, report decoding in the four seed 004 formats, deltas, calibration and
//! frame windows must never panic.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    framescope_collectors::intel::fuzzing::oa_records(data);
});
