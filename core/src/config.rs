//! Configuration: MangoHud-like `key=value,key,...` from `FRAMESCOPE_CONFIG`, plus a file.
//!
//! Sources, later ones overriding earlier ones key by key:
//! 1. the file `$FRAMESCOPE_CONFIG_FILE`, else `$XDG_CONFIG_HOME/framescope/framescope.conf`,
//!    else `~/.config/framescope/framescope.conf` (one `key=value` per line, `#` comments);
//! 2. `FRAMESCOPE_CONFIG` (`key=value` entries separated by commas);
//! 3. `FRAMESCOPE_DUMP=PATH`, a shorthand for `dump=PATH`.
//!
//! Every key is one row of [`KEYS`]: its type, default and one-line doc live there, so adding
//! a key is one row (plus its field in [`Config`]) and the README table can be generated from
//! or checked against [`markdown_table`]. Bad input never stops the app: each problem becomes a
//! [`ConfigError`] whose `Display` is one line, and the key keeps its default. No key runs a
//! command; values are only ever parsed as numbers, names or a path template.

use serde_json::{json, Value as Json};
use std::fmt;

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

/// The configuration in effect. `Default` is built from the defaults in [`KEYS`].
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Dump path template (`%p`, `%n`, `%t`, `%%`); `None`: no dump.
    pub dump: Option<String>,
    /// Seconds after start before frames are written to the dump.
    pub dump_start: f64,
    /// Seconds of frames to write after `dump_start`; `None`: until the end.
    pub dump_duration: Option<f64>,
    /// Show the HUD.
    pub hud: bool,
    /// Per-draw GPU sample granularity (used by a later issue).
    pub samples: Samples,
    /// framescope's own stderr verbosity.
    pub log: LogLevel,
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
}

impl ValueType {
    /// Human description of the valid values, used in docs and error messages.
    pub fn describe(self) -> String {
        match self {
            ValueType::PathTemplate => "a path (%p pid, %n exe name, %t start time, %% %) or none".into(),
            ValueType::SecondsNonNegative => "seconds >= 0, e.g. 2.5".into(),
            ValueType::SecondsPositiveOrUnlimited => "seconds > 0, e.g. 60, or unlimited".into(),
            ValueType::Bool => "0 or 1".into(),
            ValueType::Choice(names) => format!("one of {}", names.join("|")),
        }
    }

    fn parse(self, raw: &str) -> Option<Value> {
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
        }
    }
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

/// Every configuration key. Adding a key: one row here plus its field in [`Config`].
pub static KEYS: &[KeySpec] = &[
    KeySpec {
        name: "dump",
        ty: ValueType::PathTemplate,
        default: "none",
        doc: "write a JSON Lines per-frame dump to this path template (%p pid, %n exe, %t UTC start time YYYYmmdd-HHMMSS)",
        set: |c, v| if let Value::Path(p) = v { c.dump = p },
        get: |c| json!(c.dump),
    },
    KeySpec {
        name: "dump_start",
        ty: ValueType::SecondsNonNegative,
        default: "0",
        doc: "seconds after start before frames are written to the dump",
        set: |c, v| if let Value::Seconds(Some(s)) = v { c.dump_start = s },
        get: |c| json!(c.dump_start),
    },
    KeySpec {
        name: "dump_duration",
        ty: ValueType::SecondsPositiveOrUnlimited,
        default: "unlimited",
        doc: "seconds of frames to dump after dump_start; then the summary is written and dumping stops",
        set: |c, v| if let Value::Seconds(s) = v { c.dump_duration = s },
        get: |c| json!(c.dump_duration),
    },
    KeySpec {
        name: "hud",
        ty: ValueType::Bool,
        default: "1",
        doc: "show the on-screen HUD",
        set: |c, v| if let Value::Bool(b) = v { c.hud = b },
        get: |c| json!(c.hud),
    },
    KeySpec {
        name: "samples",
        ty: ValueType::Choice(Samples::NAMES),
        default: "renderpass",
        doc: "granularity of GPU time samples inside a frame",
        set: |c, v| if let Value::Choice(i) = v { c.samples = Samples::ALL[i] },
        get: |c| json!(c.samples.as_str()),
    },
    KeySpec {
        name: "log",
        ty: ValueType::Choice(LogLevel::NAMES),
        default: "info",
        doc: "framescope's own stderr messages (config errors are always printed)",
        set: |c, v| if let Value::Choice(i) = v { c.log = LogLevel::ALL[i] },
        get: |c| json!(c.log.as_str()),
    },
];

/// Looks up a key by name.
pub fn key(name: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.name == name)
}

