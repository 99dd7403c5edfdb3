//! HUD model and drawing (Vulkan and GL renderers come with the HUD issues).
