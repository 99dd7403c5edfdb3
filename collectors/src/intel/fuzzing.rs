//! The body of the `oa_records` fuzz target (`collectors/fuzz`), kept in the crate so that
//! the stable test suite runs it too: every pure OA parser on arbitrary bytes, chained as
//! the source chains them (records or raw reports, decoding, deltas, calibration, windows).

use super::accumulate::Deltas;
use super::clock::Calibration;
use super::frames::{Interval, Windower};
use super::report::{decode_rpt_id, Layout, Report, RptVariant};
use super::{discover, i915_perf, xe_observation};
use std::sync::OnceLock;

fn layouts() -> &'static [Layout] {
    static L: OnceLock<Vec<Layout>> = OnceLock::new();
    L.get_or_init(|| {
        [0, 2, 5, 7]
            .iter()
            .filter_map(|&s| Layout::for_select(s).ok())
            .collect()
    })
}

/// Byte 0 picks the framing (even: i915 records, odd: Xe raw reports) and the layout;
/// bytes 1..9 the calibration; the rest is the stream.
pub fn oa_records(data: &[u8]) {
    let layouts = layouts();
    if layouts.is_empty() {
        return;
    }
    let (head, body) = data.split_at(data.len().min(9));
    let mode = head.first().copied().unwrap_or(0);
    let layout = &layouts[usize::from(mode >> 1) % layouts.len()];
    let mut cal = [0u8; 8];
    cal[..head.len().saturating_sub(1)].copy_from_slice(head.get(1..).unwrap_or(&[]));
    let cal = Calibration {
        gpu_ts: u32::from_le_bytes([cal[0], cal[1], cal[2], cal[3]]),
        cpu_ns: u64::from(u32::from_le_bytes([cal[4], cal[5], cal[6], cal[7]])) << 16,
        freq_hz: u64::from(cal[0]) * 1_000_000,
    };

    let mut reports: Vec<Option<&[u8]>> = Vec::new();
    if mode & 1 == 0 {
        let mut it = i915_perf::records(body);
        for r in it.by_ref() {
            match r {
                i915_perf::Record::Sample(p) => reports.push(Some(p)),
                i915_perf::Record::ReportLost | i915_perf::Record::BufferLost => reports.push(None),
                i915_perf::Record::Unknown(_) => {}
            }
        }
        let _ = it.malformed();
    } else {
        let (chunks, _rest) = xe_observation::split_reports(body, layout.size);
        reports.extend(chunks.map(Some));
    }

    let mut w = Windower::new();
    let mut prev: Option<Report> = None;
    for r in reports {
        let Some(bytes) = r else {
            prev = None;
            continue;
        };
        let Ok(cur) = layout.decode(bytes) else { continue };
        let _ = decode_rpt_id(cur.rpt_id, RptVariant::Gen8);
        let _ = decode_rpt_id(cur.rpt_id, RptVariant::Gen9);
        if let Some(p) = &prev {
            if let (Some(b), Some(e)) = (cal.to_mono(p.timestamp), cal.to_mono(cur.timestamp)) {
                w.push(Interval {
                    begin_ns: b,
                    end_ns: e,
                    deltas: Deltas::between(layout, p, &cur),
                });
            }
        }
        prev = Some(cur);
    }
    let _ = w.take(Some(cal.cpu_ns));
    let _ = w.take(None);

    let _ = xe_observation::parse_property_chain(body);
    let _ = xe_observation::parse_first_oa_unit(body);
    let _ = i915_perf::parse_properties(head, body);
    let _ = discover::parse_cap_eff(body);
}
