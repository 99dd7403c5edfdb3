//! Configuration: MangoHud-like `key=value,key,...` from `FRAMESCOPE_CONFIG`, plus a file.
//!
//! Sources, later ones overriding earlier ones key by key:
//! 1. the file `$FRAMESCOPE_CONFIG_FILE`, else `$XDG_CONFIG_HOME/framescope/framescope.conf`,
//!    else `~/.config/framescope/framescope.conf` (one `key=value` per line, `#` comments);
//! 2. `FRAMESCOPE_CONFIG` (`key=value` entries separated by commas);
//! 3. `FRAMESCOPE_DUMP=PATH`, a shorthand for `dump=PATH`.
//!
//! Paths are bytes: `FRAMESCOPE_DUMP` and the file location variables may hold any byte a
//! file name can. `FRAMESCOPE_CONFIG` and the file are text; non-UTF-8 there is one error.
//! The file is read only if it is a regular file of at most [`MAX_FILE_BYTES`], opened
//! without blocking, so a FIFO or `/dev/zero` named as config costs one line, not a hang or
//! the app's memory.
//!
//! Every key is declared once, in one row of the `config_keys!` invocation below: its field,
//! type, default and one-line doc, from which the [`Config`] field, `Config::default()` and
//! the [`KEYS`] entry are generated, so adding a key is one row and the README table is
//! checked against [`markdown_table`]. Bad input never stops the app: each problem becomes a
//! [`ConfigError`] whose `Display` is one line, and the key keeps its default. No key runs a
//! command; values are only ever parsed as numbers, names or a path template.

mod declare;
mod values;

pub use values::{
    HudPosition, HudPreset, LogLevel, SampleStats, Samples, Value, ValueType, HUD_COUNTER_PRESETS, LABEL_MAX,
};

use crate::runtime::shown::shown;
use declare::config_keys;
use serde_json::Value as Json;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// Largest config file read. The longest useful file (every key with a long value, plus
/// comments) is a few KiB; 64 KiB bounds what a wrong path can cost.
pub const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Config errors printed one per line; more are summed up in one further line.
pub const MAX_REPORTED_ERRORS: usize = 10;

impl Config {
    /// The HUD's counter lines: names in order, presets expanded (`all` is kept as `all`:
    /// the catalogue is known only at run time); empty for `none`.
    /// The `fps_limit` rates in order (0: unlimited).
    pub fn fps_limits(&self) -> Vec<u32> {
        self.fps_limit.split(':').filter_map(|r| r.parse().ok()).collect()
    }

    pub fn hud_counter_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for n in self.hud_counters.split(',').filter(|n| !n.is_empty() && *n != "none") {
            match HUD_COUNTER_PRESETS.iter().find(|(p, _)| *p == n) {
                Some((p @ ("all" | "driver"), _)) => out.push((*p).into()),
                Some((_, list)) => out.extend(list.iter().map(|s| s.to_string())),
                None => out.push(n.to_string()),
            }
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|n| seen.insert(n.clone()));
        out
    }
}

/// One configuration key: the single source of truth for its name, type, default and doc.
pub struct KeySpec {
    pub name: &'static str,
    pub ty: ValueType,
    /// Default, spelled as a user would write it (parsed by `ty` to build `Config::default()`).
    pub default: &'static str,
    /// One-line description for `--help`-style output and the README table.
    pub doc: &'static str,
    set: fn(&mut Config, Value),
    get: fn(&Config) -> Json,
}

