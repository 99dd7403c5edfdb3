//! The frame timeline in `report`: how much of each frame the app's thread worked
//! (`cpu_busy_ns`), waited (`cpu_wait_ns`) and spent inside its present call
//! (`present_call_ns`), what it waited on over the run, its stutters with their causes, and
//! when frames reached the screen. The numbers are the summary's `timeline`
//! ([`framescope_core::timeline_stats`]), fed from the frames the report read.

use framescope_core::stats::{Distribution, SummaryBuilder};
use framescope_core::timeline_stats::{DisplaySummary, TimelineSummary};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The timeline fields of a frame record the report reads (absent in dumps that predate
/// them).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct TimelineFields {
    cpu_busy_ns: Option<u64>,
    cpu_wait_ns: Option<u64>,
    present_call_ns: Option<u64>,
    cpu_wait_by_kind_ns: Option<BTreeMap<String, Option<u64>>>,
    stutter: bool,
    stutter_explained: bool,
    stutter_causes: Vec<CauseFields>,
    display: Option<String>,
    display_source: Option<String>,
    shown_ns: Option<u64>,
    display_latency_ns: Option<u64>,
    displayed_time_ns: Option<u64>,
}

/// A stutter frame's cause as the dump writes it.
#[derive(Deserialize)]
pub struct CauseFields {
    pub cause: String,
    #[serde(default)]
    pub ns: u64,
}

impl TimelineFields {
    /// Adds the frame to the summary being recomputed, as the writer does.
    pub fn add_to(&self, b: &mut SummaryBuilder) {
        let t = &mut b.timeline;
        let waits = self
            .cpu_wait_by_kind_ns
            .as_ref()
            .map(|m| m.iter().filter_map(|(k, v)| Some((k.as_str(), (*v)?))));
        t.add_cpu(self.cpu_busy_ns, self.cpu_wait_ns, self.present_call_ns, waits);
        if self.stutter {
            let causes = self.stutter_causes.iter().map(|c| (c.cause.as_str(), c.ns));
            t.add_stutter(self.stutter_explained, causes);
        }
        if let Some(state) = &self.display {
            t.add_display(
                state,
                self.display_source.as_deref(),
                self.shown_ns,
                self.display_latency_ns,
                self.displayed_time_ns,
            );
        }
    }
}

/// One statistic of a distribution, as the table shows it.
type Stat = fn(&Distribution) -> f64;

fn ms(v: f64) -> String {
    format!("{:.3} ms", v / 1e6)
}

/// The report's section; `duration_ns` is the run's (for the waits' shares), `fps_mean`
/// the presented rate (against the displayed one).
pub fn render(t: Option<&TimelineSummary>, duration_ns: u64, fps_mean: Option<f64>) -> String {
    let Some(t) = t else { return String::new() };
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
            cell(&t.cpu_busy_ns, f),
            cell(&t.cpu_wait_ns, f),
            cell(&t.present_call_ns, f)
        ));
    }
    if t.stutters > 0 || t.frames_with_waits > 0 {
        s.push_str(&format!(
            "  stutters: {} frames (2.5x the median of the last 100 and 8 ms or more), {} of them explained by a cause\n",
            t.stutters, t.stutters_explained
        ));
        for c in &t.stutter_causes {
            s.push_str(&format!(
                "    {:<10} in {} stutters, {} in them\n",
                c.cause,
                c.stutters,
                ms(c.ns as f64)
            ));
        }
    }
    if t.frames_with_waits > 0 {
        s.push_str(&format!("  waits over {} frames:", t.frames_with_waits));
        for (name, &ns) in &t.cpu_wait_by_kind_ns {
            let share = if duration_ns > 0 {
                format!(" ({:.1}%)", ns as f64 * 100.0 / duration_ns as f64)
            } else {
                String::new()
            };
            s.push_str(&format!(" {name} {}{share};", ms(ns as f64)));
        }
        s.pop();
        s.push('\n');
    }
    if let Some(d) = &t.display {
        render_display(&mut s, d, fps_mean);
    }
    s.push('\n');
    s
}

fn render_display(s: &mut String, d: &DisplaySummary, fps_mean: Option<f64>) {
    let n = |k: &str| d.frames.get(k).copied().unwrap_or(0);
    let sources: Vec<String> = d.sources.iter().map(|(k, v)| format!("{k} {v}")).collect();
    s.push_str(&format!(
        "  display: {} frames displayed, {} dropped, {} without a report, {} without a source{}\n",
        n("displayed"),
        n("dropped"),
        n("no_report"),
        n("no_source"),
        if sources.is_empty() {
            String::new()
        } else {
            format!(" (from {})", sources.join(", "))
        }
    ));
    let fps = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    s.push_str(&format!(
        "  displayed fps {} against presented fps {}\n",
        fps(d.displayed_fps),
        fps(fps_mean)
    ));
    let row = |name: &str, x: &Option<Distribution>| {
        x.as_ref().map(|x| {
            format!(
                "  {name:<16} p50 {}  p95 {}  p99 {}  max {}\n",
                ms(x.p50 as f64),
                ms(x.p95 as f64),
                ms(x.p99 as f64),
                ms(x.max as f64)
            )
        })
    };
    s.extend(row("display latency", &d.display_latency_ns));
    s.extend(row("displayed time", &d.displayed_time_ns));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(j: serde_json::Value) -> TimelineFields {
        serde_json::from_value(j).unwrap()
    }

    #[test]
    fn frames_read_back_give_the_writers_numbers_and_the_text_says_them() {
        let mut b = SummaryBuilder::new();
        assert!(render(b.summary().timeline.as_ref(), 1, None).is_empty());
        for i in 0..2u64 {
            fields(serde_json::json!({
                "cpu_busy_ns": 10_000_000, "cpu_wait_ns": 5_000_000, "present_call_ns": 500_000,
                "cpu_wait_by_kind_ns": {"fence": 4_000_000, "fps_limit": 1_000_000, "bogus": 7},
                "display": "displayed", "display_source": "x11_present",
                "shown_ns": 100_000_000 + i * 16_000_000, "display_latency_ns": 30_000_000,
                "displayed_time_ns": 16_000_000,
            }))
            .add_to(&mut b);
        }
        fields(serde_json::json!({
            "stutter": true, "stutter_explained": true,
            "stutter_causes": [{"cause": "pipeline", "ns": 30_000_000}, {"cause": "nonsense", "ns": 1}],
            "display": "dropped",
        }))
        .add_to(&mut b);
        let t = b.summary().timeline;
        let j = serde_json::to_value(t.as_ref().unwrap()).unwrap();
        assert_eq!(j["cpu_wait_by_kind_ns"]["fence"], 8_000_000);
        assert_eq!(j["stutter_causes"][0]["cause"], "pipeline");
        assert_eq!(j["display"]["frames"]["dropped"], 1);
        let text = render(t.as_ref(), 100_000_000, Some(60.0));
        assert!(text.contains("fence 8.000 ms (8.0%)"), "{text}");
        assert!(!text.contains("bogus"), "{text}");
        assert!(text.contains("pipeline   in 1 stutters, 30.000 ms"), "{text}");
        assert!(text.contains("2 frames displayed, 1 dropped"), "{text}");
        assert!(text.contains("(from x11_present 2)"), "{text}");
        assert!(
            text.contains("displayed fps 62.50 against presented fps 60.00"),
            "{text}"
        );
    }
}
