//! JSON Lines per-frame dumps, schema `framescope.v1` (docs/dump-schema.md,
//! core/schema/framescope.v1.schema.json).
//!
//! Every line is one JSON object whose `type` is `header` (first line), `frame` (one per
//! frame, in frame order) or `summary` (last line). The layer builds a [`Header`], starts a
//! [`DumpWriter`], pushes each [`crate::model::frame::FrameRecord`] the assembler emits, and calls
//! [`DumpWriter::finish`] at `vkDestroyDevice` (and registers [`DumpWriter::finish_at_exit`]).

pub mod announce;
mod attributing;
pub mod driver_frames;
pub mod open;
pub mod path;
mod record;
mod writer;

pub use record::{
    format_driver_version, format_vk_version, write_frame, Api, CounterDesc, DeviceInfo, Header, SummaryRecord,
    Unavailable,
};
pub use writer::{DumpOptions, DumpWriter, Fault, END_GRACE_NS, FINISH_LIMIT};

/// Path of the JSON Schema of `framescope.v1`, relative to the core crate.
pub const SCHEMA_PATH: &str = "schema/framescope.v1.schema.json";

/// The JSON Schema text of `framescope.v1`.
pub const SCHEMA_JSON: &str = include_str!("../../schema/framescope.v1.schema.json");
