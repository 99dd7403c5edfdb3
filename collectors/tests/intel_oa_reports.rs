//! Pure Intel OA decoding: the four report formats of seed 004 laid out by hand
//! (`intel::fake::build_report`, written from the seed's tables) and read back through the
//! format database, deltas with 32- and 40-bit wrap, RPT_ID fields, i915 record framing, the
//! report-to-CLOCK_MONOTONIC calibration across a 32-bit wrap, the OA exponent, and garbage
//! that must never panic. Every expected value is written as a number or arithmetic here.

use framescope_collectors::intel::accumulate::{delta32, delta40, Deltas};
use framescope_collectors::intel::clock::{self, Calibration};
use framescope_collectors::intel::fake::{build_report, ReportFields};
use framescope_collectors::intel::frames::{Interval, Windower};
use framescope_collectors::intel::i915_perf::{self, Record};
use framescope_collectors::intel::report::{decode_rpt_id, reason, Layout, RptVariant};
use framescope_collectors::intel::{discover, xe_observation};

fn delta_of(layout: &Layout, d: &Deltas, name: &str) -> u64 {
    d.counters[layout
        .index(name)
        .unwrap_or_else(|| panic!("{name} not in {}", layout.name))]
}

#[test]
fn format_101b_joins_40_bit_counters_and_wraps_at_2_pow_40() {
    let layout = Layout::for_select(5).unwrap();
    assert_eq!(layout.size, 256);
    let r0 = build_report(
        5,
        &ReportFields {
            rpt_id: 0x0008_0000,
            timestamp: 1000,
            ctx_id: 0x42,
            gpu_ticks: 0xFFFF_FF00,
            a: vec![
                (0, 0xFF_FFFF_FFF0),
                (1, 5),
                (5, 0x12_3456_789A),
                (31, 0x01_0000_0000),
                (32, 0xFFFF_FFFF),
            ],
            b: vec![(0, 10)],
            c: vec![(7, 20)],
        },
    )
    .unwrap();
    // The high byte of A5 sits apart from its low dword (byte 160 + 5), the low dword at
    // DW 4 + 5.
    assert_eq!(r0[165], 0x12);
    assert_eq!(&r0[36..40], &0x3456_789Au32.to_le_bytes());
    let d0 = layout.decode(&r0).unwrap();
    assert_eq!(
        (d0.rpt_id, d0.timestamp, d0.ctx_id, d0.gpu_ticks),
        (0x0008_0000, 1000, 0x42, 0xFFFF_FF00)
    );
    assert_eq!(d0.counters[layout.index("OA.A5").unwrap()], 0x12_3456_789A);
    assert_eq!(d0.counters[layout.index("OA.A0").unwrap()], 0xFF_FFFF_FFF0);
    assert_eq!(d0.counters[layout.index("OA.A32").unwrap()], 0xFFFF_FFFF);
    assert_eq!(d0.counters[layout.index("OA.C7").unwrap()], 20);

    let r1 = build_report(
        5,
        &ReportFields {
            timestamp: 1000 + 8192,
            gpu_ticks: 0x100,
            a: vec![
                (0, 0x10),
                (1, 305),
                (5, 0x12_3456_789A + 7),
                (31, 0x02_0000_0001),
                (32, 4),
            ],
            b: vec![(0, 15)],
            c: vec![(7, 27)],
            ..ReportFields::default()
        },
    )
    .unwrap();
    let d1 = layout.decode(&r1).unwrap();
    let d = Deltas::between(&layout, &d0, &d1);
    assert_eq!(d.timestamp, 8192);
    // GPU_TICKS wraps at 2^32: 0x100 more than 0xFFFF_FF00 is 0x100 + 0x100 ticks later.
    assert_eq!(d.gpu_ticks, 0x200);
    // A0 wraps at 2^40: from 2^40 - 16 to 16.
    assert_eq!(delta_of(&layout, &d, "OA.A0"), 32);
    assert_eq!(delta_of(&layout, &d, "OA.A1"), 300);
    assert_eq!(delta_of(&layout, &d, "OA.A5"), 7);
    // A carry into the high byte: 0x02_0000_0001 - 0x01_0000_0000.
    assert_eq!(delta_of(&layout, &d, "OA.A31"), 0x1_0000_0001);
    // A32 is a 32-bit counter: from 2^32 - 1 to 4.
    assert_eq!(delta_of(&layout, &d, "OA.A32"), 5);
    assert_eq!(delta_of(&layout, &d, "OA.B0"), 5);
    assert_eq!(delta_of(&layout, &d, "OA.C7"), 7);
}

