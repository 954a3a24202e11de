//! `tracer record --replayable`: recordings that can be re-executed
//! (docs/recording-format.md).
pub mod params;
pub mod probes;
pub mod recorder;
pub mod registry;
pub mod store;

/// One line for the end of `tracer record --replayable`.
pub fn summary_line(c: &recorder::Coverage, manifest: &std::path::Path) -> String {
    let pct = |a: u64, b: u64| if b == 0 { 100.0 } else { 100.0 * a as f64 / b as f64 };
    let got = c.params_exact;
    format!(
        "recording: {} images captured of {} loads; {} of {} launches with parameters ({:.1} %){}; {}",
        c.images_captured,
        c.image_loads,
        got,
        c.launches,
        pct(got, c.launches),
        if c.h2d_copies > 0 {
            format!("; {} of {} host-to-device copies stored", c.h2d_captured, c.h2d_copies)
        } else {
            String::new()
        },
        manifest.display()
    )
}
