//! NVIDIA PM sampling through CUPTI: hardware counters read device-wide at a fixed interval
//! (1 kHz and 10 kHz measured without gaps on the H100, `shared/reference/cupti-pm-sampling.md`),
//! by a sampler process of framescope's own — never in the app, which never loads CUDA.
//!
//! * [`api`]: the seam, the CUPTI calls of the PM-sampling sequence in Rust types;
//!   [`dl`] binds them to the real `libcupti.so.12` at run time, [`fake`] to a script.
//! * [`metrics`]: the presets (`graphics`, `raster`), raw names, and one-pass validation.
//! * [`attribute`]: counters over a GPU-time window (a frame, a render pass) from samples.
//! * [`ring`]: the shared-memory ring the sampler publishes samples into and readers read.
//! * [`sampler`]: the sampler's loop over the seam, with its failure reasons.
//!
//! * [`counters`]: the counters the app's frames carry and where each is in a ring.
//! * [`source`]: the app side: a counter source reading the ring on the collector thread.
//! * [`attributor`]: the dump writer's side: the counters over exactly a frame's or a pass's
//!   GPU span, once the samples covering it arrived.

pub mod api;
pub mod attribute;
pub mod attributor;
pub mod counters;
pub mod dl;
pub mod fake;
pub mod metrics;
pub mod ring;
pub mod sampler;
pub mod source;
