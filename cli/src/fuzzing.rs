//! Entry points for the fuzz targets (`fuzz/`): every reader of dump bytes the CLI has, on
//! any input. They must end without a panic, in memory bounded by the line reader.

/// `report` and `export` (all four formats) reading `data` as a dump.
pub fn dump_readers(data: &[u8]) {
    crate::report::fuzz_one(data);
    crate::export::fuzz_one(data);
}