#[test]
fn format_000b_has_only_low_dwords_of_a7_to_a18_and_wraps_them_at_2_pow_32() {
    let layout = Layout::for_select(0).unwrap();
    assert_eq!(layout.size, 64);
    assert_eq!(layout.index("OA.A0"), None);
    assert_eq!(layout.index("OA.B0"), None);
    let r0 = build_report(
        0,
        &ReportFields {
            timestamp: 50,
            gpu_ticks: 7,
            a: vec![(7, 0xFFFF_FFF0), (18, 100)],
            ..ReportFields::default()
        },
    )
    .unwrap();
    // A18's low dword is DW 15, the last of the 64 bytes.
    assert_eq!(&r0[60..64], &100u32.to_le_bytes());
    let r1 = build_report(
        0,
        &ReportFields {
            timestamp: 150,
            gpu_ticks: 9,
            a: vec![(7, 0x10), (18, 160)],
            ..ReportFields::default()
        },
    )
    .unwrap();
    let d = Deltas::between(&layout, &layout.decode(&r0).unwrap(), &layout.decode(&r1).unwrap());
    assert_eq!((d.timestamp, d.gpu_ticks), (100, 2));
    assert_eq!(delta_of(&layout, &d, "OA.A7"), 0x20);
    assert_eq!(delta_of(&layout, &d, "OA.A18"), 60);
}

#[test]
fn format_010b_adds_b_and_c_counters() {
    let layout = Layout::for_select(2).unwrap();
    assert_eq!(layout.size, 128);
    let mk = |ts, b7, c0, a9| {
        let f = ReportFields {
            timestamp: ts,
            a: vec![(9, a9)],
            b: vec![(7, b7)],
            c: vec![(0, c0)],
            ..ReportFields::default()
        };
        build_report(2, &f).unwrap()
    };
    let (r0, r1) = (mk(10, 0xFFFF_FFFF, 3, 1), mk(20, 1, 13, 4));
    // B7 at DW 23, C0 at DW 24.
    assert_eq!(&r1[92..96], &1u32.to_le_bytes());
    assert_eq!(&r1[96..100], &13u32.to_le_bytes());
    let d = Deltas::between(&layout, &layout.decode(&r0).unwrap(), &layout.decode(&r1).unwrap());
    assert_eq!(delta_of(&layout, &d, "OA.B7"), 2);
    assert_eq!(delta_of(&layout, &d, "OA.C0"), 10);
    assert_eq!(delta_of(&layout, &d, "OA.A9"), 3);
}

#[test]
fn format_111b_is_c0_to_c3_then_b0_to_b7() {
    let layout = Layout::for_select(7).unwrap();
    assert_eq!(layout.size, 64);
    assert_eq!(layout.index("OA.C4"), None);
    let mk = |c3, b0| {
        let f = ReportFields {
            c: vec![(3, c3)],
            b: vec![(0, b0)],
            ..ReportFields::default()
        };
        build_report(7, &f).unwrap()
    };
    let (r0, r1) = (mk(1, 2), mk(41, 0x1_0002u32));
    assert_eq!(&r1[28..32], &41u32.to_le_bytes()); // C3 at DW 7
    assert_eq!(&r1[32..36], &0x1_0002u32.to_le_bytes()); // B0 at DW 8
    let d = Deltas::between(&layout, &layout.decode(&r0).unwrap(), &layout.decode(&r1).unwrap());
    assert_eq!(delta_of(&layout, &d, "OA.C3"), 40);
    assert_eq!(delta_of(&layout, &d, "OA.B0"), 0x1_0000);
}

#[test]
fn other_counter_selects_are_refused_and_short_reports_fail() {
    for s in [1, 3, 4, 6, 8] {
        assert!(Layout::for_select(s).is_err(), "select {s}");
    }
    let layout = Layout::for_select(5).unwrap();
    assert!(layout.decode(&[0u8; 255]).is_err());
}

