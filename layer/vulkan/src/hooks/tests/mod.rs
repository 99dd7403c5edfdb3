//! Unit tests of the hooks, called as the loader would on a device of the fake driver
//! (`fake_driver`): what goes down to the driver, what comes back to the app, and the state
//! the layer keeps.

mod cmdbuf;
mod present;
mod queue;
mod span_reads;