// Every configuration key. Adding a key is one row here.
config_keys! {
    ///
    /// `None`: no dump. Bytes, as paths are: `FRAMESCOPE_DUMP` may name any file.
    dump: Option<OsString> {
        ty: ValueType::PathTemplate,
        default: "none",
        doc: "write a JSON Lines per-frame dump to this path template (%p pid, %n exe, %t UTC start time YYYYmmdd-HHMMSS); an existing file is never overwritten (a numbered sibling is written instead, so use %p), symbolic links are refused, a FIFO or /dev/stdout gets the dump as a stream",
    },
    dump_start: f64 {
        ty: ValueType::SecondsNonNegative,
        default: "0",
        doc: "seconds after start before frames are written to the dump",
    },
    ///
    /// `None`: until the end.
    dump_duration: Option<f64> {
        ty: ValueType::SecondsPositiveOrUnlimited,
        default: "unlimited",
        doc: "seconds of frames to dump after dump_start; then the summary is written and dumping stops",
    },
    dump_paused: bool {
        ty: ValueType::Bool,
        default: "0",
        doc: "start with capture off: the dump gets its header, and frames only between `framescope ctl PID start` (or `dump_toggle_key`) and `stop`; marks are written either way",
    },
    ///
    /// Empty: no key.
    dump_toggle_key: String {
        ty: ValueType::KeyCombo,
        default: "none",
        doc: "keys that start/stop writing frames to the dump, read like `hud_toggle_key` (X11, or a native Wayland window's keyboard events; also with `hud=0`); none: no key",
    },
    ctl: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "while dumping, accept `framescope ctl PID start|stop|mark LABEL|status` on the Unix socket `$XDG_RUNTIME_DIR/framescope/PID.sock` (directory mode 0700, owner and peer uid checked; nothing on the network)",
    },
    hud: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "show the on-screen HUD",
    },
    // --- HUD keys ---
    hud_refresh_ms: u64 {
        ty: ValueType::UInt { min: 10, max: 10_000 },
        default: "250",
        doc: "milliseconds between re-renders of the HUD's content; it is composited every frame from a cached image",
    },
    hud_position: HudPosition {
        ty: ValueType::Position,
        default: "top-left",
        doc: "HUD corner, or the pixel offset of its top-left corner; `top-left` becomes the corner opposite MangoHud's HUD (bottom-right for MangoHud's default top-left; its `position` read from its config files and `MANGOHUD_CONFIG`; one log line) when MangoHud's layer is loaded",
    },
    hud_scale: f64 {
        ty: ValueType::Float { min: 0.25, max: 8.0 },
        default: "1",
        doc: "size multiplier for the whole HUD (font, spacing, graphs)",
    },
    hud_font_size: f64 {
        ty: ValueType::Float { min: 6.0, max: 64.0 },
        default: "13",
        doc: "font height in pixels before hud_scale (13 is the built-in font's native size)",
    },
    hud_alpha: f64 {
        ty: ValueType::Float { min: 0.0, max: 1.0 },
        default: "1",
        doc: "opacity of the HUD's background (text and graphs stay opaque); 1 composites the HUD with a copy on llvmpipe and one opaque quad elsewhere (cheaper there: measured on NVIDIA), below 1 blends every HUD pixel each frame (costlier on software drivers)",
    },
    hud_history: u64 {
        ty: ValueType::UInt { min: 2, max: 256 },
        default: "120",
        doc: "frames shown in the HUD's frame-time and GPU graphs",
    },
    ///
    /// Empty: no key.
    hud_toggle_key: String {
        ty: ValueType::KeyCombo,
        default: "Shift_R+F12",
        doc: "keys that show/hide the HUD, read without taking input from the app, on a thread of framescope's own: from X11 (XQueryKeymap) for X11 and XWayland windows (a slow X server never delays a frame), and from the app's own keyboard events for native Wayland windows (Vulkan and EGL; while the window has keyboard focus; needs libxkbcommon)",
    },
    hud_preset: HudPreset {
        ty: ValueType::Choice(HudPreset::NAMES),
        default: "full",
        doc: "which rows the HUD shows, each still subject to its own hud_* key: `minimal` FPS and frame time; `standard` (MangoHud-like) plus the frame and GPU graphs, GPU time and the device rows (GPU, VRAM, the app's own use, CPU, RAM); `full` plus counts, the device and driver, the swapchain, the frame timeline and the regions and draws tables; `profiling` plus the PM and driver counters (`hud_counters` pm and driver); `latency` FPS, frame time and its graph, and the frame timeline (CPU busy/wait, display latency, dropped frames, the last hitch)",
    },
    hud_fps: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "HUD line: frames per second over the last second",
    },
    hud_frame_time: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "HUD line: mean present-to-present time (ms)",
    },
    hud_frame_graph: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "HUD graph: present-to-present time of the last hud_history frames",
    },
    hud_gpu: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "HUD line: GPU busy time per frame (ms); on GL `GPU span`, the time between the frame's two timestamps",
    },
    hud_gpu_graph: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "HUD graph: GPU busy time of the last hud_history frames",
    },
    hud_counts: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "HUD line: submits, draws and dispatches per frame (Vulkan: draws and dispatches with `command_counts` or `samples=draw`, else submits and render passes)",
    },
    hud_device: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "HUD line: device and driver name",
    },
    hud_swapchain: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "HUD line: resolution, format and present mode of the swapchain (GL: size of the swapped drawable)",
    },
    hud_timeline: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "HUD lines of the frame timeline: CPU busy and wait time of the app's thread; display latency and its source (or why there is none); frames dropped; the last hitch in the graph window and its largest cause (presets `full`, `profiling` and `latency`)",
    },
    ///
    /// Normalised to names and presets joined by `,` (see [`Config::hud_counter_names`]).
    hud_counters: String {
        ty: ValueType::NameList,
        default: "basic",
        doc: "HUD lines, one per counter: names from the dump header's catalogue (the same names on every vendor where the meaning is the same) or presets: `basic` (GPU %, temperature, clock, power, VRAM, CPU %, RAM), `gpm` (NVIDIA GPM activity), `pm` (NVIDIA PM sampling: graphics engine active, SM active, pixel and compute warps, DRAM bandwidth; needs `framescope gpu-sampler`), `driver` (the driver's own counters of `driver_counters=1`, each from the newest frame that carried its group), `all` (the catalogue and the driver's counters); `none` (or 0) for no counter lines; a counter this machine does not have shows no line",
    },
    hud_regions: u64 {
        ty: ValueType::UInt { min: 0, max: 16 },
        default: "5",
        doc: "HUD table: the N most expensive debug-label regions and render passes (GPU ms, smoothed; needs samples=renderpass or finer); 0 hides it",
    },
    hud_draws: u64 {
        ty: ValueType::UInt { min: 0, max: 16 },
        default: "5",
        doc: "HUD table under the regions: the N most expensive draws, each named by its position (`draw 12 @ Frame/Main`) with its GPU ms when timed (needs samples=draw; with a draw budget a draw is timed only when the window covers it); 0 hides it",
    },
    screenshot: Option<u64> {
        ty: ValueType::FrameOrNone,
        default: "none",
        doc: "save the presented image (with the HUD) of this frame as PNG (Vulkan swapchains and GL/GLES windows)",
    },
    screenshot_path: String {
        ty: ValueType::ImagePath,
        default: "framescope-%p-frame%N.png",
        doc: "where screenshot= writes; relative paths are relative to the app's working directory; a second swapchain presented in the same frame gets `-1`, `-2`, ... before the extension; an existing file is never overwritten (a numbered sibling such as `shot.1.png` is written instead), symbolic links, FIFOs and devices are refused",
    },
    // --- end HUD keys ---
    ///
    /// See [`Config::effective_samples`].
    gpu_timing: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "GPU timestamp queries around every submission, for GPU busy time (Vulkan: two per submission; GL: two per frame); 0 adds no GPU work of ours for measuring: gpu_busy_ns is null with gpu_missing \"disabled\", the HUD hides its GPU line and graph, and samples are off whatever `samples` says",
    },
    samples: Samples {
        ty: ValueType::Choice(Samples::NAMES),
        default: "renderpass",
        doc: "granularity of GPU time samples inside a frame (Vulkan; levels are inclusive, see [samples](docs/dump-schema.md#samples-inside-frame))",
    },
    sample_stats: SampleStats {
        ty: ValueType::Choice(SampleStats::NAMES),
        default: "pass",
        doc: "where samples carry pipeline statistics: render passes, every draw (samples=draw only; two more query commands per draw), or nowhere",
    },
    sample_stats_every: u64 {
        ty: ValueType::UInt { min: 1, max: 1024 },
        default: "32",
        doc: "Vulkan, below `samples=draw`: pipeline statistics (`sample_stats`) are taken on one frame in N: command buffers begun in that frame carry them, others do not (frames count theirs in `stats_command_buffers`), so per-pass statistics are means over the frames that carried them, on the assumption of a steady workload. Taken on every frame they cost +2.0 % of GPU busy time on the H100 at 10 000 draws, on one frame in 32 +0.1 %; 1 takes them on every frame. With `samples=draw` they are taken on every frame but the draw budget's baseline frames, within `sample_budget`",
    },
    sample_budget: u64 {
        ty: ValueType::UInt { min: 1, max: 100 },
        default: "3",
        doc: "`samples=draw` on Vulkan: the share of GPU busy time (percent) that the whole mode may add against `samples=off`. Each frame times a window of consecutive draw positions per command buffer, sized from framescope's own measurement against quiet baseline frames (every 16th frame takes no sample of framescope's at all); the count settles over 48 frames, then moves only when the measured cost misses the budget by more than the noise; the window moves on every frame, so every draw of a steady workload is timed within `ceil(draws / window)` frames; frames carry `draws_timed` and `draw_window`. 100 times every draw of every frame. The GL shim times every draw",
    },
    fps_limit: String {
        ty: ValueType::RateList,
        default: "0",
        doc: "frame-rate limit (0: none): framescope paces each present (Vulkan) or swap (GL) to this rate, sleeping and then spinning the last part of a millisecond on the app's presenting thread, without holding anything the app needs; several rates (`60:144:0`) are cycled with `fps_limit_key`. The dump header's `fps_limit` and the HUD show the limit in force",
    },
    fps_limit_key: String {
        ty: ValueType::KeyCombo,
        default: "Shift_L+F1",
        doc: "keys that switch to the next rate of `fps_limit` (read like `hud_toggle_key`: X11, or a native Wayland window's keyboard events); none: no key",
    },
    driver_counters: bool {
        ty: ValueType::Bool,
        default: "0",
        doc: "Vulkan: the driver's own counters (`VK_KHR_performance_query`: RADV, ANV, Turnip, v3dv) per render pass (per command buffer where a counter's scope or `samples=cmdbuf` asks for it): every counter the queue family lists, split into groups that each need one pass and rotated across frames, one group a frame (samples and frames carry `driver_counters` with the group; summary means are over the frames that carried each counter). Needs `samples` at `cmdbuf` or finer and the driver's profiling lock; why it is off is in the header's `unavailable` (`vk_performance_query`). Off by default: drivers may serialise work around these queries (RADV waits for idle)",
    },
    display_times: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "when frames reached the screen (frames' `display`, `shown_ns`, `display_latency_ns`, `displayed_time_ns`): Vulkan enables `VK_EXT_present_timing` (with `VK_KHR_present_id2`, `VK_KHR_calibrated_timestamps` and, on the instance, `VK_KHR_get_surface_capabilities2`) and `VK_KHR_present_id` + `VK_KHR_present_wait` below the app where the driver has them (hidden from the app). Swapchains whose surface supports present timing get the driver's first-pixel-visible (else first-pixel-out) time of each present, read on a thread of its own; others get when a `vkWaitForPresentKHR` on a thread of its own returned, an upper bound; elsewhere, for X11 windows, framescope's own X connection reads the Present extension's completion events for the app's window. 0: no display-time source (frames say `disabled`)",
    },
    ///
    /// See [`Config::counts_commands`].
    command_counts: bool {
        ty: ValueType::Bool,
        default: "0",
        doc: "Vulkan: count every recorded draw, dispatch, trace-rays command, pipeline bind and barrier per frame (frames' `draws`, `dispatches`, `pipeline_binds`, `barriers`, `trace_rays` and the by-kind counts; the header's `command_counts` says whether they were counted). Each is then intercepted: about 12 ns a draw on the H100, a third of the CPU time of an app that only records 10 000 draws a frame, so it is off by default: those fields are then null (unknown) and the HUD's counts line shows submissions and render passes. On with `samples=draw` whatever this says. Submissions, command buffers and render passes are always counted; the GL shim always counts",
    },
    counters: bool {
        ty: ValueType::Bool,
        default: "1",
        doc: "counter sources read on framescope's own collector thread (one per process): NVIDIA NVML and GPM, amdgpu sysfs, hwmon, DRM fdinfo, CPU, RAM and process values; frames carry the newest values and the window each source's values cover; sources that cannot run are listed in the dump header's `unavailable`",
    },
    counter_interval_ms: u64 {
        ty: ValueType::UInt { min: 10, max: 10000 },
        default: "100",
        doc: "how often the collector reads its sources, in ms (GPM never more often than every 100 ms, its refresh period); reads pause while the app renders no frames",
    },
    label: String {
        ty: ValueType::Label,
        default: "none",
        doc: "a name for this run in the dump header's `config` (a driver build, a CI job, a machine): `report --html` shows it and its farm view groups by it (`--group-by label`); `framescope run --label TEXT` sets it",
    },
    log: LogLevel {
        ty: ValueType::Choice(LogLevel::NAMES),
        default: "info",
        doc: "framescope's own stderr messages (config errors are always printed)",
    },
}

