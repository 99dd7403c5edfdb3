//! The counter-database file format shared by the Mali and Intel OA databases.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::error::DbError;
use crate::expr;
use crate::model::{BlockType, Counter, CounterId, CounterKind, Erratum, Scope, Unit};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterDbFile {
    pub schema: u32,
    pub id: String,
    pub vendor: String,
    pub family: String,
    pub source: String,
    #[serde(default)]
    pub notes: Vec<String>,
    pub gpus: Vec<GpuEntry>,
    /// Default scopes of the database's counters.
    pub scopes: Vec<Scope>,
    pub counters: Vec<CounterDef>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuEntry {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub description: String,
    /// Per-GPU equations replacing the database's (counter name -> equation).
    #[serde(default)]
    pub overrides: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterDef {
    pub name: String,
    #[serde(default)]
    pub group: Option<String>,
    pub block: BlockType,
    pub unit: Unit,
    #[serde(default)]
    pub item: Option<String>,
    pub description: String,
    #[serde(default)]
    pub equation: Option<String>,
    #[serde(default)]
    pub scale_multiplier: Option<u32>,
    #[serde(default)]
    pub approx: bool,
    #[serde(default)]
    pub errata: Vec<Erratum>,
    #[serde(default)]
    pub scopes: Option<Vec<Scope>>,
    #[serde(default)]
    pub additive: Option<bool>,
}

pub const SCHEMA: u32 = 1;

pub fn parse_file(name: &str, text: &str) -> Result<CounterDbFile, DbError> {
    let f: CounterDbFile = serde_json::from_str(text).map_err(|e| DbError::Json {
        file: name.into(),
        error: e.to_string(),
    })?;
    if f.schema != SCHEMA {
        return Err(DbError::invalid(
            name,
            format!("schema {} (expected {SCHEMA})", f.schema),
        ));
    }
    Ok(f)
}

fn default_group(block: BlockType) -> &'static str {
    match block {
        BlockType::Jm => "Job Manager",
        BlockType::Tiler => "Tiler",
        BlockType::ShaderCore => "Shader Core",
        BlockType::L2 => "L2 Cache",
        BlockType::OaHeader => "OA report header",
        BlockType::OaA => "OA A counters",
        BlockType::OaB => "OA B counters",
        BlockType::OaC => "OA C counters",
        BlockType::Gpa => "GPA",
        BlockType::Common => "Common metrics",
    }
}

/// The counters of `file` as seen on `gpu` (its overrides applied).
pub fn counters_for(file: &CounterDbFile, gpu: &GpuEntry) -> Result<Vec<Counter>, DbError> {
    for name in gpu.overrides.keys() {
        if !file.counters.iter().any(|c| c.equation.is_some() && &c.name == name) {
            return Err(DbError::invalid(
                &file.id,
                format!("{}: override of '{name}', which is not a derived counter", gpu.name),
            ));
        }
    }
    file.counters
        .iter()
        .map(|d| {
            let equation = gpu.overrides.get(&d.name).or(d.equation.as_ref());
            counter_from_def(&file.id, d, equation.map(String::as_str), &file.scopes)
        })
        .collect()
}

pub fn counter_from_def(
    db: &str,
    d: &CounterDef,
    equation: Option<&str>,
    scopes: &[Scope],
) -> Result<Counter, DbError> {
    let kind = match (equation, d.scale_multiplier) {
        (Some(_), Some(_)) => {
            return Err(DbError::invalid(
                db,
                format!("{}: both an equation and a scale", d.name),
            ))
        }
        (None, Some(m)) if m < 2 => {
            return Err(DbError::invalid(
                db,
                format!("{}: scale_multiplier must be > 1", d.name),
            ))
        }
        (None, Some(m)) => CounterKind::Scaled { multiplier: m },
        (None, None) => CounterKind::Basic,
        (Some(eq), None) => {
            let e = expr::parse(eq).map_err(|error| DbError::Set {
                db: db.into(),
                error: crate::catalogue::SetError::Parse {
                    counter: d.name.clone(),
                    equation: eq.into(),
                    error,
                },
            })?;
            CounterKind::Derived {
                equation: eq.into(),
                expr: e,
            }
        }
    };
    Ok(Counter {
        id: CounterId::of(db, &d.name),
        key: d.name.clone(),
        name: d.name.clone(),
        group: d.group.clone().unwrap_or_else(|| default_group(d.block).into()),
        block: d.block,
        kind,
        unit: d.unit,
        item: d.item.clone(),
        description: d.description.clone(),
        scopes: d.scopes.clone().unwrap_or_else(|| scopes.to_vec()),
        additive: d.additive.unwrap_or(d.unit.is_additive()),
        approx: d.approx,
        errata: d.errata.clone(),
        vendor_unit: None,
    })
}
