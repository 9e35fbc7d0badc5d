//! Charts: a [`Figure`] (series of points, each a [`Spread`] over the run's rounds)
//! drawn by plotters as SVG and PNG. Lines put thread counts (or another number) on
//! x, on a log₂ scale when asked (and y on a log₁₀ scale); bars group categories, one bar per series. Every
//! point or bar is the median, and its error bar runs from the minimum to the
//! maximum of the rounds.

use super::font;
use super::spread::Spread;
use super::style::{check_count, style};
use plotters::coord::Shift;
use plotters::coord::ranged1d::SegmentValue;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Pixels of a chart.
const SIZE: (u32, u32) = (900, 520);

/// How the x axis is laid out.
#[derive(Clone, Debug)]
pub enum Layout {
    /// Points joined by lines; x is a number (log₂ scale if `log_x`).
    Lines {
        /// The x axis' name.
        x_label: String,
        /// Draw x on a log₂ scale (thread counts).
        log_x: bool,
        /// Draw y on a log₁₀ scale (values orders of magnitude apart).
        log_y: bool,
    },
    /// Bars grouped by category (x of a point is the category's index).
    Bars {
        /// The categories, in order.
        categories: Vec<String>,
    },
}

/// One contender's points.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's name.
    pub name: String,
    /// (x, spread) by increasing x.
    pub points: Vec<(f64, Spread)>,
}

/// A chart, before drawing.
#[derive(Clone, Debug)]
pub struct Figure {
    /// File stem (`seed000-while`), unique within a run.
    pub id: String,
    /// The caption.
    pub title: String,
    /// The y axis' name.
    pub y_label: String,
    /// Lines or bars.
    pub layout: Layout,
    /// The series.
    pub series: Vec<Series>,
}

/// The files a figure was drawn to.
#[derive(Clone, Debug)]
pub struct Drawn {
    /// The SVG file.
    pub svg: PathBuf,
    /// The PNG file.
    pub png: PathBuf,
}

impl Figure {
    /// Whether there is at least one point to draw.
    pub fn has_points(&self) -> bool {
        self.series.iter().any(|series| !series.points.is_empty())
    }