/// Looks up a key by name.
pub fn key(name: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.name == name)
}

/// The config keys as a Markdown table (`| key | values | default | description |`), so the
/// README can be generated from, or checked against, [`KEYS`].
pub fn markdown_table() -> String {
    let mut s = String::from("| key | values | default | description |\n|---|---|---|---|\n");
    // GitHub's tables split cells at every unescaped `|`, inside code spans too.
    let cell = |t: &str| t.replace('|', "\\|");
    for k in KEYS {
        s.push_str(&format!(
            "| `{}` | {} | `{}` | {} |\n",
            k.name,
            cell(&k.ty.describe()),
            k.default,
            cell(k.doc)
        ));
    }
    s
}

/// Where a config entry came from, for error messages.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// The `FRAMESCOPE_CONFIG` variable (or a string given to [`parse`]).
    Env,
    /// `FRAMESCOPE_DUMP`.
    DumpEnv,
    /// A config file, with the 1-based line number.
    File { path: String, line: usize },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Env => f.write_str("FRAMESCOPE_CONFIG"),
            Origin::DumpEnv => f.write_str("FRAMESCOPE_DUMP"),
            Origin::File { path, line } => write!(f, "{}:{line}", shown(path)),
        }
    }
}

/// What is wrong with one config entry.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigErrorKind {
    UnknownKey {
        key: String,
    },
    BadValue {
        key: &'static str,
        value: String,
    },
    /// A non-boolean key given without `=value`.
    MissingValue {
        key: &'static str,
    },
    /// An explicitly named config file (`FRAMESCOPE_CONFIG_FILE`) could not be read.
    UnreadableFile {
        path: String,
        error: String,
    },
    /// A variable that holds config text is not UTF-8.
    NotUtf8 {
        var: &'static str,
    },
}

