//! Counter model, equation engine, counter databases and platform backends.
