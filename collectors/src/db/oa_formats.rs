//! Intel OA report formats (seed 004 §"Performance Counter Report Formats"; the 256-byte
//! layout the seed lost is filled in from i915, marked `documented_in_seed: false`).

use serde::{Deserialize, Serialize};

use super::error::DbError;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OaFormatsFile {
    pub schema: u32,
    pub id: String,
    pub source: String,
    pub formats: Vec<ReportFormat>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReportFormat {
    /// OACONTROL "Counter Select" value.
    pub counter_select: u8,
    pub name: String,
    pub size_bytes: u32,
    pub documented_in_seed: bool,
    pub fields: Vec<ReportField>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReportField {
    pub name: String,
    /// Byte offset in the report; all fields are little-endian.
    pub offset: u32,
    pub bits: u32,
    /// The counter (of `intel_oa.json`) whose value this field holds, if any.
    #[serde(default)]
    pub counter: Option<String>,
    /// Which bits of a 40-bit A counter this field holds.
    #[serde(default)]
    pub part: Option<Part>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    Low32,
    High8,
}

impl OaFormatsFile {
    pub fn by_select(&self, select: u8) -> Option<&ReportFormat> {
        self.formats.iter().find(|f| f.counter_select == select)
    }
}

pub fn parse_file(name: &str, text: &str) -> Result<OaFormatsFile, DbError> {
    let f: OaFormatsFile = serde_json::from_str(text).map_err(|e| DbError::Json {
        file: name.into(),
        error: e.to_string(),
    })?;
    if f.schema != super::generic::SCHEMA {
        return Err(DbError::invalid(name, format!("schema {}", f.schema)));
    }
    Ok(f)
}

/// Fields lie inside the report, are naturally aligned, do not overlap, RPT_ID is the
/// first dword, and every named counter exists.
pub fn validate(file: &OaFormatsFile, counter_exists: impl Fn(&str) -> bool) -> Result<(), DbError> {
    let bad = |f: &ReportFormat, why: String| DbError::invalid(&file.id, format!("format {}: {why}", f.name));
    for f in &file.formats {
        if f.counter_select > 7 {
            return Err(bad(f, "counter select is a 3-bit field".into()));
        }
        let mut used = vec![false; f.size_bytes as usize];
        for fld in &f.fields {
            let bytes = fld.bits / 8;
            if !matches!(fld.bits, 8 | 32) || fld.offset % bytes != 0 {
                return Err(bad(f, format!("{} is not an aligned 8- or 32-bit field", fld.name)));
            }
            let range = fld.offset as usize..(fld.offset + bytes) as usize;
            if range.end > used.len() {
                return Err(bad(f, format!("{} lies outside the report", fld.name)));
            }
            if used[range.clone()].iter().any(|u| *u) {
                return Err(bad(f, format!("{} overlaps another field", fld.name)));
            }
            used[range].iter_mut().for_each(|u| *u = true);
            if let Some(c) = &fld.counter {
                if !counter_exists(c) {
                    return Err(bad(f, format!("{} names unknown counter {c}", fld.name)));
                }
            }
            if fld.part == Some(Part::High8) && fld.bits != 8 {
                return Err(bad(f, format!("{}: high part of a 40-bit counter is 8 bits", fld.name)));
            }
        }
        if !f.fields.iter().any(|x| x.name == "RPT_ID" && x.offset == 0) {
            return Err(bad(f, "RPT_ID must be the lowest-addressed dword".into()));
        }
    }
    Ok(())
}