#[test]
fn wrap_helpers() {
    assert_eq!(delta32(0xFFFF_FFFF, 0), 1);
    assert_eq!(delta32(5, 5), 0);
    assert_eq!(delta40((1 << 40) - 1, 0), 1);
    assert_eq!(delta40(0, (1 << 40) - 1), (1 << 40) - 1);
    // Bits above 40 are not part of the counter.
    assert_eq!(delta40(1 << 41, 3), 3);
}

#[test]
fn rpt_id_fields_in_both_variants() {
    // Gen9: slice clock bits 31:25 = 0x55 and 10:9 = 0b10, unslice 8:0 = 0x1AB, timer and
    // context-switch reasons, render context valid at bit 16.
    let v = (0x55u32 << 25) | (1 << 19) | (1 << 22) | (1 << 16) | (0b10 << 9) | 0x1AB;
    let r = decode_rpt_id(v, RptVariant::Gen9);
    assert_eq!(r.reason, reason::TIMER | reason::CONTEXT_SWITCH);
    assert!(r.context_valid && !r.start_trigger && !r.threshold);
    assert_eq!(r.slice_clock, Some(0x55 + (0b10 << 7)));
    assert_eq!(r.unslice_clock, Some(0x1AB));
    assert_eq!(r.timer_enabled, None);
    // Gen8: render context valid at bit 25, timer enabled at 16, start trigger 18,
    // threshold 17.
    let v = (1u32 << 25) | (1 << 16) | (1 << 18) | (1 << 17) | (1 << 20);
    let r = decode_rpt_id(v, RptVariant::Gen8);
    assert_eq!(r.reason, reason::TRIGGER_1);
    assert!(r.context_valid && r.start_trigger && r.threshold);
    assert_eq!(r.timer_enabled, Some(true));
    assert_eq!(r.slice_clock, None);
}

#[test]
fn i915_records_with_a_lost_report() {
    let report = build_report(5, &ReportFields::default()).unwrap();
    let mut b = i915_perf::frame_record(i915_perf::RECORD_SAMPLE, &report);
    b.extend(i915_perf::frame_record(i915_perf::RECORD_OA_REPORT_LOST, &[]));
    b.extend(i915_perf::frame_record(i915_perf::RECORD_OA_BUFFER_LOST, &[]));
    b.extend(i915_perf::frame_record(99, &[1, 2]));
    // The header: type 1, pad, size 8 + 256.
    assert_eq!(&b[0..8], &[1, 0, 0, 0, 0, 0, 0x08, 0x01]);
    let mut it = i915_perf::records(&b);
    assert_eq!(it.next(), Some(Record::Sample(&report[..])));
    assert_eq!(it.next(), Some(Record::ReportLost));
    assert_eq!(it.next(), Some(Record::BufferLost));
    assert_eq!(it.next(), Some(Record::Unknown(99)));
    assert_eq!(it.next(), None);
    assert!(!it.malformed());
    // A record running past the buffer ends the walk.
    let mut it = i915_perf::records(&b[..100]);
    assert_eq!(it.next(), None);
    assert!(it.malformed());
}

#[test]
fn xe_reports_split_on_the_report_size() {
    let buf = vec![0u8; 256 * 3 + 10];
    let (reports, rest) = xe_observation::split_reports(&buf, 256);
    assert_eq!((reports.count(), rest), (3, 10));
    let (reports, rest) = xe_observation::split_reports(&buf, 0);
    assert_eq!((reports.count(), rest), (0, buf.len()));
}

#[test]
fn calibration_undoes_a_32_bit_timestamp_wrap() {
    // 12 MHz: 12 ticks per microsecond. The calibration pair is 1 ms (12000 ticks) after a
    // report at 0x1000; another report lies 8192 ticks before that one, across the wrap.
    let cal = Calibration {
        gpu_ts: 0x1000 + 12_000,
        cpu_ns: 5_000_000_000,
        freq_hz: 12_000_000,
    };
    assert_eq!(cal.to_mono(0x1000), Some(5_000_000_000 - 1_000_000));
    let before_wrap = 0x1000u32.wrapping_sub(8192);
    assert_eq!(before_wrap, 0xFFFF_F000);
    // (12000 + 8192) ticks = 1 682 666.67 ns, truncated.
    assert_eq!(cal.to_mono(before_wrap), Some(5_000_000_000 - 1_682_666));
    assert_eq!(delta32(before_wrap, 0x1000), 8192);
    // A report after the calibration pair maps forward.
    assert_eq!(cal.to_mono(0x1000 + 24_000), Some(5_000_000_000 + 1_000_000));
    assert_eq!(Calibration { freq_hz: 0, ..cal }.to_mono(0), None);
}

