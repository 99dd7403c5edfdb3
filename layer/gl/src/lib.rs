//! OpenGL LD_PRELOAD shim. Empty until the GL issue: it must export nothing yet.
