//! The report of a run: Markdown (charts as linked PNG files, or SVG when published)
//! and a self-contained HTML page (charts as inline SVG). Both open each experiment's
//! section with its verdict (computed from its figures, [`super::verdict`]), then say
//! what it shows, its reference, the machine and the load it carried, and mark a
//! figure whose run saw foreign load above [`super::machine::FOREIGN_LIMIT`] of the
//! cores.

use super::chart::Drawn;
use super::experiment::{Experiment, Findings, Grid};
use super::machine::{FOREIGN_LIMIT, Machine, WindowLoad};
use super::spread::unsigned_zero;
use std::fmt::Write as _;

/// What the report says about the run as a whole.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The machine.
    pub machine: Machine,
    /// `smoke`, `quick` or `full`.
    pub scale: &'static str,
    /// When the run started (UTC).
    pub started: String,
    /// The commit measured, when known.
    pub commit: String,
    /// Seconds the whole run took.
    pub seconds: f64,
    /// The 1-minute load average when the run ended.
    pub load_after: Option<f64>,
}

/// One drawn (or undrawable) figure.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File stem.
    pub id: String,
    /// Caption.
    pub title: String,
    /// The files, or why there are none.
    pub drawn: Result<Drawn, String>,
}

/// One experiment's part of the report.
#[derive(Clone, Debug)]
pub struct Section {
    /// The experiment.
    pub experiment: Experiment,
    /// Its findings (figures already drawn into `charts`).
    pub findings: Findings,
    /// Its charts.
    pub charts: Vec<Chart>,
    /// The load while its jobs ran (`None`: none of its jobs ran).
    pub load: Option<WindowLoad>,
}

impl Section {
    /// The line that opens the section: its verdict, or why there is none.
    pub fn verdict_line(&self) -> String {
        match &self.findings.verdict {
            Some(verdict) => format!("Verdict: {verdict}."),
            None => "Verdict: none: the figures it needs were not measured in this run.".into(),
        }
    }

    fn loaded(&self, cores: usize) -> bool {
        self.load.is_some_and(|load| load.is_loaded(cores))
    }

    fn load_line(&self, cores: usize) -> String {
        let Some(load) = self.load else {
            return "no run".into();
        };
        let fmt = |v: Option<f64>| v.map_or_else(|| "–".into(), |v| format!("{v:.2}"));
        format!(
            "{:.0} s; load average {} at the start, at most {} during; other processes kept \
             {} cores busy on average{}",
            load.elapsed.as_secs_f64(),
            fmt(load.load_start),
            fmt(load.load_max),
            fmt(load.foreign_cores),
            if self.loaded(cores) {
                format!(
                    " — **LOADED**: above {:.0}% of the {cores} cores; read these figures as \
                     taken on a shared machine",
                    FOREIGN_LIMIT * 100.0
                )
            } else {
                String::new()
            }
        )
    }
}

fn machine_lines(info: &RunInfo) -> Vec<String> {
    let m = &info.machine;
    let before = m.load_before.map_or_else(
        || "unknown".into(),
        |[a, b, c]| format!("{a:.2} / {b:.2} / {c:.2} (1 / 5 / 15 min)"),
    );
    vec![
        format!(
            "Run: {} sizes, started {} at commit {}, {:.0} s in all",
            info.scale, info.started, info.commit, info.seconds
        ),
        format!(
            "Machine: {} cores, {}, Linux {}",
            m.cores, m.model, m.kernel
        ),
        format!(
            "Load average before the run: {before}; at the end: {}",
            info.load_after
                .map_or_else(|| "unknown".into(), |v| format!("{v:.2}"))
        ),
        format!(
            "Foreign load: a section is marked LOADED when other processes kept more than {:.0}% \
             of the cores busy while it ran (from /proc/stat minus this run's own processor time).",
            FOREIGN_LIMIT * 100.0
        ),
        "Every point is the median of the rounds, its error bar the minimum and maximum; \
         every round runs all contenders of an experiment one after the other."
            .into(),
    ]
}