#[test]
fn exponent_for_a_period() {
    // 2^(e+1) ticks at 12 MHz: e = 12 gives 8192 ticks = 682 666 ns <= 1 ms; e = 13 gives
    // 1 365 333 ns > 1 ms.
    assert_eq!(clock::exponent_for(1_000_000, 12_000_000), 12);
    assert_eq!(clock::period_ns(12, 12_000_000), Some(682_666));
    // 19.2 MHz: 2^15 ticks = 1 706 666 ns <= 2 ms, 2^16 = 3 413 333 ns > 2 ms.
    assert_eq!(clock::exponent_for(2_000_000, 19_200_000), 14);
    assert_eq!(clock::exponent_for(1, 12_000_000), 0);
    assert_eq!(clock::exponent_for(u64::MAX, 12_000_000), 31);
}

#[test]
fn windows_cut_at_the_frame_end() {
    let iv = |b: u64, e: u64, ticks: u64| Interval {
        begin_ns: b,
        end_ns: e,
        deltas: Deltas {
            gpu_ticks: ticks,
            pairs: 1,
            ..Deltas::default()
        },
    };
    let mut w = Windower::new();
    w.push(iv(0, 10, 1));
    w.push(iv(10, 20, 2));
    w.push(iv(20, 30, 4));
    let a = w.take(Some(25)).unwrap();
    assert_eq!(
        (a.begin_ns, a.end_ns, a.deltas.gpu_ticks, a.deltas.pairs),
        (0, 20, 3, 2)
    );
    // The frame end is now behind the pending interval: it goes out whole.
    let b = w.take(Some(25)).unwrap();
    assert_eq!((b.begin_ns, b.end_ns, b.deltas.gpu_ticks), (20, 30, 4));
    assert!(w.take(None).is_none());
}

#[test]
fn cap_eff_and_status_parsing() {
    let status = b"Name:\tx\nCapPrm:\t0000000000000000\nCapEff:\t0000004000000000\n";
    assert_eq!(discover::parse_cap_eff(status), Some(1 << 38));
    assert_eq!(discover::parse_cap_eff(b"CapEff:\tzz\n"), None);
    assert_eq!(discover::parse_cap_eff(&[0xff, 0xfe]), None);
}

/// A small deterministic generator for garbage input.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn garbage_never_panics() {
    let layouts: Vec<Layout> = [0, 2, 5, 7].iter().map(|&s| Layout::for_select(s).unwrap()).collect();
    let mut g = XorShift(0x9E37_79B9_7F4A_7C15);
    for round in 0..2000 {
        let n = (g.next() % 1200) as usize;
        let mut b = g.bytes(n);
        // Make some inputs look like records so the walk goes deeper.
        if round % 3 == 0 && b.len() >= 8 {
            b[0..4].copy_from_slice(&1u32.to_le_bytes());
            let size = (g.next() % 300) as u16;
            b[6..8].copy_from_slice(&size.to_le_bytes());
        }
        let mut prev = None;
        for r in i915_perf::records(&b) {
            if let Record::Sample(p) = r {
                for l in &layouts {
                    if let Ok(rep) = l.decode(p) {
                        if let Some(p0) = &prev {
                            let _ = Deltas::between(l, p0, &rep);
                        }
                        prev = Some(rep);
                    }
                }
            }
        }
        let (reports, _) = xe_observation::split_reports(&b, 256);
        for r in reports {
            let _ = layouts[2].decode(r);
        }
        let _ = xe_observation::parse_property_chain(&b);
        let _ = xe_observation::parse_first_oa_unit(&b);
        let _ = i915_perf::parse_properties(&b, &b);
        let _ = discover::parse_cap_eff(&b);
        let v = g.next();
        let _ = decode_rpt_id(v as u32, RptVariant::Gen9);
        let cal = Calibration {
            gpu_ts: v as u32,
            cpu_ns: g.next(),
            freq_hz: g.next() % 100_000_000,
        };
        let _ = cal.to_mono(g.next() as u32);
        let _ = clock::exponent_for(g.next(), g.next());
        // The fuzz target's body, with every framing and layout choice.
        b.insert(0, round as u8);
        framescope_collectors::intel::fuzzing::oa_records(&b);
    }
}
