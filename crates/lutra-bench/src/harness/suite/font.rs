//! The font the charts' text is drawn with. plotters draws text with `ab_glyph` from
//! a TrueType file registered at run time (no system font library): the first of
//! `$LUTRA_BENCH_FONT` and the usual places of DejaVu Sans, Liberation Sans and Lato
//! that exists (Debian: `fonts-dejavu-core`).

use plotters::style::FontStyle;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Places searched after `$LUTRA_BENCH_FONT`.
const CANDIDATES: [&str; 7] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/lato/Lato-Regular.ttf",
    "/Library/Fonts/Arial.ttf",
];

/// The family name charts ask for.
pub const FAMILY: &str = "sans-serif";

/// Registers the first usable font as [`FAMILY`] (once per process). Returns its
/// path, or an error naming where it looked.
///
/// # Errors
/// No candidate exists or none is a valid TrueType font.
pub fn ensure() -> Result<&'static Path, String> {
    static FONT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FONT.get_or_init(register_first)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(Clone::clone)
}

fn register_first() -> Result<PathBuf, String> {
    let mut tried: Vec<PathBuf> = std::env::var_os("LUTRA_BENCH_FONT")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    tried.extend(CANDIDATES.iter().map(PathBuf::from));
    for path in &tried {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        // The registry keeps the bytes for the rest of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        if plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).is_ok() {
            // Bold falls back to the regular face (captions only).
            let _ = plotters::style::register_font(FAMILY, FontStyle::Bold, bytes);
            return Ok(path.clone());
        }
    }
    Err(format!(
        "no TrueType font found for the charts' text (looked at $LUTRA_BENCH_FONT and {}); \
         install fonts-dejavu-core or set LUTRA_BENCH_FONT",
        CANDIDATES.join(", ")
    ))
}
