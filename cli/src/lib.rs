//! The `framescope` command's commands and what they share, as a library: [`args`] parses the
//! command line (clap) and dispatches to the commands, the binary (`main.rs`) only hands it
//! the arguments, and the fuzz targets (`fuzz/`) reach the dump readers through [`fuzzing`].
// A safe function never dereferences a raw pointer it was handed (checked, not only by review).
#![deny(clippy::not_unsafe_ptr_arg_deref)]

pub mod args;
pub mod bootstrap;
pub mod compare;
pub mod counter_table;
pub mod counters;
pub mod ctl;
pub mod display_server;
pub mod doctor;
pub mod export;
pub mod frame_lines;
pub mod fuzzing;
pub mod gpu_sampler;
pub mod html;
pub mod install;
pub mod lines;
pub mod locate;
pub mod output;
pub mod plot;
pub mod rates;
pub mod report;
pub mod run;
pub mod supervise;
pub mod text;
pub mod timeline;
pub mod usage;
