//! The two lanes the Vulkan integration tests run in (`cargo xtask test` runs them twice):
//! `validation` puts `VK_LAYER_KHRONOS_validation` below framescope, so any message our calls
//! cause fails the test; `driver` puts framescope directly on the driver. The second lane exists
//! because the validation layer answers some calls itself: a `vkGetPhysicalDeviceFeatures2KHR`
//! that re-entered framescope from the loader's terminator crashed every app that called it, and
//! no test saw it while the validation layer sat in between.

/// The environment variable that picks the lane; unset means `validation`.
pub const VAR: &str = "FRAMESCOPE_TEST_LANE";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    Validation,
    Driver,
}

impl Lane {
    /// The lane of this test process. An unknown value is a failure, never a silent default.
    pub fn current() -> Lane {
        match std::env::var(VAR).as_deref() {
            Err(std::env::VarError::NotPresent) | Ok("validation") => Lane::Validation,
            Ok("driver") => Lane::Driver,
            other => panic!("{VAR}={other:?}: expected 'validation' or 'driver'"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Lane::Validation => "validation",
            Lane::Driver => "driver",
        }
    }
}
