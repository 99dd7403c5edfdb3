//! The report's counter table: rows grouped by what they measure (the GPU, this process, the
//! system, the driver's own counters), each under its display name with its id last, columns
//! sized to their values, per-core rows (`cpu3_load_pct`) folded into one (the cores' means,
//! their lowest and highest) unless every counter is asked for, and running totals
//! ([`CUMULATIVE`]) shown as their growth over the run and its rate instead of a mean.

use crate::text::escape;
use framescope_core::counters::display_name;
use framescope_core::stats::CounterStats;
use std::collections::BTreeMap;

/// Counters that only grow (a process's CPU time, a GPU's energy since boot): their mean
/// means nothing; the growth over the run (max − min) and its rate do.
pub const CUMULATIVE: &[&str] = &["proc_cpu_time_ns", "gpu_energy_j"];

/// `cpu<digits>_<rest>` → `cpu*_<rest>`.
fn per_core(name: &str) -> Option<String> {
    let rest = name.strip_prefix("cpu")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !rest[digits..].starts_with('_') {
        return None;
    }
    Some(format!("cpu*{}", &rest[digits..]))
}

/// A row's cells in the unit its largest value picks ([`framescope_core::units`]): the unit,
/// then the values.
fn scaled(unit: &str, values: &[f64]) -> (String, Vec<String>) {
    let max = values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let (div, unit) = framescope_core::units::scale(unit, max);
    (
        unit,
        values.iter().map(|v| framescope_core::units::number(v / div)).collect(),
    )
}

/// Rows of cells, right-aligned but the first, columns two spaces apart and as wide as their
/// widest cell.
fn layout(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        out.push_str("  ");
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                out.push_str("  ");
            }
            let pad = width[c].saturating_sub(cell.chars().count());
            if c == 0 {
                out.push_str(cell);
                if c + 1 < r.len() {
                    out.push_str(&" ".repeat(pad));
                }
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.push('\n');
    }
    out
}

/// What a counter measures, in the order the table's groups come.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Gpu,
    Process,
    System,
    Driver,
}

impl Group {
    fn title(self) -> &'static str {
        match self {
            Group::Gpu => "GPU",
            Group::Process => "this process",
            Group::System => "system",
            Group::Driver => "driver counters",
        }
    }

    /// From the catalogue's scope (`device`, `process`, `system`) and the name.
    pub fn of(name: &str, scope: &str) -> Group {
        if name.starts_with(&framescope_core::driver_values::summary_name("")) {
            Group::Driver
        } else if scope == "process" || name.starts_with("proc_") {
            Group::Process
        } else if scope == "system" || name.starts_with("cpu") || name.starts_with("ram_") {
            Group::System
        } else {
            Group::Gpu
        }
    }
}

/// A counter's label: the driver's own name for driver counters, else the display name.
fn label(name: &str) -> String {
    match name.strip_prefix(&framescope_core::driver_values::summary_name("")) {
        Some(driver) => escape(driver),
        None => escape(&display_name(name)),
    }
}

