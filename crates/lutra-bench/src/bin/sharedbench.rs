//! `sharedbench`: shared tables whose reads write nothing shared and whose big
//! transactions cost memory in proportion to what they change.
//!
//! Four measurements, printed as a table and written as CSV
//! (`target/bench/sharedbench.csv`):
//! 1. **Lua reads**: `bench/lua/shared_read.lua` (2 processes, each `N` lookups
//!    `t[k]` in one shared table) under `lutra -w1` and `-w2`, as child processes:
//!    elapsed and CPU time (best of `--repeats` by elapsed time). Aim: `-w2` at least
//!    1.8x faster. On a shared machine the elapsed ratio suffers from other load, so
//!    the CPU time is shown too: reads that scale cost the same CPU per lookup on 1
//!    or 2 workers (a contended reference count would make each lookup dearer).
//! 2. **Engine reads**: the same lookups from 1 and 2 threads in this process
//!    (`SharedTable::get`, each its own transaction): elapsed, and each thread's own
//!    CPU time per lookup.
//! 3. **Lua inserts**: `bench/lua/shared_insert.lua`, `N` inserts in one
//!    `lutra.atomic`: resident memory before, at the peak and after the commit.
//! 4. **Engine inserts**: `N` inserts in one transaction in this process, counted by
//!    a counting allocator: peak live bytes against the finished table's bytes. Aim:
//!    under 4x. (Resident memory cannot show the table alone: freed memory stays
//!    resident.)
//!
//! ```text
//! cargo build --release -p lutra-cli -p lutra-bench
//! target/release/sharedbench                 # 1M inserts, 4M lookups per process
//! target/release/sharedbench --quick         # smaller
//! ```

#[path = "luabench/child.rs"]
mod child;

use clap::Parser;
use lutra_bench::harness::csv::{Csv, Fields, optional};
use lutra_bench::harness::table::TextTable;
use lutra_lua::shared::{Key, SharedTable, Stored};
use lutra_stm::Stm;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: lutra_bench::harness::memory::Counting = lutra_bench::harness::memory::Counting;

/// Shared-table reads and big transactions: scaling and memory.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Smaller sizes (1M lookups per process, 200k inserts), one repeat.
    #[arg(long)]
    quick: bool,
    /// Runs of each read configuration; the fastest is kept [default: 3; --quick: 1].
    #[arg(long)]
    repeats: Option<usize>,
    /// The `lutra` program [default: $LUTRA_BIN, else `lutra` beside this binary].
    #[arg(long)]
    lutra: Option<PathBuf>,
    /// Where to write the CSV file.
    #[arg(long, default_value = "target/bench/sharedbench.csv")]
    csv: PathBuf,
}

/// Keys of the table the reads look up.
const READ_KEYS: u64 = 1024;

/// The CSV columns.
const CSV_HEADER: &str = "measurement,variant,wall_s,cpu_s,figure,value,unit";

/// One line of the report.
struct Line {
    measurement: &'static str,
    variant: String,
    wall: Option<f64>,
    cpu: Option<f64>,
    figure: &'static str,
    value: f64,
    unit: &'static str,
}

/// One line per `(figure, value, unit)` of `figures`, all of the same measurement,
/// variant and times.
fn lines_of(
    measurement: &'static str,
    variant: String,
    (wall, cpu): (Option<f64>, Option<f64>),
    figures: &[(&'static str, f64, &'static str)],
) -> Vec<Line> {
    figures
        .iter()
        .map(|&(figure, value, unit)| Line {
            measurement,
            variant: variant.clone(),
            wall,
            cpu,
            figure,
            value,
            unit,
        })
        .collect()
}

impl Line {
    fn csv(&self) -> Fields {
        lutra_bench::fields![
            self.measurement,
            self.variant,
            optional(self.wall, 4),
            optional(self.cpu, 4),
            self.figure,
            format!("{:.4}", self.value),
            self.unit
        ]
    }
}

