//! The values config keys take: their types (how a raw string is parsed and described) and
//! the enums of the keys with named values. Below both the key table (`config`) and the macro
//! that generates it (`declare`).

/// Which per-draw GPU samples a later issue collects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Samples {
    Off,
    Cmdbuf,
    Renderpass,
    Label,
    Draw,
}

impl Samples {
    /// Valid values, in the order of [`Samples::ALL`].
    pub const NAMES: &'static [&'static str] = &["off", "cmdbuf", "renderpass", "label", "draw"];
    pub const ALL: [Samples; 5] = [
        Samples::Off,
        Samples::Cmdbuf,
        Samples::Renderpass,
        Samples::Label,
        Samples::Draw,
    ];

    /// The config spelling of this value.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Where samples carry pipeline statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleStats {
    /// Render passes (every pass sample, whatever `samples` is finer than).
    Pass,
    /// Every draw/dispatch in `samples=draw`, render passes otherwise: two more query
    /// commands per draw.
    Draw,
    Off,
}

impl SampleStats {
    /// Valid values, in the order of [`SampleStats::ALL`].
    pub const NAMES: &'static [&'static str] = &["pass", "draw", "off"];
    pub const ALL: [SampleStats; 3] = [SampleStats::Pass, SampleStats::Draw, SampleStats::Off];

    /// The config spelling of this value.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// How much framescope itself prints to stderr. Config errors are printed at every level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Quiet,
    Info,
    Debug,
}

impl LogLevel {
    /// Valid values, in the order of [`LogLevel::ALL`].
    pub const NAMES: &'static [&'static str] = &["quiet", "info", "debug"];
    pub const ALL: [LogLevel; 3] = [LogLevel::Quiet, LogLevel::Info, LogLevel::Debug];

    /// The config spelling of this value.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Which rows the HUD shows (each still subject to its own `hud_*` key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HudPreset {
    /// FPS and frame time.
    Minimal,
    /// Plus the graphs, GPU time and the device rows (GPU, VRAM, the app, CPU, RAM).
    Standard,
    /// Plus counts, the device and driver, the swapchain, the regions and draws tables.
    Full,
    /// Plus the PM and driver counters.
    Profiling,
    /// FPS, frame time and its graph, and the frame timeline: for judging latency and
    /// smoothness (not a superset of the others: it comes after them only in this list).
    Latency,
}

impl HudPreset {
    /// Valid values, in the order of [`HudPreset::ALL`].
    pub const NAMES: &'static [&'static str] = &["minimal", "standard", "full", "profiling", "latency"];
    pub const ALL: [HudPreset; 5] = [
        HudPreset::Minimal,
        HudPreset::Standard,
        HudPreset::Full,
        HudPreset::Profiling,
        HudPreset::Latency,
    ];

    /// The config spelling of this value.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Where the HUD sits: a corner, or a pixel offset of its top-left corner (`x,y` or `x:y`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HudPosition {
    TopLeft,
    TopRight,
    BottomLeft,
    BottomRight,
    At(u32, u32),
}

impl HudPosition {
    /// The corner names, in the order of [`HudPosition::CORNERS`].
    pub const NAMES: &'static [&'static str] = &["top-left", "top-right", "bottom-left", "bottom-right"];
    pub const CORNERS: [HudPosition; 4] = [
        HudPosition::TopLeft,
        HudPosition::TopRight,
        HudPosition::BottomLeft,
        HudPosition::BottomRight,
    ];

    fn parse(raw: &str) -> Option<HudPosition> {
        if let Some(i) = Self::NAMES.iter().position(|n| *n == raw) {
            return Some(Self::CORNERS[i]);
        }
        let (x, y) = raw.split_once([',', ':'])?;
        Some(HudPosition::At(x.trim().parse().ok()?, y.trim().parse().ok()?))
    }

    /// The config spelling of this value.
    pub fn to_config_string(self) -> String {
        match self {
            HudPosition::At(x, y) => format!("{x},{y}"),
            corner => Self::NAMES[Self::CORNERS.iter().position(|c| *c == corner).unwrap_or(0)].to_string(),
        }
    }
}

