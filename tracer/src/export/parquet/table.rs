//! Writes one table of [`super::schema`] to a Parquet file, row by row,
//! through parquet's column writer API (no Arrow): values are buffered per
//! column and written a row group at a time ([`ROW_GROUP_ROWS`] rows), so
//! memory stays bounded on traces of millions of calls.
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use super::schema::{Column, SCHEMA_VERSION, Table, Ty, VERSION_KEY};

/// Rows per row group (a few hundred MB of buffers at most for the widest table).
pub const ROW_GROUP_ROWS: usize = 1 << 18;

enum Data {
    I32(Vec<i32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
    Bytes(Vec<ByteArray>),
}

/// The buffered values of one column; `defs` (1 = value, 0 = null) for nullable ones.
struct Buf {
    col: &'static Column,
    data: Data,
    defs: Vec<i16>,
}

impl Buf {
    fn new(col: &'static Column) -> Buf {
        let data = match col.ty {
            Ty::Int32 => Data::I32(Vec::new()),
            Ty::Int64 | Ty::Timestamp => Data::I64(Vec::new()),
            Ty::Bool => Data::Bool(Vec::new()),
            Ty::Str => Data::Bytes(Vec::new()),
        };
        Buf { col, data, defs: Vec::new() }
    }

    fn clear(&mut self) {
        match &mut self.data {
            Data::I32(v) => v.clear(),
            Data::I64(v) => v.clear(),
            Data::Bool(v) => v.clear(),
            Data::Bytes(v) => v.clear(),
        }
        self.defs.clear();
    }
}

/// One open table file; [`TableWriter::finish`] writes the footer and moves
/// the file from `NAME.parquet.part` to `NAME.parquet`.
pub struct TableWriter {
    table: &'static Table,
    bufs: Vec<Buf>,
    /// Rows buffered (not yet in a row group).
    rows: usize,
    total: u64,
    writer: SerializedFileWriter<BufWriter<File>>,
    part: PathBuf,
    path: PathBuf,
}

impl TableWriter {
    /// `DIR/NAME.parquet` (through `NAME.parquet.part`); the caller checked
    /// that it may be overwritten.
    pub fn create(dir: &Path, table: &'static Table) -> anyhow::Result<TableWriter> {
        let path = dir.join(format!("{}.parquet", table.name));
        let part = dir.join(format!("{}.parquet.part", table.name));
        let f = File::create(&part).with_context(|| format!("cannot create {}", part.display()))?;
        let schema = Arc::new(parse_message_type(&table.message_type()).context("table schema")?);
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("tracer {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new(VERSION_KEY.to_string(), SCHEMA_VERSION.to_string()),
                KeyValue::new("tracer.table".to_string(), table.name.to_string()),
            ]))
            .build();
        let writer = SerializedFileWriter::new(BufWriter::with_capacity(1 << 20, f), schema, Arc::new(props))
            .with_context(|| format!("writing {}", part.display()))?;
        Ok(TableWriter {
            table,
            bufs: table.all_columns().map(Buf::new).collect(),
            rows: 0,
            total: 0,
            writer,
            part,
            path,
        })
    }

    /// The next row; fill every column in schema order, then [`Row::done`].
    pub fn row(&mut self) -> Row<'_> {
        Row { w: self, i: 0 }
    }

    /// Writes the buffered rows as one row group.
    fn flush(&mut self) -> anyhow::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut rg = self.writer.next_row_group()?;
        for b in &mut self.bufs {
            let mut cw = rg.next_column()?.context("fewer columns in the schema than buffered")?;
            let defs = b.col.nullable.then_some(&b.defs[..]);
            match &b.data {
                Data::I32(v) => cw.typed::<Int32Type>().write_batch(v, defs, None)?,
                Data::I64(v) => cw.typed::<Int64Type>().write_batch(v, defs, None)?,
                Data::Bool(v) => cw.typed::<BoolType>().write_batch(v, defs, None)?,
                Data::Bytes(v) => cw.typed::<ByteArrayType>().write_batch(v, defs, None)?,
            };
            cw.close()?;
            b.clear();
        }
        rg.close()?;
        self.rows = 0;
        Ok(())
    }

    /// Writes what is left and the footer; returns the number of rows.
    pub fn finish(mut self) -> anyhow::Result<u64> {
        let ctx = format!("writing {}", self.part.display());
        self.flush().context(ctx.clone())?;
        self.writer.close().context(ctx.clone())?;
        std::fs::rename(&self.part, &self.path)
            .with_context(|| format!("cannot rename {} to {}", self.part.display(), self.path.display()))?;
        Ok(self.total)
    }
}

/// One row being filled, column by column in schema order. A value of the
/// wrong type, a null in a required column or a missing column is a bug
/// here, not bad input: it panics naming the table and column.
pub struct Row<'a> {
    w: &'a mut TableWriter,
    i: usize,
}

impl Row<'_> {
    fn next(&mut self, ty: Ty, present: bool) -> &mut Buf {
        let table = self.w.table.name;
        let b = self.w.bufs.get_mut(self.i).unwrap_or_else(|| panic!("{table}: more values than columns"));
        let c = b.col;
        assert_eq!(c.ty, ty, "{table}.{}: value of the wrong type", c.name);
        assert!(present || c.nullable, "{table}.{}: null in a required column", c.name);
        if c.nullable {
            b.defs.push(present as i16);
        }
        self.i += 1;
        b
    }

    pub fn int32(&mut self, v: impl Into<Option<i32>>) -> &mut Self {
        let v = v.into();
        if let (Data::I32(d), Some(x)) = (&mut self.next(Ty::Int32, v.is_some()).data, v) {
            d.push(x);
        }
        self
    }

    pub fn int64(&mut self, v: impl Into<Option<i64>>) -> &mut Self {
        let v = v.into();
        if let (Data::I64(d), Some(x)) = (&mut self.next(Ty::Int64, v.is_some()).data, v) {
            d.push(x);
        }
        self
    }

    /// µs since the Unix epoch.
    pub fn timestamp(&mut self, v: Option<i64>) -> &mut Self {
        if let (Data::I64(d), Some(x)) = (&mut self.next(Ty::Timestamp, v.is_some()).data, v) {
            d.push(x);
        }
        self
    }

    pub fn bool(&mut self, v: impl Into<Option<bool>>) -> &mut Self {
        let v = v.into();
        if let (Data::Bool(d), Some(x)) = (&mut self.next(Ty::Bool, v.is_some()).data, v) {
            d.push(x);
        }
        self
    }

    /// A string shared by many rows (cheap to clone: reference-counted).
    pub fn bytes(&mut self, v: Option<&ByteArray>) -> &mut Self {
        if let (Data::Bytes(d), Some(x)) = (&mut self.next(Ty::Str, v.is_some()).data, v) {
            d.push(x.clone());
        }
        self
    }

    pub fn str(&mut self, v: Option<&str>) -> &mut Self {
        if let (Data::Bytes(d), Some(x)) = (&mut self.next(Ty::Str, v.is_some()).data, v) {
            d.push(ByteArray::from(x));
        }
        self
    }

    /// Ends the row (every column filled); writes a row group when enough are buffered.
    pub fn done(&mut self) -> anyhow::Result<()> {
        let n = self.w.bufs.len();
        assert_eq!(self.i, n, "{}: {} of {n} columns filled", self.w.table.name, self.i);
        self.w.rows += 1;
        self.w.total += 1;
        if self.w.rows >= ROW_GROUP_ROWS {
            self.w.flush()?;
        }
        Ok(())
    }
}