fn lutra_program(args: &Args) -> Option<PathBuf> {
    args.lutra
        .clone()
        .or_else(|| std::env::var_os("LUTRA_BIN").map(PathBuf::from))
        .or_else(|| Some(std::env::current_exe().ok()?.parent()?.join("lutra")))
        .filter(|path| path.exists())
}

/// Measurement 1: `shared_read.lua` under 1 and 2 workers.
fn lua_reads(lutra: &Path, scripts: &Path, lookups: u64, repeats: usize) -> Vec<Line> {
    let mut best = Vec::new();
    for workers in [1usize, 2] {
        let argv = vec![
            format!("-w{workers}"),
            "shared_read.lua".to_owned(),
            "2".to_owned(),
            lookups.to_string(),
            READ_KEYS.to_string(),
        ];
        let run = (0..repeats)
            .map(|_| {
                let invocation = child::Invocation {
                    program: lutra,
                    args: &argv,
                    env: &[],
                };
                child::run(
                    invocation,
                    scripts,
                    "shared_read: ok",
                    Duration::from_secs(300),
                )
            })
            .filter(|m| {
                if !m.ok {
                    eprintln!("lutra -w{workers} shared_read.lua failed: {}", m.problem);
                }
                m.ok
            })
            .min_by(|a, b| a.wall.total_cmp(&b.wall));
        best.push((workers, run));
    }
    let mut lines = Vec::new();
    for (workers, run) in &best {
        let Some(run) = run else { continue };
        lines.push(Line {
            measurement: "lua_reads",
            variant: format!("lutra -w{workers}, 2 processes"),
            wall: Some(run.wall),
            cpu: Some(run.cpu),
            figure: "cores_busy",
            value: run.cores_busy(),
            unit: "cores",
        });
    }
    if let [(_, Some(one)), (_, Some(two))] = best.as_slice() {
        lines.extend(lines_of(
            "lua_reads",
            "-w2 vs -w1".into(),
            (None, None),
            &[
                ("speedup", one.wall / two.wall, "x (aim >= 1.8)"),
                (
                    "cpu_ratio",
                    two.cpu / one.cpu,
                    "x CPU for the same work (1.0: no contention)",
                ),
            ],
        ));
    }
    lines
}