/// The type of a key's value; decides parsing, validation and the "valid values" text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueType {
    /// A dump path template; `none` (or empty) means unset.
    PathTemplate,
    /// A float number of seconds >= 0.
    SecondsNonNegative,
    /// A float number of seconds > 0, or `unlimited`.
    SecondsPositiveOrUnlimited,
    /// `0` or `1`; a bare `key` means `key=1`.
    Bool,
    /// One of the listed names.
    Choice(&'static [&'static str]),
    /// An integer in `[min, max]`.
    UInt { min: u64, max: u64 },
    /// A finite number in `[min, max]`.
    Float { min: f64, max: f64 },
    /// A HUD corner or pixel offset.
    Position,
    /// X11 keysym names joined by `+`, e.g. `Shift_R+F12`.
    KeyCombo,
    /// A frame index, or `none`.
    FrameOrNone,
    /// An image path template (`%p`, `%n`, `%t` as for dumps, plus `%N` the frame index).
    ImagePath,
    /// Counter names or presets joined by `,` (file) or `:`/`+` (anywhere); `none` for none.
    NameList,
    /// Frame rates from 0 (unlimited) to 1000 joined by `:` or `+`, normalised to `a:b:c`.
    RateList,
    /// Free text of at most [`LABEL_MAX`] bytes without control characters (a `,` ends it in
    /// `FRAMESCOPE_CONFIG`, as for every value); `none` or empty for none.
    Label,
}

/// The longest `label`: a CI job's or driver build's name, not a document.
pub const LABEL_MAX: usize = 128;

impl ValueType {
    /// Human description of the valid values, used in docs and error messages.
    pub fn describe(self) -> String {
        match self {
            ValueType::PathTemplate => "a path (%p pid, %n exe name, %t start time, %% %) or none".into(),
            ValueType::SecondsNonNegative => "seconds >= 0, e.g. 2.5".into(),
            ValueType::SecondsPositiveOrUnlimited => "seconds > 0, e.g. 60, or unlimited".into(),
            ValueType::Bool => "0 or 1".into(),
            ValueType::Choice(names) => format!("one of {}", names.join("|")),
            ValueType::UInt { min, max } => format!("an integer from {min} to {max}"),
            ValueType::Float { min, max } => format!("a number from {min} to {max}"),
            ValueType::Position => format!(
                "{} or x,y in pixels (x:y inside FRAMESCOPE_CONFIG)",
                HudPosition::NAMES.join("|")
            ),
            ValueType::KeyCombo => "X11 key names joined by +, e.g. Shift_R+F12, or none".into(),
            ValueType::FrameOrNone => "a frame index (0 is the first frame) or none".into(),
            ValueType::ImagePath => "a path (%p pid, %n exe name, %N frame, %t start time, %% %)".into(),
            ValueType::Label => format!("text of at most {LABEL_MAX} bytes, no control characters, or none"),
            ValueType::RateList => {
                "frames per second from 0 (unlimited) to 1000, several joined by : or + to cycle through with fps_limit_key".into()
            }
            ValueType::NameList => format!(
                "counter names or presets ({}) joined by , or : (: inside FRAMESCOPE_CONFIG), or none",
                HUD_COUNTER_PRESETS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join("|")
            ),
        }
    }