/// The Markdown report; charts are linked as `<image_dir><id>.<extension>`.
pub fn markdown(info: &RunInfo, sections: &[Section], image_dir: &str, extension: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Lutra benchmark report ({} run)\n", info.scale);
    if info.scale != "full" {
        let _ = writeln!(
            out,
            "> Made with `--{}`: reduced sizes and few rounds; the figures show the shape, \
             not the final numbers. `make bench` runs the full suite.\n",
            info.scale
        );
    }
    for line in machine_lines(info) {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(out, "\n## Experiments\n");
    for section in sections {
        let _ = writeln!(
            out,
            "- [{}](#{}) — {}{}",
            section.experiment.title,
            section.experiment.id,
            section.experiment.id,
            if section.loaded(info.machine.cores) {
                " (LOADED)"
            } else {
                ""
            }
        );
    }
    for section in sections {
        let e = &section.experiment;
        let _ = writeln!(
            out,
            "\n<a id=\"{}\"></a>\n## {} — {}\n",
            e.id, e.id, e.title
        );
        let _ = writeln!(out, "**{}**\n", section.verdict_line());
        let _ = writeln!(out, "- Paper: {}", e.paper);
        let _ = writeln!(out, "- What it shows: {}", e.shows);
        let _ = writeln!(out, "- Reference: {}", e.reference);
        let _ = writeln!(out, "- Run: {}\n", section.load_line(info.machine.cores));
        for chart in &section.charts {
            match &chart.drawn {
                Ok(_) => {
                    let _ = writeln!(
                        out,
                        "![{}]({image_dir}{}.{extension})\n",
                        chart.title, chart.id
                    );
                }
                Err(why) => {
                    let _ = writeln!(out, "*{}: chart not drawn: {why}*\n", chart.title);
                }
            }
        }
        for grid in &section.findings.grids {
            out.push_str(&grid_markdown(grid));
        }
        if let Some(text) = &section.findings.verbatim {
            let _ = writeln!(out, "```text\n{}\n```\n", unsigned_zero(text));
        }
        for note in &section.findings.notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out
}

fn grid_markdown(grid: &Grid) -> String {
    let mut out = format!("{}:\n\n", grid.caption);
    let escape = |cell: &str| unsigned_zero(cell).replace('|', "\\|");
    let _ = writeln!(
        out,
        "| {} |",
        grid.header
            .iter()
            .map(|h| escape(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(out, "|{}", "---|".repeat(grid.header.len()));
    for row in &grid.rows {
        let _ = writeln!(
            out,
            "| {} |",
            row.iter()
                .map(|c| escape(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    out.push('\n');
    out
}

/// The self-contained HTML page (charts inline as SVG).
pub fn html(info: &RunInfo, sections: &[Section]) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Lutra benchmark report</title><style>\
         body{font-family:sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222}\
         table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;\
         padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}\
         .loaded{background:#fde2e2;padding:.3em .6em;border-left:4px solid #c00}\
         .note{background:#fff6d6;padding:.3em .6em}figure{margin:1em 0}svg{max-width:100%;height:auto}\
         </style></head><body>\n",
    );
    let _ = writeln!(out, "<h1>Lutra benchmark report ({} run)</h1>", info.scale);
    if info.scale != "full" {
        let _ = writeln!(
            out,
            "<p class=\"note\">Made with <code>--{}</code>: reduced sizes and few rounds; the \
             figures show the shape, not the final numbers.</p>",
            info.scale
        );
    }
    out.push_str("<ul>");
    for line in machine_lines(info) {
        let _ = write!(out, "<li>{}</li>", escape(&line));
    }
    out.push_str("</ul>\n<h2>Experiments</h2><ul>");
    for section in sections {
        let _ = write!(
            out,
            "<li><a href=\"#{}\">{}</a>{}</li>",
            section.experiment.id,
            escape(section.experiment.title),
            if section.loaded(info.machine.cores) {
                " (LOADED)"
            } else {
                ""
            }
        );
    }
    out.push_str("</ul>\n");
    for section in sections {
        let e = &section.experiment;
        let _ = writeln!(
            out,
            "<h2 id=\"{}\">{} — {}</h2><ul>",
            e.id,
            e.id,
            escape(e.title)
        );
        let _ = write!(
            out,
            "<li><strong>{}</strong></li>",
            escape(&section.verdict_line())
        );
        let _ = write!(out, "<li>Paper: {}</li>", escape(e.paper));
        let _ = write!(out, "<li>What it shows: {}</li>", escape(e.shows));
        let _ = write!(out, "<li>Reference: {}</li></ul>", escape(e.reference));
        let class = if section.loaded(info.machine.cores) {
            "loaded"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<p class=\"{class}\">Run: {}</p>",
            escape(&section.load_line(info.machine.cores)).replace("**", "")
        );
        for chart in &section.charts {
            match &chart.drawn {
                Ok(drawn) => {
                    let svg = std::fs::read_to_string(&drawn.svg).unwrap_or_default();
                    let svg = svg.find("<svg").map_or("", |start| &svg[start..]);
                    let _ = writeln!(out, "<figure>{svg}</figure>");
                }
                Err(why) => {
                    let _ = writeln!(
                        out,
                        "<p><em>{}: chart not drawn: {}</em></p>",
                        escape(&chart.title),
                        escape(why)
                    );
                }
            }
        }
        for grid in &section.findings.grids {
            let _ = write!(out, "<p>{}:</p><table><tr>", escape(&grid.caption));
            for h in &grid.header {
                let _ = write!(out, "<th>{}</th>", escape(h));
            }
            out.push_str("</tr>");
            for row in &grid.rows {
                out.push_str("<tr>");
                for cell in row {
                    let _ = write!(out, "<td>{}</td>", escape(&unsigned_zero(cell)));
                }
                out.push_str("</tr>");
            }
            out.push_str("</table>\n");
        }
        if let Some(text) = &section.findings.verbatim {
            let _ = writeln!(out, "<pre>{}</pre>", escape(&unsigned_zero(text)));
        }
        if !section.findings.notes.is_empty() {
            out.push_str("<ul>");
            for note in &section.findings.notes {
                let _ = write!(out, "<li>{}</li>", escape(note));
            }
            out.push_str("</ul>\n");
        }
    }
    out.push_str("</body></html>\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('`', "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::suite::experiment::ALL;

    fn info() -> RunInfo {
        RunInfo {
            machine: Machine::probe(),
            scale: "quick",
            started: "now".into(),
            commit: "abc".into(),
            seconds: 1.0,
            load_after: None,
        }
    }

    fn section(verdict: Option<&str>, grid_cell: &str) -> Section {
        Section {
            experiment: ALL[5],
            findings: Findings {
                verdict: verdict.map(str::to_owned),
                grids: vec![Grid {
                    caption: "ratios".into(),
                    header: vec!["system".into(), "1 thread".into()],
                    rows: vec![vec!["lutra".into(), grid_cell.into()]],
                }],
                ..Findings::default()
            },
            charts: Vec::new(),
            load: None,
        }
    }

    #[test]
    fn each_section_opens_with_its_verdict() {
        let sections = [section(
            Some("Lutra 1.90x faster than libitm on bank"),
            "1.0",
        )];
        let markdown = markdown(&info(), &sections, "", "svg");
        let after_heading = markdown
            .split("## engine — ")
            .nth(1)
            .and_then(|rest| rest.lines().nth(2))
            .unwrap();
        assert_eq!(
            after_heading,
            "**Verdict: Lutra 1.90x faster than libitm on bank.**"
        );
        assert!(html(&info(), &sections).contains("<strong>Verdict: Lutra 1.90x faster"));
        let none = markdown_of(section(None, "1.0"));
        assert!(none.contains("**Verdict: none: the figures it needs were not measured"));
    }

    #[test]
    fn no_cell_prints_a_negative_zero() {
        let mut verbatim = section(None, "-0.0 (-0.00–0.1)");
        verbatim.findings.verbatim = Some("read  -0.0  12".into());
        assert!(markdown_of(verbatim.clone()).contains("read  0.0  12"));
        assert!(html(&info(), &[verbatim]).contains("read  0.0  12"));
        let text = markdown_of(section(None, "-0.0 (-0.00–0.1)"));
        assert!(text.contains("| lutra | 0.0 (0.00–0.1) |"), "{text}");
        assert!(!html(&info(), &[section(None, "-0.0")]).contains("-0.0"));
    }

    fn markdown_of(section: Section) -> String {
        markdown(&info(), &[section], "", "svg")
    }
}
