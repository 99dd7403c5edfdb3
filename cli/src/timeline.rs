//! The frame timeline's CPU side in `report`: how much of each frame the app's thread worked
//! (`cpu_busy_ns`), waited (`cpu_wait_ns`) and spent inside its present call
//! (`present_call_ns`), what it waited on over the run (`cpu_wait_by_kind_ns`), and its
//! stutters with their causes. Bounded memory whatever the dump holds (`stats::Values`, fixed
//! sums); names other than the known wait and creation kinds are ignored.

use framescope_core::creation::CreationKind;
use framescope_core::stats::{Distribution, Values};
use framescope_core::waits::WaitKind;
use serde::Deserialize;
use std::collections::BTreeMap;

/// A stutter frame's cause as the dump writes it.
#[derive(Deserialize)]
pub struct CauseFields {
    pub cause: String,
    #[serde(default)]
    pub ns: u64,
}

/// Every name a cause can have: the creation kinds, then the wait kinds.
fn cause_names() -> impl Iterator<Item = &'static str> {
    CreationKind::ALL
        .iter()
        .map(|k| k.name())
        .chain(WaitKind::ALL.iter().map(|k| k.name()))
}

const CAUSES: usize = CreationKind::COUNT + WaitKind::COUNT;

/// One statistic of a distribution, as the table shows it.
type Stat = fn(&Distribution) -> f64;

#[derive(Default)]
pub struct Timeline {
    busy: Values,
    wait: Values,
    present: Values,
    by_kind: [u64; WaitKind::COUNT],
    /// Frames that carried the waits by kind.
    frames: u64,
    stutters: u64,
    explained: u64,
    /// By cause (see [`cause_names`]): stutter frames it appears in, and its time in them.
    causes: [(u64, u64); CAUSES],
}

impl Timeline {
    pub fn add(
        &mut self,
        busy: Option<u64>,
        wait: Option<u64>,
        present: Option<u64>,
        by_kind: Option<&BTreeMap<String, Option<u64>>>,
    ) {
        if let Some(v) = busy {
            self.busy.add(v);
        }
        if let Some(v) = wait {
            self.wait.add(v);
        }
        if let Some(v) = present {
            self.present.add(v);
        }
        if let Some(m) = by_kind {
            self.frames += 1;
            for (i, k) in WaitKind::ALL.iter().enumerate() {
                if let Some(Some(ns)) = m.get(k.name()) {
                    self.by_kind[i] = self.by_kind[i].saturating_add(*ns);
                }
            }
        }
    }

