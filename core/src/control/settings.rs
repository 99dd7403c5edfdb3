//! Process-wide configuration for a layer, read once on first use; config errors are printed once.

use crate::control::config::{Config, LogLevel};
use std::sync::OnceLock;

pub fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let c = Config::load_and_report();
        crate::runtime::log::set_level(match c.log {
            LogLevel::Quiet => crate::runtime::log::QUIET,
            LogLevel::Info => crate::runtime::log::INFO,
            LogLevel::Debug => crate::runtime::log::DEBUG,
        });
        c
    })
}
