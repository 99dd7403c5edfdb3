//! How a config key is declared once: [`config_keys!`] turns one row per key into the field
//! of `Config`, its `Default` and its `KEYS` entry, and [`KeyValue`] gives each field type its
//! setter and getter, so a row names only what differs between keys.

use super::values::{HudPosition, HudPreset, LogLevel, SampleStats, Samples, Value, ValueType};
use serde_json::{json, Value as Json};
use std::ffi::OsString;

/// A field type a config key can have: how a parsed [`Value`] becomes it, and how it shows in
/// the dump header.
pub(super) trait KeyValue: Sized {
    /// `None` when `v` is not a value of this type: a row whose `ValueType` does not fit its
    /// field, which `Config::default()` refuses at once.
    fn from_value(v: Value) -> Option<Self>;
    fn to_json(&self) -> Json;
}

impl KeyValue for Option<OsString> {
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Path(p) => Some(p.map(OsString::from)),
            _ => None,
        }
    }
    fn to_json(&self) -> Json {
        json!(self.as_ref().map(|d| d.to_string_lossy()))
    }
}

impl KeyValue for f64 {
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Seconds(Some(s)) => Some(s),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }
    fn to_json(&self) -> Json {
        json!(self)
    }
}

impl KeyValue for Option<f64> {
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Seconds(s) => Some(s),
            _ => None,
        }
    }
    fn to_json(&self) -> Json {
        json!(self)
    }
}

impl KeyValue for bool {
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
    fn to_json(&self) -> Json {
        json!(self)
    }
}

impl KeyValue for u64 {
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::UInt(n) => Some(n),
            _ => None,
        }
    }
    fn to_json(&self) -> Json {
        json!(self)
    }
}

impl KeyValue for Option<u64> {
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Frame(f) => Some(f),
            _ => None,
        }
    }
    fn to_json(&self) -> Json {
        json!(self)
    }
}

impl KeyValue for String {
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Text(t) => Some(t),
            _ => None,
        }
    }
    fn to_json(&self) -> Json {
        json!(self)
    }
}

impl KeyValue for HudPosition {
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Position(p) => Some(p),
            _ => None,
        }
    }
    fn to_json(&self) -> Json {
        json!(self.to_config_string())
    }
}

/// The enums chosen by name: a [`Value::Choice`] indexes their `ALL`, in the order of the
/// `NAMES` their `ValueType::Choice` lists.
macro_rules! choice_key_values {
    ($($t:ty),*) => {$(
        impl KeyValue for $t {
            fn from_value(v: Value) -> Option<Self> {
                match v {
                    Value::Choice(i) => <$t>::ALL.get(i).copied(),
                    _ => None,
                }
            }
            fn to_json(&self) -> Json {
                json!(self.as_str())
            }
        }
    )*};
}

choice_key_values!(Samples, SampleStats, LogLevel, HudPreset);

/// A key's default, parsed as a user's value would be.
pub(super) fn default_of<T: KeyValue>(name: &str, ty: ValueType, default: &str) -> T {
    // Only a wrong row can fail here (a default its type rejects, or a type that does not fit
    // the field), and every test that builds a `Config` then fails; no user input reaches this.
    ty.parse(default)
        .and_then(T::from_value)
        .unwrap_or_else(|| panic!("the default {default:?} of config key {name} does not fit its type"))
}

/// Declares every config key, one row each:
///
/// ```text
/// ///
/// /// Rust-only notes on the field (optional; a paragraph after the key's doc).
/// field_name: FieldType {
///     ty: ValueType::...,
///     default: "as a user writes it",
///     doc: "the one-line doc of --help and the README table",
/// },
/// ```
///
/// and generates `pub struct Config` (each field documented by its key's doc, then the notes),
/// `impl Default for Config` (each default parsed by its `ty`, as a user's value would be) and
/// `pub static KEYS`, in row order. The field type picks the setter and getter ([`KeyValue`]).
macro_rules! config_keys {
    ($(
        $(#[doc = $note:expr])*
        $field:ident : $fty:ty {
            ty: $vt:expr,
            default: $default:literal,
            doc: $doc:literal $(,)?
        }
    ),* $(,)?) => {
        /// The configuration in effect: one field per key of [`KEYS`], whose `Default` is
        /// built from the keys' defaults.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Config {
            $(
                #[doc = $doc]
                $(#[doc = $note])*
                pub $field: $fty,
            )*
        }

        impl Default for Config {
            fn default() -> Self {
                Config {
                    $($field: $crate::control::config::declare::default_of::<$fty>(
                        stringify!($field),
                        $vt,
                        $default,
                    ),)*
                }
            }
        }

        /// Every configuration key, in the order of the README table and the dump header.
        pub static KEYS: &[KeySpec] = &[
            $(KeySpec {
                name: stringify!($field),
                ty: $vt,
                default: $default,
                doc: $doc,
                set: |c, v| {
                    if let Some(x) = <$fty as $crate::control::config::declare::KeyValue>::from_value(v) {
                        c.$field = x;
                    }
                },
                get: |c| $crate::control::config::declare::KeyValue::to_json(&c.$field),
            },)*
        ];
    };
}

pub(super) use config_keys;