    pub(crate) fn parse(self, raw: &str) -> Option<Value> {
        match self {
            ValueType::PathTemplate => Some(Value::Path(match raw {
                "" | "none" => None,
                p => Some(p.to_string()),
            })),
            ValueType::SecondsNonNegative => parse_seconds(raw)
                .filter(|s| *s >= 0.0)
                .map(|s| Value::Seconds(Some(s))),
            ValueType::SecondsPositiveOrUnlimited => {
                if raw == "unlimited" {
                    Some(Value::Seconds(None))
                } else {
                    parse_seconds(raw).filter(|s| *s > 0.0).map(|s| Value::Seconds(Some(s)))
                }
            }
            ValueType::Bool => match raw {
                "0" => Some(Value::Bool(false)),
                "1" => Some(Value::Bool(true)),
                _ => None,
            },
            ValueType::Choice(names) => names.iter().position(|n| *n == raw).map(Value::Choice),
            ValueType::UInt { min, max } => raw
                .parse::<u64>()
                .ok()
                .filter(|v| (min..=max).contains(v))
                .map(Value::UInt),
            ValueType::Float { min, max } => raw
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && (min..=max).contains(v))
                .map(Value::Float),
            ValueType::Position => HudPosition::parse(raw).map(Value::Position),
            ValueType::KeyCombo if raw == "none" => Some(Value::Text(String::new())),
            ValueType::KeyCombo => {
                let ok = raw
                    .split('+')
                    .all(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
                ok.then(|| Value::Text(raw.to_string()))
            }
            ValueType::FrameOrNone => match raw {
                "none" | "" => Some(Value::Frame(None)),
                n => n.parse::<u64>().ok().map(|f| Value::Frame(Some(f))),
            },
            ValueType::ImagePath => (!raw.is_empty()).then(|| Value::Text(raw.to_string())),
            ValueType::NameList => parse_name_list(raw).map(Value::Text),
            ValueType::Label => match raw {
                "none" | "" => Some(Value::Text(String::new())),
                t => (t.len() <= LABEL_MAX && !t.chars().any(char::is_control)).then(|| Value::Text(t.to_string())),
            },
            ValueType::RateList => {
                let rates: Option<Vec<u32>> = raw
                    .split([':', '+'])
                    .map(|r| r.trim().parse::<u32>().ok().filter(|r| *r <= 1000))
                    .collect();
                rates
                    .filter(|r| !r.is_empty() && r.len() <= 16)
                    .map(|r| Value::Text(r.iter().map(u32::to_string).collect::<Vec<_>>().join(":")))
            }
        }
    }
}

/// HUD counter presets: the lines MangoHud users expect (`basic`), GPM's hardware metrics on
/// NVIDIA Hopper and newer (`gpm`), CUPTI PM sampling's (`pm`, with `framescope gpu-sampler`),
/// and every counter of the catalogue (`all`).
pub const HUD_COUNTER_PRESETS: &[(&str, &[&str])] = &[
    (
        "basic",
        &[
            "gpu_util_pct",
            "gpu_temp_c",
            "gpu_clock_mhz",
            "gpu_power_w",
            "vram_used_bytes",
            "cpu_load_pct",
            "ram_used_bytes",
        ],
    ),
    (
        "gpm",
        &[
            "gpm_graphics_util_pct",
            "gpm_sm_util_pct",
            "gpm_sm_occupancy_pct",
            "gpm_dram_bw_util_pct",
        ],
    ),
    (
        "pm",
        &[
            "pm_graphics_active_pct",
            "pm_sm_active_pct",
            "pm_ps_warps_pct",
            "pm_cs_warps_pct",
            "pm_dram_bw_pct",
        ],
    ),
    // The driver's own counters (`driver_counters=1`), each with the newest frame that
    // carried its group.
    ("driver", &[]),
    ("all", &[]),
];

/// `a,b:c+d` (or `1`/`0` for `basic`/`none`) to the normalised `a,b,c,d`; `None` when a name
/// has characters no counter name has.
fn parse_name_list(raw: &str) -> Option<String> {
    match raw {
        "1" => return Some("basic".into()),
        "0" | "" | "none" => return Some("none".into()),
        _ => {}
    }
    let names: Vec<&str> = raw
        .split([',', ':', '+'])
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    let ok = !names.is_empty()
        && names
            .iter()
            .all(|n| n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    ok.then(|| names.join(","))
}

fn parse_seconds(raw: &str) -> Option<f64> {
    raw.parse::<f64>().ok().filter(|s| s.is_finite())
}

/// A parsed, validated value, handed to a key's setter.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Path(Option<String>),
    Seconds(Option<f64>),
    Bool(bool),
    /// Index into the key's [`ValueType::Choice`] list.
    Choice(usize),
    UInt(u64),
    Float(f64),
    Position(HudPosition),
    Text(String),
    Frame(Option<u64>),
}