/// One config problem. Its `Display` is a single line starting with `framescope: `.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub origin: Origin,
    pub kind: ConfigErrorKind,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // User text is escaped onto one line and cut (`shown`), whatever it holds.
        match &self.kind {
            ConfigErrorKind::UnknownKey { key } => {
                let valid: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
                write!(
                    f,
                    "framescope: unknown config key '{}' in {}; ignored (valid keys: {})",
                    shown(key),
                    self.origin,
                    valid.join(", ")
                )
            }
            ConfigErrorKind::BadValue { key: k, value } => {
                let spec = key(k).expect("BadValue names a known key");
                write!(
                    f,
                    "framescope: bad value '{}' for config key '{k}' in {}; expected {}; using default {}",
                    shown(value),
                    self.origin,
                    spec.ty.describe(),
                    spec.default
                )
            }
            ConfigErrorKind::MissingValue { key: k } => {
                let spec = key(k).expect("MissingValue names a known key");
                write!(
                    f,
                    "framescope: config key '{k}' in {} needs a value ({}); using default {}",
                    self.origin,
                    spec.ty.describe(),
                    spec.default
                )
            }
            ConfigErrorKind::UnreadableFile { path, error } => write!(
                f,
                "framescope: cannot read config file '{}': {}; using defaults",
                shown(path),
                shown(error)
            ),
            ConfigErrorKind::NotUtf8 { var } => write!(
                f,
                "framescope: {var} is not valid UTF-8 (config entries are text); ignored"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Parses a `FRAMESCOPE_CONFIG`-style string (`key=value,key,...`) on top of the defaults.
pub fn parse(s: &str) -> (Config, Vec<ConfigError>) {
    let mut c = Config::default();
    let errors = c.apply_env_str(s);
    (c, errors)
}

impl Config {
    /// The sample level in effect: samples live in the GPU timing's submissions, so they are
    /// off when `gpu_timing` is.
    pub fn effective_samples(&self) -> Samples {
        if self.gpu_timing {
            self.samples
        } else {
            Samples::Off
        }
    }

    /// Whether the Vulkan layer intercepts every recorded draw, dispatch, bind and barrier to
    /// count it: asked for, or needed anyway for draw samples. Each
    /// intercept costs CPU time on the app's recording threads (about 12 ns a draw on the
    /// H100, where recording a draw costs the app about 30 ns), so it is not paid otherwise.
    pub fn counts_commands(&self) -> bool {
        self.command_counts || self.effective_samples() == Samples::Draw
    }

    /// Loads file, `FRAMESCOPE_CONFIG` and `FRAMESCOPE_DUMP` from the process environment.
    ///
    /// Reads the config file (a little I/O), so call it once at layer initialisation, never
    /// per frame. A missing default-location file is not an error.
    pub fn load_from_env() -> (Config, Vec<ConfigError>) {
        Self::load_with(|name| std::env::var_os(name), read_config_file)
    }

    /// [`Config::load_from_env`], printing the errors as stderr lines (see [`error_lines`]).
    pub fn load_and_report() -> Config {
        let (c, errors) = Self::load_from_env();
        for line in error_lines(&errors) {
            eprintln!("{line}");
        }
        c
    }

    /// [`Config::load_from_env`] with the environment and file reads injected (for tests).
    pub fn load_with(
        env: impl Fn(&str) -> Option<OsString>,
        read_file: impl Fn(&Path) -> std::io::Result<String>,
    ) -> (Config, Vec<ConfigError>) {
        let mut c = Config::default();
        let mut errors = Vec::new();
        let nonempty = |name: &str| env(name).filter(|v| !v.is_empty());
        let explicit = nonempty("FRAMESCOPE_CONFIG_FILE").map(PathBuf::from);
        let path = explicit.clone().or_else(|| {
            nonempty("XDG_CONFIG_HOME")
                .map(|x| PathBuf::from(x).join("framescope/framescope.conf"))
                .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".config/framescope/framescope.conf")))
        });
        if let Some(path) = path {
            let shown = path.to_string_lossy().into_owned();
            match read_file(&path) {
                Ok(text) => errors.extend(c.apply_file_str(&text, &shown)),
                // Only a file the user named is worth a complaint when it is missing.
                Err(e) if explicit.is_some() || e.kind() != std::io::ErrorKind::NotFound => errors.push(ConfigError {
                    origin: Origin::File {
                        path: shown.clone(),
                        line: 0,
                    },
                    kind: ConfigErrorKind::UnreadableFile {
                        path: shown,
                        error: e.to_string(),
                    },
                }),
                Err(_) => {}
            }
        }
        if let Some(s) = env("FRAMESCOPE_CONFIG") {
            match s.to_str() {
                Some(s) => errors.extend(c.apply_env_str(s)),
                None => errors.push(ConfigError {
                    origin: Origin::Env,
                    kind: ConfigErrorKind::NotUtf8 {
                        var: "FRAMESCOPE_CONFIG",
                    },
                }),
            }
        }
        if let Some(p) = nonempty("FRAMESCOPE_DUMP") {
            match p.to_str() {
                Some(p) => errors.extend(c.apply_entry("dump", Some(p), Origin::DumpEnv)),
                // A file name may hold any byte: the path is used as it is.
                None => c.dump = Some(p),
            }
        }
        (c, errors)
    }

    /// Applies a `key=value,key,...` string. Entries are trimmed; empty entries are skipped.
    /// A path containing a comma must come from the file or `FRAMESCOPE_DUMP`.
    pub fn apply_env_str(&mut self, s: &str) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (k, v) = split_entry(entry);
            errors.extend(self.apply_entry(k, v, Origin::Env));
        }
        errors
    }

    /// Applies a config file's text: one `key=value` per line, blank lines and lines whose
    /// first non-blank character is `#` ignored.
    pub fn apply_file_str(&mut self, text: &str, path: &str) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = split_entry(line);
            let origin = Origin::File {
                path: path.to_string(),
                line: i + 1,
            };
            errors.extend(self.apply_entry(k, v, origin));
        }
        errors
    }

    fn apply_entry(&mut self, k: &str, v: Option<&str>, origin: Origin) -> Option<ConfigError> {
        let Some(spec) = key(k) else {
            return Some(ConfigError {
                origin,
                kind: ConfigErrorKind::UnknownKey { key: k.to_string() },
            });
        };
        let raw = match (v, spec.ty) {
            (Some(v), _) => v,
            (None, ValueType::Bool) => "1",
            (None, _) => {
                return Some(ConfigError {
                    origin,
                    kind: ConfigErrorKind::MissingValue { key: spec.name },
                })
            }
        };
        match spec.ty.parse(raw) {
            Some(value) => {
                (spec.set)(self, value);
                None
            }
            None => Some(ConfigError {
                origin,
                kind: ConfigErrorKind::BadValue {
                    key: spec.name,
                    value: raw.to_string(),
                },
            }),
        }
    }

    /// The configuration in effect as a JSON object, one member per key (for the dump header).
    pub fn to_json(&self) -> Json {
        let mut m = serde_json::Map::new();
        for k in KEYS {
            m.insert(k.name.to_string(), (k.get)(self));
        }
        Json::Object(m)
    }
}