    /// Draws the figure to `dir/<id>.svg` and `dir/<id>.png`.
    ///
    /// # Errors
    /// More series than a chart can tell apart ([`check_count`]), no font for the
    /// text ([`font::ensure`]), or a drawing or file error.
    pub fn draw(&self, dir: &Path) -> Result<Drawn, String> {
        check_count(self.series.len())?;
        font::ensure()?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let svg = dir.join(format!("{}.svg", self.id));
        let png = dir.join(format!("{}.png", self.id));
        {
            let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
            self.draw_on(&root)?;
            root.present()
                .map_err(|e| format!("{}: {e}", svg.display()))?;
        }
        {
            let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
            self.draw_on(&root)?;
            root.present()
                .map_err(|e| format!("{}: {e}", png.display()))?;
        }
        Ok(Drawn { svg, png })
    }

    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(describe)?;
        let y_max = self
            .series
            .iter()
            .flat_map(|series| series.points.iter().map(|(_, spread)| spread.max))
            .fold(0.0f64, f64::max);
        // Headroom for the legend (about 5% of the height per series).
        let headroom = 1.12 + 0.055 * self.series.len() as f64;
        let y_top = if y_max > 0.0 { y_max * headroom } else { 1.0 };
        match &self.layout {
            Layout::Lines {
                x_label,
                log_x,
                log_y,
            } => self.draw_lines(root, x_label, (*log_x, *log_y), y_max, headroom),
            Layout::Bars { categories } => self.draw_bars(root, categories, y_top),
        }
    }

    fn draw_lines<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        x_label: &str,
        (log_x, log_y): (bool, bool),
        y_max: f64,
        headroom: f64,
    ) -> Result<(), String> {
        let xs = || {
            self.series
                .iter()
                .flat_map(|series| series.points.iter().map(|&(x, _)| x))
        };
        let x_min = xs().fold(f64::INFINITY, f64::min);
        let x_max = xs().fold(f64::NEG_INFINITY, f64::max);
        let (x_min, x_max) = if x_min.is_finite() && x_max > x_min {
            (x_min, x_max)
        } else {
            (1.0, 2.0)
        };
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(&self.title, (font::FAMILY, 19))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80);
        // A log₂ axis is drawn as a linear axis over log₂ x, labelled at whole powers.
        let to_axis = |x: f64| if log_x { x.max(1e-9).log2() } else { x };
        let (lo, hi) = (to_axis(x_min), to_axis(x_max));
        let pad = ((hi - lo) * 0.05).max(0.1);
        // A log₁₀ y axis likewise: linear over log₁₀ y, from the smallest positive value.
        let y_min = self
            .series
            .iter()
            .flat_map(|series| series.points.iter().map(|(_, spread)| spread.min))
            .filter(|&y| y > 0.0)
            .fold(f64::INFINITY, f64::min);
        let log_y = log_y && y_min.is_finite() && y_max > y_min;
        let to_y = move |y: f64| if log_y { y.max(y_min).log10() } else { y };
        let y_range = if log_y {
            let (bottom, top) = (y_min.log10() - 0.1, y_max.log10());
            bottom..top + (top - bottom) * (headroom - 1.0)
        } else if y_max > 0.0 {
            0.0..y_max * headroom
        } else {
            0.0..1.0
        };
        let mut chart = builder
            .build_cartesian_2d(lo - pad..hi + pad, y_range)
            .map_err(describe)?;
        let y_format = |y: &f64| if log_y { si(10f64.powf(*y)) } else { si(*y) };
        let x_format = |x: &f64| {
            if !log_x {
                si(*x)
            } else if (x - x.round()).abs() < 1e-6 {
                format!("{:.0}", x.round().exp2())
            } else {
                String::new()
            }
        };
        let labels = if log_x {
            ((hi - lo).round() as usize + 1).max(2)
        } else {
            10
        };
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(&self.y_label)
            .x_labels(labels)
            .x_label_formatter(&x_format)
            .y_label_formatter(&y_format)
            .label_style((font::FAMILY, 14))
            .draw()
            .map_err(describe)?;
        self.lines_into(&mut chart, to_axis, to_y)
    }

    fn lines_into<'a, DB: DrawingBackend + 'a>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
        to_axis: impl Fn(f64) -> f64,
        to_y: impl Fn(f64) -> f64,
    ) -> Result<(), String> {
        for (index, series) in self.series.iter().enumerate() {
            let look = style(index);
            let color = look.color;
            let medians: Vec<(f64, f64)> = series
                .points
                .iter()
                .map(|&(x, spread)| (to_axis(x), to_y(spread.median)))
                .collect();
            let (radius, marker) = look.marker();
            match look.dashes() {
                None => {
                    chart
                        .draw_series(LineSeries::new(medians.clone(), look.line()))
                        .map_err(describe)?
                        .label(&series.name)
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                        });
                }
                Some((dash, gap)) => {
                    chart
                        .draw_series(DashedLineSeries::new(
                            medians.clone(),
                            dash,
                            gap,
                            look.line(),
                        ))
                        .map_err(describe)?
                        .label(&series.name)
                        .legend(move |(x, y)| {
                            plotters::element::DashedPathElement::new(
                                vec![(x, y), (x + 18, y)],
                                dash,
                                gap,
                                color.stroke_width(3),
                            )
                        });
                }
            }
            chart
                .draw_series(
                    medians
                        .iter()
                        .map(|&point| Circle::new(point, radius, marker)),
                )
                .map_err(describe)?;
            chart
                .draw_series(series.points.iter().map(|&(x, spread)| {
                    ErrorBar::new_vertical(
                        to_axis(x),
                        to_y(spread.min),
                        to_y(spread.median),
                        to_y(spread.max),
                        color,
                        8,
                    )
                }))
                .map_err(describe)?;
        }
        legend(chart)
    }

    fn draw_bars<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        categories: &[String],
        y_top: f64,
    ) -> Result<(), String> {
        // Each category takes one slot per series and an empty slot as a gap.
        let width = self.series.len() as i32 + 1;
        let slots = (categories.len().max(1) as i32) * width;
        let label_slot = (self.series.len() as i32 - 1).max(0) / 2;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, (font::FAMILY, 19))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d((0..slots).into_segmented(), 0.0..y_top)
            .map_err(describe)?;
        let formatter = |value: &SegmentValue<i32>| match *value {
            SegmentValue::CenterOf(slot) if slot % width == label_slot => categories
                .get((slot / width) as usize)
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(slots as usize)
            .x_label_formatter(&formatter)
            .y_desc(&self.y_label)
            .y_label_formatter(&|y| si(*y))
            .label_style((font::FAMILY, 14))
            .draw()
            .map_err(describe)?;
        for (index, series) in self.series.iter().enumerate() {
            let bar = style(index).bar();
            let slot = |x: f64| x as i32 * width + index as i32;
            chart
                .draw_series(series.points.iter().map(|&(x, spread)| {
                    Rectangle::new(
                        [
                            (SegmentValue::Exact(slot(x)), 0.0),
                            (SegmentValue::Exact(slot(x) + 1), spread.median),
                        ],
                        bar,
                    )
                }))
                .map_err(describe)?
                .label(&series.name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], bar));
            chart
                .draw_series(series.points.iter().map(|&(x, spread)| {
                    ErrorBar::new_vertical(
                        SegmentValue::CenterOf(slot(x)),
                        spread.min,
                        spread.median,
                        spread.max,
                        BLACK.stroke_width(1),
                        8,
                    )
                }))
                .map_err(describe)?;
        }
        legend(&mut chart)
    }
}

fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((font::FAMILY, 14))
        .draw()
        .map_err(describe)
}

/// A number with an SI suffix (`12.3M`), for axes and tables.
pub fn si(value: f64) -> String {
    let magnitude = value.abs();
    let (scaled, suffix) = if magnitude >= 1e9 {
        (value / 1e9, "G")
    } else if magnitude >= 1e6 {
        (value / 1e6, "M")
    } else if magnitude >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    if scaled.abs() >= 100.0 || scaled == scaled.trunc() {
        format!("{scaled:.0}{suffix}")
    } else if scaled.abs() >= 10.0 {
        format!("{scaled:.1}{suffix}")
    } else {
        format!("{scaled:.2}{suffix}")
    }
}

fn describe(error: impl std::fmt::Display) -> String {
    format!("drawing failed: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(series: usize, layout: Layout) -> Figure {
        let spread = |v: f64| Spread::of(&[v * 0.9, v, v * 1.1]).unwrap();
        Figure {
            id: format!("many-{series}-{}", matches!(layout, Layout::Bars { .. })),
            title: format!("{series} series"),
            y_label: "value".into(),
            layout,
            series: (0..series)
                .map(|i| Series {
                    name: format!("series {i}"),
                    points: (0..4)
                        .map(|x| (f64::from(1 << x), spread((i + x + 1) as f64)))
                        .collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn charts_with_more_series_than_colours_are_drawn_and_too_many_refused() {
        font::ensure().expect("a font for the charts (scripts/install-deps.sh installs one)");
        let dir = std::env::temp_dir().join(format!("lutra-chart-{}", std::process::id()));
        let lines = || Layout::Lines {
            x_label: "threads".into(),
            log_x: true,
            log_y: false,
        };
        let bars = || Layout::Bars {
            categories: (0..4).map(|c| format!("c{c}")).collect(),
        };
        figure(15, lines()).draw(&dir).unwrap();
        figure(15, bars()).draw(&dir).unwrap();
        let refused = figure(super::super::style::MAX_SERIES + 1, lines()).draw(&dir);
        assert!(refused.unwrap_err().contains("tells at most"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn si_suffixes() {
        assert_eq!(si(1_234_000.0), "1.23M");
        assert_eq!(si(52_000.0), "52k");
        assert_eq!(si(0.5), "0.50");
        assert_eq!(si(3.0), "3");
    }
}
