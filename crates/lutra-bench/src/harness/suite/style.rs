//! How the series of a chart are told apart: a colour from a fixed palette and, once
//! the palette is used up, a stroke (dashed, then dotted lines; hollow, then pale
//! bars) and a marker (filled, then hollow circles).
//!
//! # Invariants
//! - The styles of indices `0..MAX_SERIES` are pairwise distinct: index `i` has colour
//!   `i % PALETTE.len()` and stroke `i / PALETTE.len()`, so no two series of a chart
//!   share colour and stroke. A figure with more series than that is refused
//!   ([`check_count`]) rather than drawn ambiguously.

use plotters::prelude::*;

/// The palette, in order of use: colours that stay apart in print.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// How a series' line (or bar) is drawn beside its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stroke {
    /// A solid line with filled circles; a filled bar.
    Solid,
    /// A dashed line with hollow circles; a hollow (outlined) bar.
    Dashed,
    /// A dotted line with small filled circles; a pale bar with an outline.
    Dotted,
}

/// The strokes, in order of use.
const STROKES: [Stroke; 3] = [Stroke::Solid, Stroke::Dashed, Stroke::Dotted];

/// How many series a chart can tell apart.
pub const MAX_SERIES: usize = PALETTE.len() * STROKES.len();

/// One series' look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeriesStyle {
    /// Its colour.
    pub color: RGBColor,
    /// Its stroke.
    pub stroke: Stroke,
}

/// The style of the `index`th series of a chart (`index < MAX_SERIES`; larger
/// indices wrap around, which [`check_count`] prevents).
pub fn style(index: usize) -> SeriesStyle {
    SeriesStyle {
        color: PALETTE[index % PALETTE.len()],
        stroke: STROKES[(index / PALETTE.len()) % STROKES.len()],
    }
}

/// Refuses a chart whose series could not be told apart.
///
/// # Errors
/// More than [`MAX_SERIES`] series.
pub fn check_count(series: usize) -> Result<(), String> {
    if series > MAX_SERIES {
        return Err(format!(
            "{series} series: a chart tells at most {MAX_SERIES} apart (split the figure)"
        ));
    }
    Ok(())
}

impl SeriesStyle {
    /// The style of the series' line.
    pub fn line(&self) -> ShapeStyle {
        self.color.stroke_width(2)
    }

    /// The dash and gap lengths of the series' line, or `None` for a solid one.
    pub fn dashes(&self) -> Option<(u32, u32)> {
        match self.stroke {
            Stroke::Solid => None,
            Stroke::Dashed => Some((9, 5)),
            Stroke::Dotted => Some((2, 4)),
        }
    }

    /// The marker at each point: its radius and style.
    pub fn marker(&self) -> (u32, ShapeStyle) {
        match self.stroke {
            Stroke::Solid => (3, self.color.filled()),
            Stroke::Dashed => (4, self.color.stroke_width(2)),
            Stroke::Dotted => (2, self.color.filled()),
        }
    }

    /// The style of the series' bars.
    pub fn bar(&self) -> ShapeStyle {
        match self.stroke {
            Stroke::Solid => self.color.filled(),
            Stroke::Dashed => self.color.stroke_width(2),
            Stroke::Dotted => self.color.mix(0.35).filled(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_of_a_chart_looks_different() {
        for a in 0..MAX_SERIES {
            for b in a + 1..MAX_SERIES {
                assert_ne!(style(a), style(b), "series {a} and {b} look the same");
            }
        }
    }

    #[test]
    fn past_the_palette_the_stroke_changes() {
        assert_eq!(style(0).color, style(PALETTE.len()).color);
        assert_ne!(style(0).stroke, style(PALETTE.len()).stroke);
        assert_ne!(style(0).marker(), style(PALETTE.len()).marker());
    }

    #[test]
    fn too_many_series_are_refused() {
        assert!(check_count(MAX_SERIES).is_ok());
        assert!(check_count(MAX_SERIES + 1).is_err());
    }
}