/// The lines [`Config::load_and_report`] prints for `errors`: the first
/// [`MAX_REPORTED_ERRORS`], then one line counting the rest, so a wrong file of thousands of
/// lines cannot flood the app's stderr.
pub fn error_lines(errors: &[ConfigError]) -> Vec<String> {
    let mut lines: Vec<String> = errors.iter().take(MAX_REPORTED_ERRORS).map(|e| e.to_string()).collect();
    if errors.len() > MAX_REPORTED_ERRORS {
        lines.push(format!(
            "framescope: {} more config errors not shown",
            errors.len() - MAX_REPORTED_ERRORS
        ));
    }
    lines
}

/// Reads a config file: a regular file of at most [`MAX_FILE_BYTES`] of UTF-8 text. Opened
/// with `O_NONBLOCK`, so a FIFO is refused at once instead of blocking until a writer comes
/// (open(2)); its type is checked on the open descriptor, so it cannot change in between.
pub fn read_config_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    let t = meta.file_type();
    if !t.is_file() {
        let what = if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_dir() {
            "a directory"
        } else if t.is_socket() {
            "a socket"
        } else {
            "something else"
        };
        return Err(std::io::Error::other(format!("it is {what}, not a regular file")));
    }
    let too_big = || std::io::Error::other(format!("it is larger than {} KiB", MAX_FILE_BYTES / 1024));
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big());
    }
    // The size can change after fstat: read one byte more than allowed to notice.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::other(format!(
            "it is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn split_entry(entry: &str) -> (&str, Option<&str>) {
    match entry.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim())),
        None => (entry, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsStr;
    use std::io;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn defaults_match_the_table() {
        let c = Config::default();
        assert_eq!(c.dump, None);
        assert_eq!(c.dump_start, 0.0);
        assert_eq!(c.dump_duration, None);
        assert!(c.hud);
        assert_eq!(c.samples, Samples::Renderpass);
        assert_eq!(c.log, LogLevel::Info);
        let names: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        let hud_keys = [
            "hud_refresh_ms",
            "hud_position",
            "hud_scale",
            "hud_font_size",
            "hud_alpha",
            "hud_history",
            "hud_toggle_key",
            "hud_preset",
            "hud_fps",
            "hud_frame_time",
            "hud_frame_graph",
            "hud_gpu",
            "hud_gpu_graph",
            "hud_counts",
            "hud_device",
            "hud_swapchain",
            "hud_timeline",
            "hud_counters",
            "hud_regions",
            "hud_draws",
            "screenshot",
            "screenshot_path",
        ];
        let mut expected = vec![
            "dump",
            "dump_start",
            "dump_duration",
            "dump_paused",
            "dump_toggle_key",
            "ctl",
            "hud",
        ];
        expected.extend(hud_keys);
        expected.extend([
            "gpu_timing",
            "samples",
            "sample_stats",
            "sample_stats_every",
            "sample_budget",
            "fps_limit",
            "fps_limit_key",
            "driver_counters",
            "display_times",
            "command_counts",
            "counters",
            "counter_interval_ms",
            "label",
            "log",
        ]);
        assert_eq!(names, expected);
        assert_eq!(c.hud_refresh_ms, 250);
        assert_eq!(c.hud_position, HudPosition::TopLeft);
        assert_eq!((c.hud_scale, c.hud_font_size, c.hud_alpha), (1.0, 13.0, 1.0));
        assert_eq!(c.hud_history, 120);
        assert_eq!(c.hud_toggle_key, "Shift_R+F12");
        assert!(c.hud_fps && c.hud_frame_graph);
        assert_eq!(c.hud_counters, "basic");
        assert!(c.counters);
        assert_eq!(c.counter_interval_ms, 100);
        assert!(c.gpu_timing);
        assert_eq!(c.effective_samples(), Samples::Renderpass);
        assert_eq!(c.screenshot, None);
        assert_eq!(c.screenshot_path, "framescope-%p-frame%N.png");
    }

    #[test]
    fn hud_keys_parse_and_reject() {
        let (c, errors) = parse(
            "hud_position=bottom-right,hud_scale=1.5,hud_alpha=0,hud_refresh_ms=100,hud_toggle_key=Control_L+h,\
             hud_gpu_graph=0,screenshot=42,screenshot_path=/tmp/s-%N.png,hud_history=60",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.hud_position, HudPosition::BottomRight);
        assert_eq!((c.hud_scale, c.hud_alpha, c.hud_refresh_ms), (1.5, 0.0, 100));
        assert_eq!(c.hud_toggle_key, "Control_L+h");
        assert!(!c.hud_gpu_graph);
        assert_eq!(c.screenshot, Some(42));
        assert_eq!(c.screenshot_path, "/tmp/s-%N.png");
        assert_eq!(c.hud_history, 60);
        // x,y only survives where commas do not separate entries; x:y works everywhere.
        let (c, errors) = parse("hud_position=10:20");
        assert!(errors.is_empty());
        assert_eq!(c.hud_position, HudPosition::At(10, 20));
        assert_eq!(c.to_json()["hud_position"], "10,20");
        let mut c = Config::default();
        assert!(c.apply_file_str("hud_position = 3, 4\n", "/f").is_empty());
        assert_eq!(c.hud_position, HudPosition::At(3, 4));
        for bad in [
            "hud_position=middle",
            "hud_position=-1:2",
            "hud_scale=0",
            "hud_scale=nan",
            "hud_alpha=1.5",
            "hud_refresh_ms=5",
            "hud_toggle_key=Shift_R+",
            "hud_toggle_key=a b",
            "screenshot=-3",
            "screenshot_path=",
            "hud_history=1",
        ] {
            let (c, errors) = parse(bad);
            assert_eq!(errors.len(), 1, "{bad}");
            assert_eq!(c, Config::default(), "{bad}");
        }
    }

    #[test]
    fn parses_values_of_every_type() {
        let (c, errors) = parse("dump=/tmp/x-%p.jsonl, dump_start=2.5,dump_duration=10,hud=0,samples=draw,log=debug");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.dump.as_deref(), Some(OsStr::new("/tmp/x-%p.jsonl")));
        assert_eq!(c.dump_start, 2.5);
        assert_eq!(c.dump_duration, Some(10.0));
        assert!(!c.hud);
        assert_eq!(c.samples, Samples::Draw);
        assert_eq!(c.log, LogLevel::Debug);
    }

    #[test]
    fn bare_bool_key_means_one_and_later_entries_win() {
        let (c, errors) = parse("hud=0,hud");
        assert!(errors.is_empty());
        assert!(c.hud);
        let (c, _) = parse("log=quiet,,log=debug,");
        assert_eq!(c.log, LogLevel::Debug);
    }

    #[test]
    fn gpu_timing_off_turns_samples_off_whatever_samples_says() {
        let (c, errors) = parse("gpu_timing=0,samples=draw");
        assert!(errors.is_empty(), "{errors:?}");
        assert!(!c.gpu_timing);
        assert_eq!(c.samples, Samples::Draw, "the key keeps what was set, for the header");
        assert_eq!(c.effective_samples(), Samples::Off);
        let (c, _) = parse("gpu_timing=1,samples=draw");
        assert_eq!(c.effective_samples(), Samples::Draw);
    }

    #[test]
    fn a_label_is_free_text_without_control_characters_and_goes_into_the_headers_config() {
        let (c, errs) = parse("label=nightly 1234 (é)");
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(c.label, "nightly 1234 (é)");
        assert_eq!(c.to_json()["label"], "nightly 1234 (é)");
        assert_eq!(Config::default().label, "");
        let long = format!("label={}", "x".repeat(LABEL_MAX + 1));
        for bad in ["label=tab\there", long.as_str()] {
            let (c, errs) = parse(bad);
            assert_eq!(errs.len(), 1, "{bad}: {errs:?}");
            assert_eq!(c.label, "", "{bad}: the default is kept");
        }
    }

    #[test]
    fn bad_entries_give_one_line_errors_and_keep_defaults() {
        let (c, errors) = parse("bogus=1,dump_start=abc,dump_duration=0,samples=everything,dump_start");
        assert_eq!(c, Config::default());
        assert_eq!(errors.len(), 5, "{errors:?}");
        let lines: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        for l in &lines {
            assert!(l.starts_with("framescope: "), "{l}");
            assert!(!l.contains('\n'), "{l}");
        }
        assert_eq!(
            lines[0],
            "framescope: unknown config key 'bogus' in FRAMESCOPE_CONFIG; ignored \
             (valid keys: dump, dump_start, dump_duration, dump_paused, dump_toggle_key, ctl, hud, hud_refresh_ms, hud_position, hud_scale, \
             hud_font_size, hud_alpha, hud_history, hud_toggle_key, hud_preset, hud_fps, hud_frame_time, hud_frame_graph, \
             hud_gpu, hud_gpu_graph, hud_counts, hud_device, hud_swapchain, hud_timeline, hud_counters, hud_regions, hud_draws, screenshot, \
             screenshot_path, gpu_timing, samples, sample_stats, sample_stats_every, sample_budget, fps_limit, fps_limit_key, driver_counters, display_times, command_counts, counters, counter_interval_ms, label, log)"
        );
        assert_eq!(
            lines[1],
            "framescope: bad value 'abc' for config key 'dump_start' in FRAMESCOPE_CONFIG; \
             expected seconds >= 0, e.g. 2.5; using default 0"
        );
        assert!(lines[2].contains("'0' for config key 'dump_duration'"), "{}", lines[2]);
        assert!(
            lines[3].contains("one of off|cmdbuf|renderpass|label|draw"),
            "{}",
            lines[3]
        );
        assert!(
            lines[4].contains("'dump_start'") && lines[4].contains("needs a value"),
            "{}",
            lines[4]
        );
    }

    #[test]
    fn rejects_negative_and_non_finite_seconds_and_non_binary_bools() {
        for bad in ["dump_start=-1", "dump_start=nan", "dump_start=inf", "hud=yes", "hud=2"] {
            let (_, errors) = parse(bad);
            assert_eq!(errors.len(), 1, "{bad}");
        }
    }

    #[test]
    fn user_text_cannot_break_the_one_line_rule() {
        let (_, errors) = parse("evil\nkey=1");
        assert_eq!(errors.len(), 1);
        assert!(!errors[0].to_string().contains('\n'));
        assert!(errors[0].to_string().contains("evil\\nkey"));
    }

    #[test]
    fn every_default_round_trips_through_the_parser() {
        for k in KEYS {
            let (c, errors) = parse(&format!("{}={}", k.name, k.default));
            assert!(errors.is_empty(), "{}", k.name);
            assert_eq!(c, Config::default(), "{}", k.name);
        }
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let m: HashMap<String, OsString> = pairs.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |k| m.get(k).cloned()
    }

    fn files(pairs: &[(&str, &str)]) -> impl Fn(&Path) -> io::Result<String> {
        let m: HashMap<PathBuf, String> = pairs.iter().map(|(k, v)| (PathBuf::from(k), v.to_string())).collect();
        move |p| {
            m.get(p)
                .cloned()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        }
    }

    #[test]
    fn env_overrides_file_and_dump_shorthand_overrides_both() {
        let file = "# comment\n\n  log = debug\nhud=0\ndump=/from/file\n";
        let (c, errors) = Config::load_with(
            env_of(&[("HOME", "/home/u"), ("FRAMESCOPE_CONFIG", "log=quiet")]),
            files(&[("/home/u/.config/framescope/framescope.conf", file)]),
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.log, LogLevel::Quiet);
        assert!(!c.hud);
        assert_eq!(c.dump.as_deref(), Some(OsStr::new("/from/file")));

        let (c, _) = Config::load_with(
            env_of(&[
                ("HOME", "/home/u"),
                ("FRAMESCOPE_CONFIG", "dump=/a"),
                ("FRAMESCOPE_DUMP", "/b"),
            ]),
            files(&[("/home/u/.config/framescope/framescope.conf", file)]),
        );
        assert_eq!(c.dump.as_deref(), Some(OsStr::new("/b")));
    }

    #[test]
    fn file_location_precedence() {
        let fs = files(&[
            ("/explicit.conf", "log=debug"),
            ("/xdg/framescope/framescope.conf", "log=quiet"),
            ("/home/u/.config/framescope/framescope.conf", "hud=0"),
        ]);
        let (c, _) = Config::load_with(
            env_of(&[
                ("FRAMESCOPE_CONFIG_FILE", "/explicit.conf"),
                ("XDG_CONFIG_HOME", "/xdg"),
                ("HOME", "/home/u"),
            ]),
            &fs,
        );
        assert_eq!((c.log, c.hud), (LogLevel::Debug, true));
        let (c, _) = Config::load_with(env_of(&[("XDG_CONFIG_HOME", "/xdg"), ("HOME", "/home/u")]), &fs);
        assert_eq!((c.log, c.hud), (LogLevel::Quiet, true));
        let (c, _) = Config::load_with(env_of(&[("HOME", "/home/u")]), &fs);
        assert_eq!((c.log, c.hud), (LogLevel::Info, false));
    }

    #[test]
    fn file_errors_name_file_and_line_and_missing_files() {
        let (_, errors) = Config::load_with(
            env_of(&[("FRAMESCOPE_CONFIG_FILE", "/c.conf")]),
            files(&[("/c.conf", "hud=1\n# x\nfoo=2\n")]),
        );
        assert_eq!(errors.len(), 1);
        assert!(errors[0].to_string().contains("in /c.conf:3"), "{}", errors[0]);

        // A missing default-location file is silent, a missing named file is reported.
        let (_, errors) = Config::load_with(env_of(&[("HOME", "/nowhere")]), files(&[]));
        assert!(errors.is_empty());
        let (c, errors) = Config::load_with(env_of(&[("FRAMESCOPE_CONFIG_FILE", "/missing.conf")]), files(&[]));
        assert_eq!(c, Config::default());
        assert_eq!(errors.len(), 1);
        assert!(errors[0]
            .to_string()
            .starts_with("framescope: cannot read config file '/missing.conf'"));
    }

    #[test]
    fn non_utf8_dump_path_is_kept_as_bytes_and_non_utf8_config_is_one_error() {
        let env = |k: &str| match k {
            "FRAMESCOPE_DUMP" => Some(OsStr::from_bytes(b"/tmp/\xffdump-%p.jsonl").to_os_string()),
            "FRAMESCOPE_CONFIG" => Some(OsStr::from_bytes(b"hud=0,log=\xfe").to_os_string()),
            _ => None,
        };
        let (c, errors) = Config::load_with(env, files(&[]));
        assert_eq!(
            c.dump.as_deref().map(OsStr::as_bytes),
            Some(&b"/tmp/\xffdump-%p.jsonl"[..])
        );
        assert!(c.hud, "no entry of a non-UTF-8 FRAMESCOPE_CONFIG is applied");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].to_string(),
            "framescope: FRAMESCOPE_CONFIG is not valid UTF-8 (config entries are text); ignored"
        );
        // The header shows the path lossily.
        assert_eq!(c.to_json()["dump"], "/tmp/\u{fffd}dump-%p.jsonl");
    }

    #[test]
    fn error_output_is_capped() {
        let text: String = (0..100_000).map(|i| format!("bogus{i}=1\n")).collect();
        let mut c = Config::default();
        let errors = c.apply_file_str(&text, "/big.conf");
        assert_eq!(errors.len(), 100_000);
        let lines = error_lines(&errors);
        assert_eq!(lines.len(), MAX_REPORTED_ERRORS + 1);
        assert!(lines[0].contains("'bogus0'"), "{}", lines[0]);
        assert_eq!(lines[10], "framescope: 99990 more config errors not shown");
        assert_eq!(error_lines(&errors[..3]).len(), 3);
        assert_eq!(error_lines(&errors[..10]).len(), 10);
    }

    #[test]
    fn a_huge_value_or_key_costs_a_bounded_error_line() {
        let big = "y".repeat(120_000);
        for entry in [format!("hud={big}"), format!("counters={big}"), format!("{big}=1")] {
            let (_, errors) = parse(&entry);
            let lines = error_lines(&errors);
            assert_eq!(lines.len(), 1, "{entry:.20}");
            assert!(lines[0].len() < 2_000, "{} bytes", lines[0].len());
            assert!(lines[0].contains("(120000 bytes in all)"), "{:.400}", lines[0]);
        }
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("framescope-config-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn config_files_that_are_not_small_regular_text_files_are_refused_without_blocking() {
        let d = scratch("files");
        let ok = d.join("ok.conf");
        std::fs::write(&ok, "hud=0\n").unwrap();
        assert_eq!(read_config_file(&ok).unwrap(), "hud=0\n");
        // A FIFO nobody writes: opening it for reading would block without O_NONBLOCK.
        let fifo = d.join("fifo.conf");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_config_file(&fifo).unwrap_err();
        assert_eq!(e.to_string(), "it is a FIFO, not a regular file");
        let e = read_config_file(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.to_string(), "it is a character device, not a regular file");
        let e = read_config_file(&d).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let big = d.join("big.conf");
        std::fs::write(&big, vec![b'#'; MAX_FILE_BYTES as usize + 1]).unwrap();
        assert_eq!(
            read_config_file(&big).unwrap_err().to_string(),
            "it is larger than 64 KiB"
        );
        std::fs::write(&big, vec![b'#'; MAX_FILE_BYTES as usize]).unwrap();
        assert!(read_config_file(&big).is_ok(), "exactly the limit is fine");
        let bin = d.join("bin.conf");
        std::fs::write(&bin, b"hud=0\n\xff").unwrap();
        assert!(read_config_file(&bin).unwrap_err().to_string().contains("not UTF-8"));
        // Through the loader: one error line naming the file, defaults kept.
        let fifo_env = fifo.clone().into_os_string();
        let (c, errors) = Config::load_with(
            |k| (k == "FRAMESCOPE_CONFIG_FILE").then(|| fifo_env.clone()),
            read_config_file,
        );
        assert_eq!(c, Config::default());
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0]
                .to_string()
                .ends_with("fifo.conf': it is a FIFO, not a regular file; using defaults"),
            "{}",
            errors[0]
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn to_json_has_every_key() {
        let (c, _) = parse("dump=/d,dump_duration=5,samples=off");
        let j = c.to_json();
        assert_eq!(j["dump"], "/d");
        assert_eq!(j["dump_start"], 0.0);
        assert_eq!(j["dump_duration"], 5.0);
        assert_eq!(j["hud"], true);
        assert_eq!(j["samples"], "off");
        assert_eq!(j["log"], "info");
        assert_eq!(j.as_object().unwrap().len(), KEYS.len());
        assert!(Config::default().to_json()["dump_duration"].is_null());
    }

    #[test]
    fn markdown_table_lists_every_key() {
        let t = markdown_table();
        assert_eq!(t.lines().count(), 2 + KEYS.len());
        assert!(
            t.contains("| `samples` | one of off\\|cmdbuf\\|renderpass\\|label\\|draw | `renderpass` |"),
            "{t}"
        );
        assert!(
            t.contains("accept `framescope ctl PID start\\|stop\\|mark LABEL\\|status`"),
            "a | in a doc is escaped too: {t}"
        );
        for line in t.lines() {
            let cells = line.replace("\\|", "").matches('|').count();
            assert_eq!(cells, 5, "four cells: {line}");
        }
    }
}

