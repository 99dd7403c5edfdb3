//! `libframescope_gl.so`: framescope's OpenGL/GLES shim, loaded with `LD_PRELOAD` (which
//! `framescope run` sets).
//!
//! It measures frames of GLX and EGL contexts with the same frame model and dump schema as the
//! Vulkan layer (`api: opengl` / `opengles`): CPU frame time at each swap, GPU time from
//! `GL_TIMESTAMP` pairs read back frames later without stalling, and draw counts for draw
//! entry points the app looked up through us. See `frames` for the protocol.
//!
//! How it gets in: the exported swap / make-current / destroy / `*GetProcAddress*` symbols
//! interpose on apps that import them; the exported `dlsym`/`dlvsym` catch apps that
//! `dlopen` libGL/libEGL themselves (glmark2, SDL, glad-style loaders), and the
//! `GetProcAddress` hooks catch loaders that go through those. Each hooked name is one
//! `gl_hooks!` line in the module of its hook (`dl` explains what a line gives): every exported
//! function is a thin wrapper generated there, and the addresses handed to the app are those of
//! the internal hooks (an exported symbol's address taken inside the library would resolve to
//! the first definition in the process, possibly libGL's own).
//!
//! With `samples` on, it also samples the app's debug groups and (with `samples=draw`) draws
//! between `GL_TIMESTAMP`s, and counts pipeline statistics per frame (`samples`, `stats`).
//!
//! Nothing happens at load time: no constructor, no config read, no thread. All work starts
//! at the first GL call we see. Contexts whose `GL_RENDERER` is Zink are left alone (the
//! Vulkan layer measures them). No `vk*` symbol is exported. `LD_PRELOAD` is left as it is in
//! the app's environment, so child processes the app starts are measured too when they use GL.
#![allow(clippy::missing_safety_doc)]
#![deny(unsafe_op_in_unsafe_fn)]
// A safe function never dereferences a raw pointer it was handed (checked, not only by review).
#![deny(clippy::not_unsafe_ptr_arg_deref)]

/// Counts framescope's allocations on the app's threads (`FRAMESCOPE_REPORT_ALLOCS`).
#[global_allocator]
static ALLOC: framescope_core::alloc_count::CountingAlloc = framescope_core::alloc_count::CountingAlloc;

// The modules in layers, bottom to top (rustfmt sorts each layer); a module imports only its
// own layer or those below (`cargo xtask deps` checks there is no cycle).
// Low-level services: typed function pointers, the dynamic linker, the window systems.
mod dl;
mod driver_counter_fns;
mod loader;
mod winsys;
// One table of GL entry points per context, and what the context is.
mod gl;
// Features: statistics, samples, draw counting, waits and creations, the frame protocol, the
// HUD.
mod creation;
mod display_wayland;
mod display_x11;
mod draw_counts;
mod draws;
mod driver_counters;
mod frames;
mod hud;
mod legacy_draws;
mod sample_hooks;
mod samples;
mod stats;
mod waits;
// The hooked entry points, wiring the features together (and the dlsym/dlvsym trampolines).
mod hooks;
