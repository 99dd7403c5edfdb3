//! `--parquet`: one row per frame, with the run's metadata repeated in every row (dictionary
//! encoded, so it costs little), so that any number of runs load as one table into DuckDB,
//! Spark or BigQuery. Written with the `parquet` crate's column writers, in row groups of
//! [`ROW_GROUP`] frames (bounded memory), Snappy compressed.
//!
//! Columns: `dump` (the dump's path as given), `exe`, `pid`, `api`, `device`, `driver`,
//! `start_unix_ns` (the run), `frame`, `t_ns`, `cpu_frame_ns`, `gpu_busy_ns`, `gpu_span_ns`,
//! `draws`, `dispatches`, `submits` (the frame; nanoseconds as INT64), and
//! `counter_<name>` (DOUBLE) for every counter of the header's catalogue. Every column but
//! `frame` and `t_ns` is nullable: null where the dump has no value, and `draws` and
//! `dispatches` where the header says they were not counted (`command_counts: false`).

use super::records::{Frame, Header};
use super::sink::Sink;
use ::parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use ::parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::SerializedFileWriter;
use ::parquet::schema::types::Type;
use std::io::{self, Write};
use std::sync::Arc;

/// Frames per row group.
const ROW_GROUP: usize = 65536;
/// Counter columns; a forged header may list millions.
const MAX_COUNTERS: usize = 256;

/// One column's values for the row group being built; `None` rows are nulls.
enum Values {
    Int(Vec<Option<i64>>),
    Double(Vec<Option<f64>>),
    Text(Vec<Option<ByteArray>>),
}

struct Column {
    name: String,
    required: bool,
    values: Values,
}

impl Column {
    fn new(name: &str, required: bool, values: Values) -> Self {
        Column {
            name: name.to_string(),
            required,
            values,
        }
    }

    fn schema(&self) -> ::parquet::errors::Result<Type> {
        let (physical, logical) = match self.values {
            Values::Int(_) => (Physical::INT64, None),
            Values::Double(_) => (Physical::DOUBLE, None),
            Values::Text(_) => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
        };
        let repetition = if self.required {
            Repetition::REQUIRED
        } else {
            Repetition::OPTIONAL
        };
        Type::primitive_type_builder(&self.name, physical)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .build()
    }
}

/// The run's metadata, the same in every row.
#[derive(Default)]
struct Run {
    exe: Option<ByteArray>,
    pid: Option<i64>,
    api: Option<ByteArray>,
    device: Option<ByteArray>,
    driver: Option<ByteArray>,
    start_unix_ns: Option<i64>,
}

pub struct Parquet<W: Write + Send> {
    out: Option<W>,
    writer: Option<SerializedFileWriter<W>>,
    dump: ByteArray,
    run: Run,
    /// Catalogue counters with a column, in column order.
    counters: Vec<String>,
    columns: Vec<Column>,
    rows: usize,
}

fn text(s: Option<&str>) -> Option<ByteArray> {
    s.map(ByteArray::from)
}

fn int(v: Option<u64>) -> Option<i64> {
    v.and_then(|v| i64::try_from(v).ok())
}

fn err(e: ::parquet::errors::ParquetError) -> io::Error {
    io::Error::other(e.to_string())
}

impl<W: Write + Send> Parquet<W> {
    /// A writer of `out`; `dump` names the run in every row.
    pub fn new(out: W, dump: &str) -> Self {
        Parquet {
            out: Some(out),
            writer: None,
            dump: ByteArray::from(dump),
            run: Run::default(),
            counters: Vec::new(),
            columns: Vec::new(),
            rows: 0,
        }
    }