/// The config keys as a Markdown table (`| key | values | default | description |`), so the
/// README can be generated from, or checked against, [`KEYS`].
pub fn markdown_table() -> String {
    let mut s = String::from("| key | values | default | description |\n|---|---|---|---|\n");
    for k in KEYS {
        let values = k.ty.describe().replace('|', "\\|");
        s.push_str(&format!(
            "| `{}` | {} | `{}` | {} |\n",
            k.name, values, k.default, k.doc
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
            Origin::File { path, line } => write!(f, "{}:{line}", path.escape_debug()),
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
}

/// One config problem. Its `Display` is a single line starting with `framescope: `.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub origin: Origin,
    pub kind: ConfigErrorKind,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // escape_debug keeps user text on one line whatever it contains.
        match &self.kind {
            ConfigErrorKind::UnknownKey { key } => {
                let valid: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
                write!(
                    f,
                    "framescope: unknown config key '{}' in {}; ignored (valid keys: {})",
                    key.escape_debug(),
                    self.origin,
                    valid.join(", ")
                )
            }
            ConfigErrorKind::BadValue { key: k, value } => {
                let spec = key(k).expect("BadValue names a known key");
                write!(
                    f,
                    "framescope: bad value '{}' for config key '{k}' in {}; expected {}; using default {}",
                    value.escape_debug(),
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
                path.escape_debug(),
                error.escape_debug()
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl Default for Config {
    fn default() -> Self {
        // Placeholder values, every one overwritten from the KEYS defaults just below.
        let mut c = Config {
            dump: None,
            dump_start: 0.0,
            dump_duration: None,
            hud: false,
            samples: Samples::Off,
            log: LogLevel::Quiet,
        };
        for k in KEYS {
            let v = k.ty.parse(k.default).expect("every default in KEYS is valid");
            (k.set)(&mut c, v);
        }
        c
    }
}

/// Parses a `FRAMESCOPE_CONFIG`-style string (`key=value,key,...`) on top of the defaults.
pub fn parse(s: &str) -> (Config, Vec<ConfigError>) {
    let mut c = Config::default();
    let errors = c.apply_env_str(s);
    (c, errors)
}

impl Config {
    /// Loads file, `FRAMESCOPE_CONFIG` and `FRAMESCOPE_DUMP` from the process environment.
    ///
    /// Reads the config file (a little I/O), so call it once at layer initialisation, never
    /// per frame. A missing default-location file is not an error.
    pub fn load_from_env() -> (Config, Vec<ConfigError>) {
        Self::load_with(|name| std::env::var(name).ok(), |path| std::fs::read_to_string(path))
    }

    /// [`Config::load_from_env`], printing each error as one stderr line.
    pub fn load_and_report() -> Config {
        let (c, errors) = Self::load_from_env();
        for e in &errors {
            eprintln!("{e}");
        }
        c
    }

    /// [`Config::load_from_env`] with the environment and file reads injected (for tests).
    pub fn load_with(
        env: impl Fn(&str) -> Option<String>,
        read_file: impl Fn(&str) -> std::io::Result<String>,
    ) -> (Config, Vec<ConfigError>) {
        let mut c = Config::default();
        let mut errors = Vec::new();
        let nonempty = |name: &str| env(name).filter(|v| !v.is_empty());
        let explicit = nonempty("FRAMESCOPE_CONFIG_FILE");
        let path = explicit.clone().or_else(|| {
            nonempty("XDG_CONFIG_HOME")
                .map(|x| format!("{x}/framescope/framescope.conf"))
                .or_else(|| nonempty("HOME").map(|h| format!("{h}/.config/framescope/framescope.conf")))
        });
        if let Some(path) = path {
            match read_file(&path) {
                Ok(text) => errors.extend(c.apply_file_str(&text, &path)),
                // Only a file the user named is worth a complaint when it is missing.
                Err(e) if explicit.is_some() || e.kind() != std::io::ErrorKind::NotFound => errors.push(ConfigError {
                    origin: Origin::File {
                        path: path.clone(),
                        line: 0,
                    },
                    kind: ConfigErrorKind::UnreadableFile {
                        path,
                        error: e.to_string(),
                    },
                }),
                Err(_) => {}
            }
        }
        if let Some(s) = env("FRAMESCOPE_CONFIG") {
            errors.extend(c.apply_env_str(&s));
        }
        if let Some(p) = nonempty("FRAMESCOPE_DUMP") {
            errors.extend(c.apply_entry("dump", Some(&p), Origin::DumpEnv));
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
    use std::io;

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
        assert_eq!(names, ["dump", "dump_start", "dump_duration", "hud", "samples", "log"]);
    }

    #[test]
    fn parses_values_of_every_type() {
        let (c, errors) = parse("dump=/tmp/x-%p.jsonl, dump_start=2.5,dump_duration=10,hud=0,samples=draw,log=debug");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.dump.as_deref(), Some("/tmp/x-%p.jsonl"));
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
             (valid keys: dump, dump_start, dump_duration, hud, samples, log)"
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

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    fn files(pairs: &[(&str, &str)]) -> impl Fn(&str) -> io::Result<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
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
        assert_eq!(c.dump.as_deref(), Some("/from/file"));

        let (c, _) = Config::load_with(
            env_of(&[
                ("HOME", "/home/u"),
                ("FRAMESCOPE_CONFIG", "dump=/a"),
                ("FRAMESCOPE_DUMP", "/b"),
            ]),
            files(&[("/home/u/.config/framescope/framescope.conf", file)]),
        );
        assert_eq!(c.dump.as_deref(), Some("/b"));
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
    }
}