/// The table for `counters` (the summary's), with `describe` giving each counter's unit and
/// group and the run lasting `duration_ns`; `all` keeps per-core rows apart.
pub fn render(
    counters: &BTreeMap<String, CounterStats>,
    describe: impl Fn(&str) -> (String, Group),
    duration_ns: u64,
    all: bool,
) -> String {
    let unit = |n: &str| describe(n).0;
    let header = vec![
        "counter".to_string(),
        "unit".into(),
        "mean".into(),
        "min".into(),
        "max".into(),
        "frames".into(),
        "id".into(),
    ];
    let mut grouped: BTreeMap<Group, Vec<Vec<String>>> = BTreeMap::new();
    // Folded per-core rows: name -> (unit, means, mins, maxes, frames).
    let mut folded: BTreeMap<String, (String, Vec<f64>, f64, f64, u64)> = BTreeMap::new();
    let mut totals = Vec::new();
    for (name, c) in counters {
        if CUMULATIVE.contains(&name.as_str()) {
            totals.push((name, c));
            continue;
        }
        if let (false, Some(key)) = (all, per_core(name)) {
            let e = folded
                .entry(key)
                .or_insert_with(|| (unit(name), Vec::new(), f64::INFINITY, f64::NEG_INFINITY, 0));
            e.1.push(c.mean);
            e.2 = e.2.min(c.min);
            e.3 = e.3.max(c.max);
            e.4 = e.4.max(c.frames);
            continue;
        }
        let (u, v) = scaled(&unit(name), &[c.mean, c.min, c.max]);
        let mut row = vec![label(name), u];
        row.extend(v);
        row.extend([c.frames.to_string(), escape(name)]);
        grouped.entry(describe(name).1).or_default().push(row);
    }
    for (key, (u, means, min, max, frames)) in &folded {
        let mean = means.iter().sum::<f64>() / means.len().max(1) as f64;
        let what = display_name(&key.replacen("cpu*", "cpu", 1));
        let (u, v) = scaled(u, &[mean, *min, *max]);
        let mut row = vec![format!("{what} per core ({} cores)", means.len()), u];
        row.extend(v);
        row.extend([frames.to_string(), escape(key)]);
        grouped.entry(Group::System).or_default().push(row);
    }
    // One layout for every group, so their columns line up; a title row above each group.
    let mut rows = vec![header];
    for (g, list) in grouped {
        rows.push(vec![format!("[{}]", g.title())]);
        rows.extend(list);
    }
    let mut out = layout(&rows);
    if !totals.is_empty() {
        let secs = duration_ns as f64 / 1e9;
        let mut rows = vec![vec![
            "running total".to_string(),
            "unit".into(),
            "over the run".into(),
            "per second".into(),
            "frames".into(),
            "id".into(),
        ]];
        for (name, c) in totals {
            let grew = c.max - c.min;
            let rate = if secs > 0.0 { grew / secs } else { f64::NAN };
            let (u, g) = scaled(&unit(name), &[grew]);
            let (ru, r) = scaled(&unit(name), &[rate]);
            rows.push(vec![
                label(name),
                u,
                g[0].clone(),
                // Energy over time is power.
                match ru.as_str() {
                    "J" => format!("{} W", r[0]),
                    _ => format!("{} {ru}/s", r[0]),
                },
                c.frames.to_string(),
                escape(name),
            ]);
        }
        out.push_str(&layout(&rows));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(mean: f64, min: f64, max: f64) -> CounterStats {
        CounterStats {
            frames: 10,
            mean,
            min,
            max,
        }
    }

    /// The cells of the row whose last cell (the id) is `id`.
    fn row(text: &str, id: &str) -> Vec<String> {
        text.lines()
            .map(|l| {
                l.split("  ")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .find(|cells| cells.last().is_some_and(|c| c == id))
            .unwrap_or_else(|| panic!("no {id} row in\n{text}"))
    }

    #[test]
    fn huge_and_tiny_values_keep_their_columns_apart() {
        let mut c = BTreeMap::new();
        c.insert("big".to_string(), stats(1.618312208139e12, 1.6e12, 3.12e12));
        c.insert("tiny".to_string(), stats(1e-6, 0.0, 2e-6));
        c.insert("plain".to_string(), stats(42.5, 1.0, 99.0));
        let t = render(&c, |n| ("u".to_string(), Group::of(n, "device")), 1_000_000_000, false);
        assert_eq!(
            row(&t, "big"),
            [
                "Big",
                "u",
                "1,618,312,208,139",
                "1,600,000,000,000",
                "3,120,000,000,000",
                "10",
                "big"
            ]
        );
        assert_eq!(
            row(&t, "tiny"),
            ["Tiny", "u", "1.0000e-6", "0.000", "2.0000e-6", "10", "tiny"]
        );
        assert_eq!(
            row(&t, "plain"),
            ["Plain", "u", "42.500", "1.000", "99.000", "10", "plain"]
        );
        // Every full row's columns end at the same place.
        let ends: Vec<usize> = t
            .lines()
            .filter(|l| !l.trim_start().starts_with('['))
            .map(str::len)
            .collect();
        assert!(ends.windows(2).all(|w| w[0] == w[1]), "{t}");
    }

    #[test]
    fn rows_are_grouped_by_what_they_measure_under_display_names() {
        let mut c = BTreeMap::new();
        c.insert("gpu_util_pct".to_string(), stats(50.0, 0.0, 100.0));
        c.insert("proc_rss_bytes".to_string(), stats(1.0, 1.0, 1.0));
        c.insert("ram_used_bytes".to_string(), stats(2.0, 2.0, 2.0));
        c.insert("driver: Draws".to_string(), stats(3.0, 3.0, 3.0));
        let scope = |n: &str| match n {
            "proc_rss_bytes" => "process",
            "ram_used_bytes" => "system",
            _ => "device",
        };
        let t = render(&c, |n| ("u".to_string(), Group::of(n, scope(n))), 1, false);
        let order: Vec<&str> = t.lines().map(str::trim).filter(|l| l.starts_with('[')).collect();
        assert_eq!(order, ["[GPU]", "[this process]", "[system]", "[driver counters]"]);
        assert_eq!(row(&t, "gpu_util_pct")[0], "GPU util");
        assert_eq!(row(&t, "driver: Draws")[0], "Draws");
        assert!(
            !t.lines().any(|l| l.trim_start().starts_with("gpu_util_pct")),
            "ids only last:\n{t}"
        );
    }

    #[test]
    fn per_core_rows_fold_unless_all_are_asked_for() {
        let mut c = BTreeMap::new();
        for k in 0..16 {
            c.insert(format!("cpu{k}_load_pct"), stats(f64::from(k), 0.0, f64::from(k) * 2.0));
            c.insert(format!("cpu{k}_mhz"), stats(2000.0, 1000.0, 3000.0));
        }
        c.insert("cpu_load_pct".to_string(), stats(7.5, 1.0, 9.0));
        let describe = |n: &str| {
            let u = if n.ends_with("mhz") { "MHz" } else { "%" };
            (u.to_string(), Group::of(n, "system"))
        };
        let t = render(&c, describe, 1, false);
        assert_eq!(
            t.lines().count(),
            5,
            "header, group title, cpu_load_pct and two folded rows:\n{t}"
        );
        assert_eq!(
            row(&t, "cpu*_load_pct"),
            [
                "CPU load per core (16 cores)",
                "%",
                "7.500",
                "0.000",
                "30.000",
                "10",
                "cpu*_load_pct"
            ]
        );
        assert_eq!(
            row(&t, "cpu_load_pct"),
            ["CPU load", "%", "7.500", "1.000", "9.000", "10", "cpu_load_pct"]
        );
        let all = render(&c, describe, 1, true);
        assert_eq!(all.lines().count(), 1 + 1 + 32 + 1);
        assert!(per_core("cpux_load").is_none() && per_core("cpu_load_pct").is_none());
    }

    #[test]
    fn running_totals_show_their_growth_and_rate() {
        let mut c = BTreeMap::new();
        // 2.5 s of CPU time over a 10 s run: a quarter of a core.
        c.insert("proc_cpu_time_ns".to_string(), stats(5e9, 1e9, 3.5e9));
        c.insert("gpu_energy_j".to_string(), stats(1000.0, 900.0, 1200.0));
        let describe = |n: &str| {
            let u = if n.ends_with("ns") { "ns" } else { "J" };
            (u.to_string(), Group::of(n, "device"))
        };
        let t = render(&c, describe, 10_000_000_000, false);
        assert!(!t.contains("5000000000"), "no mean of a running total:\n{t}");
        assert_eq!(
            row(&t, "proc_cpu_time_ns"),
            ["Proc CPU time", "s", "2.500", "250.000 ms/s", "10", "proc_cpu_time_ns"]
        );
        assert_eq!(
            row(&t, "gpu_energy_j"),
            ["GPU energy", "J", "300.000", "30.000 W", "10", "gpu_energy_j"]
        );
    }
}
