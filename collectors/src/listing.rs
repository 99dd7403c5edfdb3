//! Text and JSON views of counter sets, shared by `framescope counters`.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::catalogue::CounterSet;
use crate::constants;
use crate::db::Databases;
use crate::model::{Counter, CounterKind};

fn unit_label(c: &Counter) -> String {
    match &c.item {
        Some(item) => format!("{} ({item})", c.unit.as_str()),
        None => c.unit.as_str().to_string(),
    }
}

fn kind_label(c: &Counter) -> String {
    match c.kind {
        CounterKind::Scaled { multiplier } => format!("scaled x{multiplier}"),
        ref k => k.as_str().to_string(),
    }
}

pub fn counter_json(set: &CounterSet, c: &Counter) -> Value {
    json!({
        // Hex string: a u64 does not survive JSON readers that use doubles.
        "id": format!("{:016x}", c.id.0),
        "key": c.key,
        "name": c.name,
        "group": c.group,
        "block": c.block,
        "kind": c.kind.as_str(),
        "is_derived": c.kind.is_derived(),
        "scale_multiplier": c.kind.scale_multiplier(),
        "unit": c.unit,
        "item": c.item,
        "vendor_unit": c.vendor_unit,
        "formula": c.kind.equation(),
        "resolved": set.resolved(&c.key).map(|e| e.to_string()),
        "description": c.description,
        "scopes": c.scopes,
        "additive": c.additive,
        "approx": c.approx,
        "cross_clock_domain": set.cross_clock_domain(&c.key),
        "errata": c.errata,
    })
}

pub fn set_json(set: &CounterSet) -> Value {
    json!({
        "gpu": set.gpu(),
        "db": set.db(),
        "counters": set.counters().iter().map(|c| counter_json(set, c)).collect::<Vec<_>>(),
    })
}

/// One block per group; each counter on one line (name, kind, unit, formula) and its
/// description indented below.
pub fn render_set(set: &CounterSet) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} counters for {} (database {})",
        set.counters().len(),
        set.gpu(),
        set.db()
    );
    let width = set.counters().iter().map(|c| c.key.len()).max().unwrap_or(0);
    let mut group = None;
    for c in set.counters() {
        if group != Some(&c.group) {
            let _ = writeln!(out, "\n[{}]", c.group);
            group = Some(&c.group);
        }
        let mut flags = String::new();
        if c.approx {
            flags.push_str(" ~approx");
        }
        if set.cross_clock_domain(&c.key) {
            flags.push_str(" ~cross-clock-domain");
        }
        if !c.errata.is_empty() {
            let ids: Vec<_> = c.errata.iter().map(|e| e.id.as_str()).collect();
            let _ = write!(flags, " ~erratum {}", ids.join(","));
        }
        let formula = c.kind.equation().map(|e| format!("  = {e}")).unwrap_or_default();
        let line = format!(
            "  {:<width$}  {:<8} {:<22}{formula}{flags}",
            c.key,
            kind_label(c),
            unit_label(c)
        );
        let _ = writeln!(out, "{}", line.trim_end());
        let _ = writeln!(out, "  {:<width$}    {}", "", c.description);
    }
    out
}

/// Everything known about one counter, including its hardware-only expression.
pub fn explain(set: &CounterSet, c: &Counter) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} on {} (database {})", c.key, set.gpu(), set.db());
    let _ = writeln!(out, "  kind:        {}", kind_label(c));
    let _ = writeln!(out, "  group:       {}", c.group);
    let _ = writeln!(out, "  block:       {:?} ({:?})", c.block, c.block.cardinality());
    let _ = writeln!(out, "  unit:        {}", unit_label(c));
    let scopes: Vec<_> = c.scopes.iter().map(|s| s.as_str()).collect();
    let _ = writeln!(out, "  scopes:      {}", scopes.join(", "));
    let _ = writeln!(out, "  description: {}", c.description);
    if let Some(eq) = c.kind.equation() {
        let _ = writeln!(out, "  formula:     {eq}");
    }
    if let Some(e) = set.resolved(&c.key) {
        let _ = writeln!(out, "  resolved:    {e}");
        let inputs = e.counters();
        let _ = writeln!(
            out,
            "  hardware:    {}",
            if inputs.is_empty() {
                "-".into()
            } else {
                inputs.join(", ")
            }
        );
        for k in e.constants() {
            let _ = writeln!(out, "  constant:    {k} = {}", constants::describe(k).unwrap_or("?"));
        }
    }
    if set.cross_clock_domain(&c.key) {
        let _ = writeln!(out, "  caveat:      mixes the top-level and shader-core clock domains");
    }
    if c.approx {
        let _ = writeln!(out, "  caveat:      approximate");
    }
    for e in &c.errata {
        let _ = writeln!(out, "  erratum {}: seed prints `{}`: {}", e.id, e.printed, e.note);
    }
    out
}

/// The GPUs that have counter sets, and the common metrics with each vendor's formula.
pub fn render_overview(dbs: &Databases) -> String {
    let mut out = String::from("GPUs (use --gpu NAME):\n");
    for p in dbs.profiles() {
        let set = dbs.counter_set(&p.name).expect("profile has a set");
        let aliases = if p.aliases.is_empty() {
            String::new()
        } else {
            format!(" (aliases: {})", p.aliases.join(", "))
        };
        let _ = writeln!(
            out,
            "  {:<12} {:>4} counters  {}{aliases}",
            p.name,
            set.counters().len(),
            p.description
        );
    }
    out.push_str("\nCommon metrics (per-vendor formulas; '-' = not available):\n");
    for m in &dbs.common.metrics {
        let _ = writeln!(out, "  {} [{}]: {}", m.name, m.unit.as_str(), m.description);
        for (k, f) in &m.formulas {
            let _ = writeln!(out, "      {:<14} {}", k, f.as_deref().unwrap_or("-"));
        }
    }
    out
}

pub fn overview_json(dbs: &Databases) -> Value {
    json!({
        "gpus": dbs.profiles().iter().map(|p| json!({
            "name": p.name, "aliases": p.aliases, "vendor": p.vendor, "db": p.db,
            "variant": p.variant, "description": p.description,
        })).collect::<Vec<_>>(),
        "common_metrics": dbs.common.metrics.iter().map(|m| json!({
            "name": m.name, "unit": m.unit, "item": m.item, "description": m.description,
            "formulas": m.formulas, "approx": m.approx, "notes": m.notes,
        })).collect::<Vec<_>>(),
    })
}
