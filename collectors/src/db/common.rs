//! Vendor-neutral metrics (digest §6): one name, unit and meaning on every GPU, with a
//! formula per vendor database (optionally per generation).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::error::DbError;
use crate::expr;
use crate::model::{BlockType, Counter, CounterId, CounterKind, Scope, Unit};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommonFile {
    pub schema: u32,
    pub id: String,
    pub source: String,
    #[serde(default)]
    pub principles: Vec<String>,
    pub metrics: Vec<Metric>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    pub name: String,
    pub unit: Unit,
    #[serde(default)]
    pub item: Option<String>,
    pub description: String,
    /// Keyed by database id (`mali-bifrost`, `amd-gpa`, `intel-oa`) or by
    /// `<database id>/<variant>` (e.g. `amd-gpa/Gfx8`); `null` = not available there.
    pub formulas: BTreeMap<String, Option<String>>,
    /// Formula keys whose result is an approximation.
    #[serde(default)]
    pub approx: Vec<String>,
    /// Per-vendor caveats (formula key -> text), shown in the description.
    #[serde(default)]
    pub notes: BTreeMap<String, String>,
}

impl Metric {
    /// The formula key that applies to `db` (and its `variant`), and the formula; `None`
    /// when the metric does not exist on that GPU.
    pub fn formula_for(&self, db: &str, variant: Option<&str>) -> Option<(String, &str)> {
        let specific = variant.map(|v| format!("{db}/{v}"));
        let key = specific
            .filter(|k| self.formulas.contains_key(k))
            .unwrap_or_else(|| db.to_string());
        let f = self.formulas.get(&key)?.as_deref()?;
        Some((key, f))
    }
}

pub fn parse_file(name: &str, text: &str) -> Result<CommonFile, DbError> {
    let f: CommonFile = serde_json::from_str(text).map_err(|e| DbError::Json {
        file: name.into(),
        error: e.to_string(),
    })?;
    if f.schema != super::generic::SCHEMA {
        return Err(DbError::invalid(name, format!("schema {}", f.schema)));
    }
    Ok(f)
}

/// Checks that every metric states a formula (or an explicit `null`) for every vendor
/// database, so a missing vendor is a decision and not an omission.
pub fn validate(file: &CommonFile, dbs: &[&str], variants: &[(&str, &str)]) -> Result<(), DbError> {
    for m in &file.metrics {
        for db in dbs {
            if !m.formulas.contains_key(*db) {
                return Err(DbError::invalid(
                    &file.id,
                    format!("{}: no formula (or null) for {db}", m.name),
                ));
            }
        }
        for k in m.formulas.keys().chain(m.approx.iter()).chain(m.notes.keys()) {
            let known = dbs.contains(&k.as_str()) || variants.iter().any(|(db, v)| *k == format!("{db}/{v}"));
            if !known {
                return Err(DbError::invalid(
                    &file.id,
                    format!("{}: unknown formula key '{k}'", m.name),
                ));
            }
        }
    }
    Ok(())
}

/// The metrics available on `db`/`variant`, as derived counters.
pub fn counters_for(
    file: &CommonFile,
    db: &str,
    variant: Option<&str>,
    scopes: &[Scope],
) -> Result<Vec<Counter>, DbError> {
    let mut out = Vec::new();
    for m in &file.metrics {
        let Some((key, eq)) = m.formula_for(db, variant) else {
            continue;
        };
        let e = expr::parse(eq).map_err(|error| DbError::Set {
            db: file.id.clone(),
            error: crate::catalogue::SetError::Parse {
                counter: m.name.clone(),
                equation: eq.into(),
                error,
            },
        })?;
        let mut description = m.description.clone();
        if let Some(n) = m.notes.get(&key).or_else(|| m.notes.get(db)) {
            description = format!("{description} [{db}: {n}]");
        }
        out.push(Counter {
            id: CounterId::of(&file.id, &m.name),
            key: m.name.clone(),
            name: m.name.clone(),
            group: "Common metrics".into(),
            block: BlockType::Common,
            kind: CounterKind::Derived {
                equation: eq.into(),
                expr: e,
            },
            unit: m.unit,
            item: m.item.clone(),
            description,
            scopes: scopes.to_vec(),
            additive: m.unit.is_additive(),
            approx: m.approx.iter().any(|a| *a == key || a == db),
            errata: Vec::new(),
            vendor_unit: None,
        });
    }
    Ok(out)
}
