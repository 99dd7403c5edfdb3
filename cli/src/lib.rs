//! The `framescope` command's commands and what they share, as a library: the binary
//! (`main.rs`) dispatches to them, and the fuzz targets (`fuzz/`) reach the dump readers
//! through [`fuzzing`].

pub mod bootstrap;
pub mod compare;
pub mod counters;
pub mod ctl;
pub mod export;
pub mod frame_lines;
pub mod fuzzing;
pub mod install;
pub mod lines;
pub mod locate;
pub mod output;
pub mod plot;
pub mod report;
pub mod run;
pub mod text;
