//! framescope's HUD: what it shows ([`model`]), where it goes ([`layout`]), its drawing with
//! Dear ImGui into plain vertex lists ([`ui`]) that a renderer (the Vulkan layer's `hud`
//! module) draws into a cached image, and PNG screenshots ([`screenshot`]).
//!
//! Nothing here touches a graphics API: the renderer owns every GPU object.

pub mod layout;
pub mod model;
pub mod screenshot;
pub mod ui;

pub use model::{HudData, HudOptions};
pub use ui::{DrawCmd, DrawOutput, DrawVert, FontAtlas};
