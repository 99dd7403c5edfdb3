//! framescope core: configuration, frame model, frame assembly, statistics and the dump writer.