#[cfg(test)]
mod hud_counter_tests {
    use super::*;

    #[test]
    fn hud_counters_take_names_and_presets_in_order() {
        let (c, e) = parse("hud_counters=gpu_temp_c:basic+gpm_sm_util_pct");
        assert!(e.is_empty(), "{e:?}");
        let names = c.hud_counter_names();
        assert_eq!(names[0], "gpu_temp_c");
        assert_eq!(names[1], "gpu_util_pct", "basic expands in place, without the repeat");
        assert_eq!(names.last().unwrap(), "gpm_sm_util_pct");
        assert_eq!(names.iter().filter(|n| *n == "gpu_temp_c").count(), 1);
        let mut c = Config::default();
        assert!(c
            .apply_file_str("hud_counters=cpu_load_pct,ram_used_bytes", "f")
            .is_empty());
        assert_eq!(c.hud_counter_names(), ["cpu_load_pct", "ram_used_bytes"]);
        for off in ["hud_counters=none", "hud_counters=0", "hud_counters="] {
            assert!(parse(off).0.hud_counter_names().is_empty(), "{off}");
        }
        assert_eq!(parse("hud_counters").0.hud_counters, "basic", "a bare key is 1");
        let (c, e) = parse("hud_counters=gpu temp");
        assert_eq!(e.len(), 1);
        assert_eq!(c.hud_counters, "basic", "a bad value keeps the default");
    }
}
