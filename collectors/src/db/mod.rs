//! The embedded counter databases (`collectors/db/*.json`), loaded and validated once at
//! start: every GPU profile's counter set is built, so a bad equation, an unknown name or
//! a reference cycle in a data file fails the first call (and the crate's tests).

pub mod amd;
pub mod common;
pub mod driver_names;
mod error;
pub mod generic;
pub mod oa_formats;

pub use error::DbError;

use std::sync::OnceLock;

use crate::catalogue::CounterSet;

pub const MALI_BIFROST: &str = "mali-bifrost";
pub const AMD_GPA: &str = "amd-gpa";
pub const INTEL_OA: &str = "intel-oa";

const FILES: &[(&str, &str)] = &[
    ("mali_bifrost.json", include_str!("../../db/mali_bifrost.json")),
    ("amd_gpa.json", include_str!("../../db/amd_gpa.json")),
    ("intel_oa.json", include_str!("../../db/intel_oa.json")),
    ("intel_oa_formats.json", include_str!("../../db/intel_oa_formats.json")),
    ("common_metrics.json", include_str!("../../db/common_metrics.json")),
];

/// A GPU framescope has a counter set for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuProfile {
    pub name: String,
    pub aliases: Vec<String>,
    pub vendor: String,
    /// Database id: `mali-bifrost`, `amd-gpa` or `intel-oa`.
    pub db: String,
    /// AMD hardware generation (`Gfx11`, ...), for generation-specific formulas.
    pub variant: Option<String>,
    pub description: String,
}

impl GpuProfile {
    pub fn matches(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name) || self.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    }
}

pub struct Databases {
    pub mali: generic::CounterDbFile,
    pub intel: generic::CounterDbFile,
    pub intel_formats: oa_formats::OaFormatsFile,
    pub amd: amd::GpaFile,
    pub common: common::CommonFile,
    profiles: Vec<GpuProfile>,
    sets: Vec<CounterSet>,
}

/// The embedded databases, loaded on first use.
pub fn databases() -> Result<&'static Databases, &'static DbError> {
    static DBS: OnceLock<Result<Databases, DbError>> = OnceLock::new();
    DBS.get_or_init(Databases::load).as_ref()
}

fn file(name: &str) -> &'static str {
    FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("embedded file")
}

impl Databases {
    pub fn load() -> Result<Self, DbError> {
        let mali = generic::parse_file("mali_bifrost.json", file("mali_bifrost.json"))?;
        let intel = generic::parse_file("intel_oa.json", file("intel_oa.json"))?;
        let intel_formats = oa_formats::parse_file("intel_oa_formats.json", file("intel_oa_formats.json"))?;
        let amd = amd::parse_file("amd_gpa.json", file("amd_gpa.json"))?;
        let common = common::parse_file("common_metrics.json", file("common_metrics.json"))?;
        for (f, want) in [(&mali.id, MALI_BIFROST), (&intel.id, INTEL_OA), (&amd.id, AMD_GPA)] {
            if f != want {
                return Err(DbError::invalid(f, format!("database id must be {want}")));
            }
        }
        oa_formats::validate(&intel_formats, |c| intel.counters.iter().any(|d| d.name == c))?;
        let variants: Vec<(&str, &str)> = amd
            .generations
            .iter()
            .map(|g| (AMD_GPA, g.hw_generation.as_str()))
            .collect();
        common::validate(&common, &[MALI_BIFROST, AMD_GPA, INTEL_OA], &variants)?;

        let mut profiles = Vec::new();
        let mut sets = Vec::new();
        for f in [&mali, &intel] {
            for g in &f.gpus {
                let mut counters = generic::counters_for(f, g)?;
                counters.extend(common::counters_for(&common, &f.id, None, &f.scopes)?);
                sets.push(CounterSet::new(&g.name, &f.id, counters).map_err(|error| DbError::Set {
                    db: f.id.clone(),
                    error,
                })?);
                profiles.push(GpuProfile {
                    name: g.name.clone(),
                    aliases: g.aliases.clone(),
                    vendor: f.vendor.clone(),
                    db: f.id.clone(),
                    variant: None,
                    description: g.description.clone(),
                });
            }
        }
        for g in &amd.generations {
            let mut counters = amd::counters_for(&amd.id, g)?;
            let scopes = [
                crate::model::Scope::Draw,
                crate::model::Scope::Pass,
                crate::model::Scope::Frame,
            ];
            counters.extend(common::counters_for(&common, &amd.id, Some(&g.hw_generation), &scopes)?);
            sets.push(
                CounterSet::new(&g.profile, &amd.id, counters).map_err(|error| DbError::Set {
                    db: amd.id.clone(),
                    error,
                })?,
            );
            profiles.push(GpuProfile {
                name: g.profile.clone(),
                aliases: g.aliases.clone(),
                vendor: amd.vendor.clone(),
                db: amd.id.clone(),
                variant: Some(g.hw_generation.clone()),
                description: format!("AMD {} ({}), GPUPerfAPI counters", g.name, g.hw_generation),
            });
        }
        for (i, p) in profiles.iter().enumerate() {
            if profiles[..i]
                .iter()
                .any(|q| q.matches(&p.name) || p.aliases.iter().any(|a| q.matches(a)))
            {
                return Err(DbError::invalid(
                    &p.db,
                    format!("GPU name '{}' or an alias is used twice", p.name),
                ));
            }
        }
        Ok(Databases {
            mali,
            intel,
            intel_formats,
            amd,
            common,
            profiles,
            sets,
        })
    }

    pub fn profiles(&self) -> &[GpuProfile] {
        &self.profiles
    }

    pub fn find_gpu(&self, name: &str) -> Option<&GpuProfile> {
        self.profiles.iter().find(|p| p.matches(name))
    }

    /// The validated counter set of a GPU (by profile name or alias).
    pub fn counter_set(&self, gpu: &str) -> Result<&CounterSet, DbError> {
        let p = self.find_gpu(gpu).ok_or_else(|| DbError::UnknownGpu(gpu.into()))?;
        Ok(self.sets.iter().find(|s| s.gpu() == p.name).expect("a set per profile"))
    }

    pub fn amd_generation(&self, name: &str) -> Option<&amd::Generation> {
        self.amd
            .generations
            .iter()
            .find(|g| g.name == name || g.profile == name || g.hw_generation == name)
    }
}
