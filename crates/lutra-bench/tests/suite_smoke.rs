//! `lutra-bench --smoke` end to end: the suite runs the benchmark binaries at tiny
//! sizes and produces a report (Markdown and HTML) that lists every experiment, and
//! non-empty charts (SVG and PNG) for the experiments that ran. The Lua, Ruby
//! and C runs are skipped by `--smoke` (the report must say so); `--quick` runs
//! them (CI: `make bench-quick`).

use lutra_bench::harness::suite::experiment::ALL;
use std::path::Path;
use std::process::Command;

fn non_empty(path: &Path) -> u64 {
    let size = std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .len();
    assert!(size > 0, "{} is empty", path.display());
    size
}

#[test]
fn smoke_run_writes_a_report_listing_every_experiment_and_its_charts() {
    let out = std::env::temp_dir().join(format!("lutra-bench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let status = Command::new(env!("CARGO_BIN_EXE_lutra-bench"))
        .arg("--smoke")
        .arg("--out")
        .arg(&out)
        .status()
        .expect("lutra-bench runs");
    assert!(
        status.success(),
        "lutra-bench --smoke failed ({status}); if no chart could be drawn, install \
         fonts-dejavu-core or set LUTRA_BENCH_FONT"
    );
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for experiment in ALL {
        let heading = format!("## {} — {}", experiment.id, experiment.title);
        assert!(markdown.contains(&heading), "report.md lacks {heading:?}");
        assert!(
            html.contains(&format!("id=\"{}\"", experiment.id)),
            "report.html lacks {}",
            experiment.id
        );
    }
    assert!(markdown.contains("skipped by --smoke"), "{markdown}");
    assert!(markdown.contains("Machine: "), "{markdown}");
    for id in [
        "seed000-while",
        "seed000-iterator",
        "seed000-conflict",
        "seed003-inversion",
        "seed003-coop",
        "seed003-pipeline",
        "seed004-bank",
        "seed004-pipeline-aborts",
    ] {
        let png = out.join("charts").join(format!("{id}.png"));
        let svg = out.join("charts").join(format!("{id}.svg"));
        non_empty(&png);
        non_empty(&svg);
        let head = std::fs::read(&png).unwrap();
        assert!(
            head.starts_with(b"\x89PNG"),
            "{} is not a PNG",
            png.display()
        );
        assert!(
            markdown.contains(&format!("(charts/{id}.png)")),
            "report.md does not show {id}"
        );
        assert!(
            std::fs::read_to_string(&svg).unwrap().contains("<svg"),
            "{} is not an SVG",
            svg.display()
        );
    }
    assert!(
        html.matches("<svg").count() >= 7,
        "the HTML embeds the charts"
    );
    std::fs::remove_dir_all(&out).unwrap();
}