    /// A stutter frame: whether a cause explains it, and its causes.
    pub fn add_stutter(&mut self, explained: bool, causes: &[CauseFields]) {
        self.stutters += 1;
        self.explained += u64::from(explained);
        for c in causes {
            if let Some(i) = cause_names().position(|n| n == c.cause) {
                self.causes[i].0 += 1;
                self.causes[i].1 = self.causes[i].1.saturating_add(c.ns);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.busy.count() == 0
            && self.wait.count() == 0
            && self.present.count() == 0
            && self.frames == 0
            && self.stutters == 0
    }

    /// The report's section; `duration_ns` is the run's, for the waits' shares.
    pub fn render(&self, duration_ns: u64) -> String {
        if self.is_empty() {
            return String::new();
        }
        let ms = |v: f64| format!("{:.3} ms", v / 1e6);
        let (busy, wait, present) = (
            self.busy.distribution(),
            self.wait.distribution(),
            self.present.distribution(),
        );
        let cell = |d: &Option<Distribution>, f: Stat| d.as_ref().map_or("-".into(), |d| ms(f(d)));
        let mut s = format!(
            "  frame timeline, CPU (PresentMon's CPU busy/wait with the app's waits split out)\n  {:<12}{:>14}{:>14}{:>14}\n",
            "", "cpu busy", "cpu wait", "in present"
        );
        let rows: [(&str, Stat); 5] = [
            ("mean", |d| d.mean),
            ("p50", |d| d.p50 as f64),
            ("p95", |d| d.p95 as f64),
            ("p99", |d| d.p99 as f64),
            ("max", |d| d.max as f64),
        ];
        for (name, f) in rows {
            s.push_str(&format!(
                "  {:<12}{:>14}{:>14}{:>14}\n",
                name,
                cell(&busy, f),
                cell(&wait, f),
                cell(&present, f)
            ));
        }
        if self.stutters > 0 || self.frames > 0 {
            s.push_str(&format!(
                "  stutters: {} frames (2.5x the median of the last 100 and 8 ms or more), {} of them explained by a cause\n",
                self.stutters, self.explained
            ));
            for (name, (n, ns)) in cause_names().zip(self.causes) {
                if n > 0 {
                    s.push_str(&format!("    {name:<10} in {n} stutters, {} in them\n", ms(ns as f64)));
                }
            }
        }
        if self.frames > 0 {
            s.push_str(&format!("  waits over {} frames:", self.frames));
            for (i, k) in WaitKind::ALL.iter().enumerate() {
                let ns = self.by_kind[i];
                let share = if duration_ns > 0 {
                    format!(" ({:.1}%)", ns as f64 * 100.0 / duration_ns as f64)
                } else {
                    String::new()
                };
                s.push_str(&format!(" {} {}{share};", k.name(), ms(ns as f64)));
            }
            s.pop();
            s.push('\n');
        }
        s.push('\n');
        s
    }

    /// `report --json`'s `timeline` object; `None` without timeline fields.
    pub fn to_json(&self) -> Option<serde_json::Value> {
        if self.is_empty() {
            return None;
        }
        let d = |v: &Values| {
            v.distribution()
                .map(|d| serde_json::json!({"mean": d.mean, "p50": d.p50, "p95": d.p95, "p99": d.p99, "max": d.max}))
        };
        let kinds: serde_json::Map<String, serde_json::Value> = WaitKind::ALL
            .iter()
            .enumerate()
            .map(|(i, k)| (k.name().to_string(), self.by_kind[i].into()))
            .collect();
        Some(serde_json::json!({
            "cpu_busy_ns": d(&self.busy),
            "cpu_wait_ns": d(&self.wait),
            "present_call_ns": d(&self.present),
            "cpu_wait_by_kind_ns": kinds,
            "frames_with_waits": self.frames,
            "stutters": self.stutters,
            "stutters_explained": self.explained,
            "stutter_causes": cause_names()
                .zip(self.causes)
                .filter(|(_, (n, _))| *n > 0)
                .map(|(name, (n, ns))| serde_json::json!({"cause": name, "stutters": n, "ns": ns}))
                .collect::<Vec<_>>(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_waits_are_summed_and_unknown_keys_ignored() {
        let mut t = Timeline::default();
        assert!(t.is_empty() && t.render(1).is_empty() && t.to_json().is_none());
        let mut m = BTreeMap::new();
        m.insert("fence".to_string(), Some(4_000_000));
        m.insert("fps_limit".to_string(), Some(1_000_000));
        m.insert("bogus".to_string(), Some(u64::MAX));
        for _ in 0..2 {
            t.add(Some(10_000_000), Some(5_000_000), Some(500_000), Some(&m));
        }
        let j = t.to_json().unwrap();
        assert_eq!(j["cpu_wait_by_kind_ns"]["fence"], 8_000_000);
        assert_eq!(j["cpu_wait_by_kind_ns"]["acquire"], 0);
        assert_eq!(j["cpu_busy_ns"]["p50"], 10_000_000);
        let text = t.render(100_000_000);
        assert!(text.contains("fence 8.000 ms (8.0%)"), "{text}");
        assert!(text.contains("fps_limit 2.000 ms (2.0%)"), "{text}");
        assert!(!text.contains("bogus"), "{text}");
        let c = |cause: &str, ns| CauseFields {
            cause: cause.into(),
            ns,
        };
        t.add_stutter(true, &[c("pipeline", 30_000_000), c("fence", 2_000_000)]);
        t.add_stutter(false, &[c("nonsense", 1)]);
        let j = t.to_json().unwrap();
        assert_eq!(
            (j["stutters"].as_u64(), j["stutters_explained"].as_u64()),
            (Some(2), Some(1))
        );
        assert_eq!(j["stutter_causes"][0]["cause"], "pipeline");
        assert_eq!(j["stutter_causes"].as_array().unwrap().len(), 2);
        let text = t.render(100_000_000);
        assert!(text.contains("stutters: 2 frames"), "{text}");
        assert!(text.contains("pipeline   in 1 stutters, 30.000 ms"), "{text}");
    }
}