fn thread_cpu_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the clock id is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// Measurement 2: `lookups` lookups per thread from 1 and 2 threads.
fn engine_reads(lookups: u64) -> Vec<Line> {
    let stm = Stm::default();
    let table = Arc::new(SharedTable::new());
    stm.atomically(|tx| {
        (1..=READ_KEYS as i64).try_for_each(|k| table.set(tx, Key::Integer(k), Stored::Integer(k)))
    });
    let mut lines = Vec::new();
    let mut walls = Vec::new();
    for threads in [1u64, 2] {
        let start = Instant::now();
        let cpus: Vec<f64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (stm, table) = (stm.clone(), table.clone());
                    s.spawn(move || {
                        let cpu = thread_cpu_seconds();
                        let mut sum = 0i64;
                        for i in 0..lookups {
                            let key = Key::Integer((i % READ_KEYS) as i64 + 1);
                            sum += match stm.atomically(|tx| table.get(tx, key.view())) {
                                Stored::Integer(v) => v,
                                other => panic!("a read found {other:?}"),
                            };
                        }
                        let per_round = (READ_KEYS * (READ_KEYS + 1) / 2) as i64;
                        assert_eq!(sum, (lookups / READ_KEYS) as i64 * per_round);
                        thread_cpu_seconds() - cpu
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let wall = start.elapsed().as_secs_f64();
        walls.push(wall);
        let cpu: f64 = cpus.iter().sum();
        lines.push(Line {
            measurement: "engine_reads",
            variant: format!("{threads} thread(s)"),
            wall: Some(wall),
            cpu: Some(cpu),
            figure: "cpu_per_lookup",
            value: cpu / (threads * lookups) as f64 * 1e9,
            unit: "ns",
        });
    }
    lines.push(Line {
        measurement: "engine_reads",
        variant: "2 vs 1 thread(s)".into(),
        wall: None,
        cpu: None,
        figure: "speedup",
        value: 2.0 * walls[0] / walls[1],
        unit: "x throughput",
    });
    lines
}

/// Measurement 3: `shared_insert.lua` with `inserts` keys in one atomic.
fn lua_inserts(lutra: &Path, scripts: &Path, inserts: u64) -> Vec<Line> {
    let started = Instant::now();
    let output = std::process::Command::new(lutra)
        .arg("shared_insert.lua")
        .arg(inserts.to_string())
        .current_dir(scripts)
        .output();
    let wall = started.elapsed().as_secs_f64();
    let text = match output {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => {
            eprintln!(
                "shared_insert.lua failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return Vec::new();
        }
        Err(error) => {
            eprintln!("cannot run {}: {error}", lutra.display());
            return Vec::new();
        }
    };
    let field = |name: &str| -> Option<f64> {
        let at = text.find(&format!("{name}="))? + name.len() + 1;
        text[at..].split_whitespace().next()?.parse().ok()
    };
    let (Some(base), Some(peak), Some(after)) =
        (field("base_kb"), field("peak_kb"), field("final_kb"))
    else {
        eprintln!("shared_insert.lua printed no figures: {text}");
        return Vec::new();
    };
    lines_of(
        "lua_inserts",
        format!("{inserts} in one atomic"),
        (Some(wall), None),
        &[
            ("peak_rss_growth", (peak - base) / 1024.0, "MiB"),
            ("rss_growth_after_commit", (after - base) / 1024.0, "MiB"),
        ],
    )
}

/// Measurement 4: `inserts` inserts in one transaction, counted by the allocator.
fn engine_inserts(inserts: u64) -> Vec<Line> {
    let measured = lutra_bench::harness::memory::insert_peak(inserts as i64);
    let (peak, table_bytes, wall) = (
        measured.peak as f64,
        measured.table as f64,
        measured.seconds,
    );
    lines_of(
        "engine_inserts",
        format!("{inserts} in one transaction"),
        (Some(wall), None),
        &[
            ("peak_live", peak / (1 << 20) as f64, "MiB"),
            ("table_live", table_bytes / (1 << 20) as f64, "MiB"),
            ("table_per_key", table_bytes / inserts as f64, "B"),
            ("peak_vs_table", peak / table_bytes, "x (aim < 4)"),
        ],
    )
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let repeats = args
        .repeats
        .unwrap_or(if args.quick { 1 } else { 3 })
        .max(1);
    let (lookups, inserts) = if args.quick {
        (1_048_576, 200_000)
    } else {
        (4_194_304, 1_000_000)
    };
    let scripts =
        std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/lua"))?;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    println!("sharedbench · {cores} cores · {lookups} lookups per reader · {inserts} inserts\n");
    let mut lines = Vec::new();
    match lutra_program(&args) {
        Some(lutra) => {
            lines.extend(lua_reads(&lutra, &scripts, lookups, repeats));
            lines.extend(lua_inserts(&lutra, &scripts, inserts));
        }
        None => eprintln!(
            "note: no `lutra` found (build it: cargo build --release -p lutra-cli, or give \
             --lutra): the Lua measurements are skipped"
        ),
    }
    lines.extend(engine_reads(lookups));
    lines.extend(engine_inserts(inserts));
    let mut table = TextTable::new(" ")
        .left("measurement", 15)
        .left("variant", 26)
        .right("wall s", 8)
        .right("cpu s", 8)
        .left("figure", 24)
        .right("value", 10)
        .left("unit", 0);
    let opt = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
    for line in &lines {
        table.push(vec![
            line.measurement.to_owned(),
            line.variant.clone(),
            opt(line.wall),
            opt(line.cpu),
            line.figure.to_owned(),
            format!("{:.3}", line.value),
            line.unit.to_owned(),
        ]);
    }
    print!("{}", table.render());
    let mut csv = Csv::with_header(&args.csv, CSV_HEADER)?;
    csv.write_records(lines.iter().map(Line::csv))?;
    eprintln!("CSV written to {}", csv.path().display());
    Ok(())
}
