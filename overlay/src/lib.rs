//! framescope's HUD: its rows, each declared once ([`hud_rows`]), the numbers and options they
//! show ([`model`]), where it goes ([`layout`]), its drawing with Dear ImGui into plain vertex
//! lists ([`ui`], through [`row_writer`]) that a renderer (the Vulkan layer's and the GL shim's
//! `hud` modules) draws into a cached image, its show/hide key ([`keys`]), and PNG screenshots
//! ([`screenshot`]), and the per-frame policy both renderers run ([`controller`]).
//!
//! Nothing here touches a graphics API: the renderer owns every GPU object.
// A safe function never dereferences a raw pointer it was handed (checked, not only by review).
#![deny(clippy::not_unsafe_ptr_arg_deref)]

pub mod controller;
pub mod hud_rows;
pub mod keys;
pub mod layout;
pub mod layout_thread;
pub mod mangohud;
pub mod model;
pub mod row_writer;
pub mod rows;
pub mod screenshot;
pub mod timeline_rows;
pub mod ui;

pub use model::{HudData, HudOptions, SurfaceInfo};
pub use ui::{DrawCmd, DrawOutput, DrawVert, FontAtlas};