    fn flush_rows(&mut self) -> io::Result<()> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        if self.rows == 0 {
            return Ok(());
        }
        let mut rg = w.next_row_group().map_err(err)?;
        for col in &mut self.columns {
            let mut c = rg
                .next_column()
                .map_err(err)?
                .ok_or_else(|| io::Error::other("parquet: fewer columns than the schema"))?;
            let required = col.required;
            let levels = |present: &mut dyn Iterator<Item = bool>| -> Vec<i16> { present.map(i16::from).collect() };
            match &mut col.values {
                Values::Int(v) => {
                    let def = levels(&mut v.iter().map(Option::is_some));
                    let vals: Vec<i64> = v.iter().flatten().copied().collect();
                    c.typed::<Int64Type>()
                        .write_batch(&vals, (!required).then_some(&def[..]), None)
                        .map_err(err)?;
                    v.clear();
                }
                Values::Double(v) => {
                    let def = levels(&mut v.iter().map(Option::is_some));
                    let vals: Vec<f64> = v.iter().flatten().copied().collect();
                    c.typed::<DoubleType>()
                        .write_batch(&vals, (!required).then_some(&def[..]), None)
                        .map_err(err)?;
                    v.clear();
                }
                Values::Text(v) => {
                    let def = levels(&mut v.iter().map(Option::is_some));
                    let vals: Vec<ByteArray> = v.iter().flatten().cloned().collect();
                    c.typed::<ByteArrayType>()
                        .write_batch(&vals, (!required).then_some(&def[..]), None)
                        .map_err(err)?;
                    v.clear();
                }
            }
            c.close().map_err(err)?;
        }
        rg.close().map_err(err)?;
        self.rows = 0;
        Ok(())
    }
}

impl<W: Write + Send> Sink for Parquet<W> {
    fn header(&mut self, h: &Header) -> io::Result<()> {
        let d = h.device.as_ref();
        self.run = Run {
            exe: text(h.exe.as_deref()),
            pid: int(h.pid),
            api: text(h.api.as_deref()),
            device: text(d.and_then(|d| d.name.as_deref())),
            driver: text(d.and_then(|d| d.driver_info.as_deref().or(d.driver_version.as_deref()))),
            start_unix_ns: int(h.start_unix_ns),
        };
        let mut columns = vec![
            Column::new("dump", true, Values::Text(Vec::new())),
            Column::new("exe", false, Values::Text(Vec::new())),
            Column::new("pid", false, Values::Int(Vec::new())),
            Column::new("api", false, Values::Text(Vec::new())),
            Column::new("device", false, Values::Text(Vec::new())),
            Column::new("driver", false, Values::Text(Vec::new())),
            Column::new("start_unix_ns", false, Values::Int(Vec::new())),
            Column::new("frame", true, Values::Int(Vec::new())),
            Column::new("t_ns", true, Values::Int(Vec::new())),
        ];
        for name in [
            "cpu_frame_ns",
            "gpu_busy_ns",
            "gpu_span_ns",
            "draws",
            "dispatches",
            "submits",
        ] {
            columns.push(Column::new(name, false, Values::Int(Vec::new())));
        }
        let mut counters: Vec<String> = Vec::new();
        for c in h.counters.iter().take(MAX_COUNTERS) {
            if !counters.contains(&c.name) {
                columns.push(Column::new(
                    &format!("counter_{}", c.name),
                    false,
                    Values::Double(Vec::new()),
                ));
                counters.push(c.name.clone());
            }
        }
        let fields = columns
            .iter()
            .map(|c| c.schema().map(Arc::new))
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        let schema = Type::group_type_builder("frame")
            .with_fields(fields)
            .build()
            .map_err(err)?;
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let out = self
            .out
            .take()
            .ok_or_else(|| io::Error::other("parquet: a second header"))?;
        self.writer = Some(SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props)).map_err(err)?);
        self.columns = columns;
        self.counters = counters;
        Ok(())
    }

    fn frame(&mut self, f: &Frame) -> io::Result<()> {
        let r = &self.run;
        let frame_values = [
            int(f.cpu_frame_ns),
            int(f.gpu_busy_ns),
            int(f.gpu_span_ns),
            int(f.draws),
            int(f.dispatches),
            int(f.submits),
        ];
        let mut ints = [r.pid, r.start_unix_ns, int(Some(f.frame)), int(Some(f.t_ns))]
            .into_iter()
            .chain(frame_values);
        let mut texts = [
            Some(self.dump.clone()),
            r.exe.clone(),
            r.api.clone(),
            r.device.clone(),
            r.driver.clone(),
        ]
        .into_iter();
        let mut counters = self.counters.iter();
        for col in &mut self.columns {
            match &mut col.values {
                Values::Int(v) => v.push(ints.next().flatten()),
                Values::Text(v) => v.push(texts.next().flatten()),
                Values::Double(v) => v.push(counters.next().and_then(|n| f.counter(n))),
            }
        }
        self.rows += 1;
        if self.rows >= ROW_GROUP {
            self.flush_rows()?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<Vec<String>> {
        self.flush_rows()?;
        if let Some(w) = self.writer.take() {
            let mut out = w.into_inner().map_err(err)?;
            out.flush()?;
        }
        Ok(Vec::new())
    }
}
