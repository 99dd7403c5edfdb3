//! The AMD GPUPerfAPI catalogue (seed 003), per hardware generation.

use serde::Deserialize;

use super::error::DbError;
use crate::model::{BlockType, Counter, CounterId, CounterKind, Erratum, Scope, Unit};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpaFile {
    pub schema: u32,
    pub id: String,
    pub vendor: String,
    pub source: String,
    pub note: String,
    pub generations: Vec<Generation>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generation {
    /// The seed's name: "RDNA3", "RDNA2", "RDNA", "Vega", "Graphics IP v8".
    pub name: String,
    /// GPA's `GpaHwGeneration` suffix, e.g. "Gfx11".
    pub hw_generation: String,
    /// framescope's GPU profile name, e.g. "amd-rdna3".
    pub profile: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// "Counters Exposed for Graphics Performance Analysis" (what a Vulkan/GL layer uses).
    pub graphics: Vec<Group>,
    /// "Counters Exposed for Compute Performance Analysis".
    pub compute: Vec<Group>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    pub group: String,
    pub counters: Vec<GpaCounter>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpaCounter {
    pub name: String,
    /// GPA usage type, verbatim.
    pub usage: String,
    pub description: String,
}

/// Which of the seed's two tables a counter comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Graphics,
    Compute,
}

impl Generation {
    pub fn groups(&self, section: Section) -> &[Group] {
        match section {
            Section::Graphics => &self.graphics,
            Section::Compute => &self.compute,
        }
    }

    /// Counters of one section, in seed order, as (group, counter).
    pub fn iter(&self, section: Section) -> impl Iterator<Item = (&str, &GpaCounter)> {
        self.groups(section)
            .iter()
            .flat_map(|g| g.counters.iter().map(move |c| (g.group.as_str(), c)))
    }
}

pub fn parse_file(name: &str, text: &str) -> Result<GpaFile, DbError> {
    let f: GpaFile = serde_json::from_str(text).map_err(|e| DbError::Json {
        file: name.into(),
        error: e.to_string(),
    })?;
    if f.schema != super::generic::SCHEMA {
        return Err(DbError::invalid(name, format!("schema {}", f.schema)));
    }
    Ok(f)
}

fn unit_of(usage: &str) -> Option<Unit> {
    Some(match usage {
        "Nanoseconds" => Unit::Nanoseconds,
        "Milliseconds" => Unit::Milliseconds,
        "Percentage" => Unit::Percent,
        "Ratio" => Unit::Ratio,
        "Cycles" => Unit::Cycles,
        "Items" => Unit::Items,
        "Bytes" => Unit::Bytes,
        "Kilobytes" => Unit::Kilobytes,
        _ => return None,
    })
}

/// GPA samples bracket any command range, so every GPA counter exists per draw, per
/// pass and per frame; none is sampled periodically.
const SCOPES: &[Scope] = &[Scope::Draw, Scope::Pass, Scope::Frame];

/// The counters of one generation: graphics counters keyed by name, compute-analysis
/// counters keyed `compute/<name>` (GPA reuses names such as FetchSize with another unit).
pub fn counters_for(db: &str, generation: &Generation) -> Result<Vec<Counter>, DbError> {
    let mut out = Vec::new();
    for (section, prefix) in [(Section::Graphics, ""), (Section::Compute, "compute/")] {
        for (group, c) in generation.iter(section) {
            out.push(counter(db, generation, group, c, prefix)?);
        }
    }
    Ok(out)
}

fn counter(db: &str, generation: &Generation, group: &str, c: &GpaCounter, prefix: &str) -> Result<Counter, DbError> {
    let mut unit = unit_of(&c.usage)
        .ok_or_else(|| DbError::invalid(db, format!("{}: unknown usage type '{}'", c.name, c.usage)))?;
    let mut errata = Vec::new();
    // Digest A-28: GPA types these as Items although they count stall cycles.
    if unit == Unit::Items && c.name.ends_with("StalledCycles") {
        unit = Unit::Cycles;
        errata.push(Erratum {
            id: "A-28".into(),
            printed: format!("{} [Items]", c.name),
            note: "GPA usage type is Items but the counter counts cycles; framescope reports cycles".into(),
        });
    }
    let key = format!("{prefix}{}", c.name);
    // Per-work-item averages, sizes and timestamps cannot be summed over draws.
    let additive = unit.is_additive()
        && !c.description.starts_with("The average")
        && !matches!(
            c.name.as_str(),
            "ExecutionStart" | "ExecutionEnd" | "CSThreadGroupSize" | "TexAveAnisotropy" | "RayTestsPerWave"
        );
    let group = if prefix.is_empty() {
        group.to_string()
    } else {
        format!("compute/{group}")
    };
    Ok(Counter {
        id: CounterId::of(db, &format!("{}/{key}", generation.hw_generation)),
        key,
        name: c.name.clone(),
        group,
        block: BlockType::Gpa,
        kind: CounterKind::Basic,
        unit,
        item: None,
        description: c.description.clone(),
        scopes: SCOPES.to_vec(),
        additive,
        approx: false,
        errata,
        vendor_unit: Some(c.usage.clone()),
    })
}
