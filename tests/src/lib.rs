//! Integration-test harness: Xvfb, running apps under the layer, validation checks.
