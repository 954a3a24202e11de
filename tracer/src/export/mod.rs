//! The export layer: traces rendered for people and other tools. [`plot`]
//! draws PNG and SVG figures, [`perfetto`] writes Chrome trace-event JSON
//! for ui.perfetto.dev, [`parquet`] writes Parquet tables for DuckDB and Spark, [`html`] the
//! report as one self-contained page. Each takes analysed data (`crate::analysis`) and a
//! writer or a directory; the commands that call them are in `crate::cli`.
pub mod html;
pub mod openmetrics;
pub mod parquet;
pub mod perfetto;
pub mod plot;
pub mod pprof;
