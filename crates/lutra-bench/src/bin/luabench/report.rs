//! The tables, the aims and the CSV lines of a `luabench` run.
//!
//! | figure | definition |
//! |--------|------------|
//! | `cores` | CPU time ÷ elapsed time (average busy cores) |
//! | `×lua` | elapsed ÷ the group's `lua5.4` baseline (below 1: lutra is faster) |
//! | `×1w` | elapsed ÷ the same lutra run on 1 worker |
//! | `tm/locks` | elapsed under `--sync=tm` ÷ under `--sync=locks`, same workers |
//! | `mod/bin` | the module under `lua5.4` ÷ the `lutra` program, same work and workers (elapsed; the aim also gives CPU) |
//! | `beyond work` | `wake` only: elapsed (and CPU) time of `one` (N receivers on one channel) minus `own` (a channel each), same program, workers and sync: what sharing one wait list costs (on a loaded machine the CPU figure is the steadier) |

use crate::child::Measured;
use crate::plan::{
    EXP2_MESSAGES, EXP2_STRINGS, FIB17, NO_PREEMPT, Runner, Spec, WC_HALVES, exp2_messages,
};
use lutra_bench::harness::csv::{Fields, optional, or_empty};
use lutra_bench::harness::table::TextTable;
use std::fmt::Write as _;

/// One configuration and its best run.
pub(crate) struct Row {
    pub(crate) spec: Spec,
    pub(crate) measured: Measured,
    /// Every run of the configuration, one per round, in order (`measured` is the
    /// best of them).
    pub(crate) rounds: Vec<Measured>,
}

/// The CSV columns.
pub(crate) const CSV_HEADER: &str = "experiment,group,variant,program,workers,sync,wall_s,cpu_s,cores_busy,vs_lua,vs_1_worker,tm_vs_locks,module_vs_binary,ok,problem,beyond_work_s,beyond_work_cpu_s";

const TITLES: [(&str, &str); 10] = [
    (
        "exp1",
        "seed 001 exp. 1 — one long-running process, W workers: time and CPU use",
    ),
    (
        "exp2",
        "seed 001 exp. 2 — 50 senders + 50 receivers, rendezvous channels",
    ),
    (
        "exp3",
        "seed 001 exp. 3 — parallel string search over log files (one searcher per worker)",
    ),
    (
        "fib",
        "seed 002 — fib hub (hub process → worker processes) vs the serial loop",
    ),
    (
        "wc",
        "seed 002 — word count (distinct words per file, max), mapper processes",
    ),
    (
        "micro",
        "seed 000 — While / Iterator loops, P processes (lua5.4 runs them in turn)",
    ),
    (
        "wake",
        "wake-ups that scale — N receivers on one channel then N sends (one) vs a channel each (own)",
    ),
    (
        "weblog",
        "examples/weblog.lua — web-log analyser (lpeg, cjson, luasocket, its own HTTP server)",
    ),
    (
        "prompt",
        "wake-ups beside a CPU-bound process on every worker (figures in seconds)",
    ),
    (
        "blocking",
        "blocking C calls: os.execute(\"sleep 0.5\") ×8; CPU-bound work (figure: iterations/s) beside processes blocked on pipes",
    ),
];

fn wall_of(rows: &[Row], pick: impl Fn(&Spec) -> bool) -> Option<f64> {
    rows.iter()
        .find(|row| row.measured.ok && pick(&row.spec))
        .map(|row| row.measured.wall)
}

fn same_work(a: &Spec, b: &Spec) -> bool {
    a.exp == b.exp && a.group == b.group
}

/// Elapsed ÷ the group's lua5.4 baseline.
pub(crate) fn vs_lua(row: &Row, rows: &[Row]) -> Option<f64> {
    if !row.measured.ok || row.spec.runner == Runner::Lua {
        return None;
    }
    let base = wall_of(rows, |s| same_work(s, &row.spec) && s.runner == Runner::Lua)?;
    Some(row.measured.wall / base)
}

/// Elapsed ÷ the same lutra run on one worker.
pub(crate) fn vs_one_worker(row: &Row, rows: &[Row]) -> Option<f64> {
    let workers = row.spec.workers().filter(|&w| w > 1)?;
    let _ = workers;
    if !row.measured.ok {
        return None;
    }
    let base = wall_of(rows, |s| {
        same_work(s, &row.spec)
            && s.mode == row.spec.mode
            && s.sync() == row.spec.sync()
            && s.workers() == Some(1)
    })?;
    Some(row.measured.wall / base)
}

/// Elapsed under tm ÷ under locks.
pub(crate) fn tm_vs_locks(row: &Row, rows: &[Row]) -> Option<f64> {
    if row.spec.sync() != Some("tm") || !row.measured.ok {
        return None;
    }
    let base = wall_of(rows, |s| {
        same_work(s, &row.spec)
            && s.mode == row.spec.mode
            && s.workers() == row.spec.workers()
            && s.sync() == Some("locks")
    })?;
    Some(row.measured.wall / base)
}

/// The `lutra` program's run that a module run is compared with.
fn binary_twin<'a>(row: &Row, rows: &'a [Row]) -> Option<&'a Row> {
    let workers = row.spec.module_workers()?;
    rows.iter().find(|other| {
        other.measured.ok
            && same_work(&other.spec, &row.spec)
            && other.spec.mode == row.spec.mode
            && other.spec.workers() == Some(workers)
            && matches!(other.spec.sync(), None | Some("locks"))
    })
}

/// The module's elapsed (or CPU) time ÷ the `lutra` program's, same work and workers.
pub(crate) fn module_vs_binary(row: &Row, rows: &[Row], cpu: bool) -> Option<f64> {
    if !row.measured.ok {
        return None;
    }
    let twin = &binary_twin(row, rows)?.measured;
    Some(if cpu {
        row.measured.cpu / twin.cpu
    } else {
        row.measured.wall / twin.wall
    })
}

/// `wake`: elapsed and CPU seconds of a `one` run minus those of the `own` run of
/// the same N, program, workers and sync (the time beyond the work).
pub(crate) fn beyond_work(row: &Row, rows: &[Row]) -> Option<(f64, f64)> {
    if row.spec.exp != "wake" || row.spec.mode != "one" || !row.measured.ok {
        return None;
    }
    let base = rows.iter().find(|base| {
        let s = &base.spec;
        base.measured.ok
            && same_work(s, &row.spec)
            && s.mode == "own"
            && s.workers() == row.spec.workers()
            && s.sync() == row.spec.sync()
    })?;
    Some((
        row.measured.wall - base.measured.wall,
        row.measured.cpu - base.measured.cpu,
    ))
}

fn cell(value: Option<f64>) -> String {
    value.map_or(String::new(), |v| format!("{v:.2}"))
}

/// One table per experiment that has rows.
pub(crate) fn tables(rows: &[Row]) -> String {
    let mut out = String::new();
    for (exp, title) in TITLES {
        let mine: Vec<&Row> = rows.iter().filter(|row| row.spec.exp == exp).collect();
        if mine.is_empty() {
            continue;
        }
        let _ = writeln!(out, "== {title}");
        let mut table = TextTable::new("")
            .left("work", 16)
            .left("variant", 27)
            .right("wall s", 9)
            .right("cpu s", 9)
            .right("cores", 7)
            .right("×lua", 8)
            .right("×1w", 7)
            .right("tm/locks", 10)
            .right("mod/bin", 9);
        for row in mine {
            let m = &row.measured;
            let cells = vec![
                row.spec.group.to_string(),
                row.spec.variant(),
                format!("{:.3}", m.wall),
                format!("{:.3}", m.cpu),
                format!("{:.2}", m.cores_busy()),
                cell(vs_lua(row, rows)),
                cell(vs_one_worker(row, rows)),
                cell(tm_vs_locks(row, rows)),
                cell(module_vs_binary(row, rows, false)),
            ];
            let mut tail = String::new();
            if let Some((wall, cpu)) = beyond_work(row, rows) {
                let _ = write!(tail, "  beyond the work: {wall:+.3} s ({cpu:+.3} s CPU)");
            }
            tail.push_str(&crate::figures::cell(row));
            if !m.ok {
                let _ = write!(tail, "  FAILED: {}", m.problem);
            }
            table.push_with_tail(cells, tail);
        }
        table.write(&mut out);
        out.push('\n');
    }
    out
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// [`verdict`] for an aim about two workers' speed-up, which a machine with fewer
/// than 2 cores cannot measure.
fn two_core_verdict(cores: usize, met: bool) -> &'static str {
    if cores < 2 {
        "not measurable (fewer than 2 cores)"
    } else {
        verdict(met)
    }
}

/// The issue's aims, each with the figures behind it.
pub(crate) fn aims(rows: &[Row], cores: usize) -> String {
    let mut out = String::from("== aims\n");
    // 1. Experiment 2: more workers at most 1.3× the one-worker time.
    let exp2: Vec<(String, f64)> = rows
        .iter()
        .filter(|row| row.spec.exp == "exp2")
        .filter_map(|row| {
            vs_one_worker(row, rows)
                .map(|r| (format!("{} {}", row.spec.group, row.spec.variant()), r))
        })
        .collect();
    if let Some((worst_label, worst)) = exp2.iter().cloned().max_by(|a, b| a.1.total_cmp(&b.1)) {
        let _ = writeln!(
            out,
            "exp2: N workers ÷ 1 worker ≤ 1.3: {} (worst {worst:.2}, {worst_label})",
            verdict(worst <= 1.3)
        );
    }
    // 2. tm at most 1.25× locks, idle workers using no CPU.
    let ratios: Vec<(String, f64)> = rows
        .iter()
        .filter_map(|row| tm_vs_locks(row, rows).map(|r| (row.spec.label(), r)))
        .collect();
    match ratios.iter().cloned().max_by(|a, b| a.1.total_cmp(&b.1)) {
        Some((label, worst)) => {
            let _ = writeln!(
                out,
                "tm ÷ locks ≤ 1.25: {} (worst {worst:.2}, {label})",
                verdict(worst <= 1.25)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "tm ÷ locks ≤ 1.25: not measured (lutra has no --sync=locks|tm)"
            );
        }
    }
    let idle: Vec<&Row> = rows
        .iter()
        .filter(|row| row.spec.exp == "exp1" && row.spec.workers().is_some() && row.measured.ok)
        .collect();
    if let Some(worst) = idle
        .iter()
        .max_by(|a, b| a.measured.cores_busy().total_cmp(&b.measured.cores_busy()))
    {
        let busy = worst.measured.cores_busy();
        let _ = writeln!(
            out,
            "exp1: idle workers use no CPU (≤ 1.15 cores busy for one process): {} (worst {busy:.2} cores, {})",
            verdict(busy <= 1.15),
            worst.spec.variant()
        );
    }
    exp1_speed(&mut out, rows);
    crate::figures::aims(&mut out, rows);
    exp2_times(&mut out, rows, cores);
    exp2_vs_luaproc(&mut out, rows);
    // 3. Fib hub: at least 1.8× the single-core run on 2 cores; the
    // request-heavy configuration at least 1.85× lua5.4's serial loop.
    let seed_fib = |s: &Spec| s.exp == "fib" && !s.group.starts_with(FIB17);
    let fib = |workers: usize, mode: &str| {
        wall_of(rows, |s| {
            seed_fib(s) && s.mode == mode && s.workers() == Some(workers)
        })
    };
    let lua_serial = wall_of(rows, |s| seed_fib(s) && s.runner == Runner::Lua);
    let fib17 = |s: &Spec| s.exp == "fib" && s.group.starts_with(FIB17);
    let hub17 = rows
        .iter()
        .find(|row| row.measured.ok && fib17(&row.spec) && row.spec.runner != Runner::Lua);
    if let (Some(hub), Some(lua)) = (
        hub17,
        wall_of(rows, |s| fib17(s) && s.runner == Runner::Lua),
    ) {
        let speedup = lua / hub.measured.wall;
        let _ = writeln!(
            out,
            "fib hub {}, 2 workers ≥ 1.85× lua5.4's serial loop: {} ({speedup:.2}×)",
            hub.spec.group,
            two_core_verdict(cores, speedup >= 1.85)
        );
    }
    if let (Some(one), Some(two)) = (fib(1, "hub"), fib(2, "hub")) {
        let speedup = one / two;
        let _ = write!(
            out,
            "fib hub: lutra -w2 ≥ 1.8× lutra -w1: {} ({speedup:.2}×",
            two_core_verdict(cores, speedup >= 1.8)
        );
        if let Some(serial) = fib(1, "serial") {
            let _ = write!(out, "; {:.2}× lutra's serial loop", serial / two);
        }
        if let Some(lua) = lua_serial {
            let _ = write!(out, "; {:.2}× lua5.4's serial loop", lua / two);
        }
        out.push_str(")\n");
    }
    // Word count: 2 workers at least 1.8× lua5.4's serial loop, beside what two
    // lua5.4 processes on half the files each reach at once (the machine's ceiling
    // for this work, which a loaded or badly placed pair of CPUs lowers).
    let wc = |pick: &dyn Fn(&Spec) -> bool| wall_of(rows, |s| s.exp == "wc" && pick(s));
    if let (Some(lua), Some(two)) = (
        wc(&|s| s.runner == Runner::Lua),
        wc(&|s| s.workers() == Some(2)),
    ) {
        let speedup = lua / two;
        let _ = write!(
            out,
            "wc: lutra -w2 ≥ 1.8× lua5.4's serial loop: {} ({speedup:.2}×",
            two_core_verdict(cores, speedup >= 1.8)
        );
        if let Some(pair) = wc(&|s| s.mode == WC_HALVES) {
            let _ = write!(
                out,
                "; the machine's ceiling, two lua5.4 on half the files each at once: {:.2}×",
                lua / pair
            );
        }
        out.push_str(")\n");
    }
    // 4. The module within 5% of the `lutra` program.
    let module: Vec<(String, f64, f64)> = rows
        .iter()
        .filter_map(|row| {
            let wall = module_vs_binary(row, rows, false)?;
            let cpu = module_vs_binary(row, rows, true)?;
            Some((row.spec.label(), wall, cpu))
        })
        .collect();
    if let Some((label, wall, cpu)) = module.iter().cloned().max_by(|a, b| a.1.total_cmp(&b.1)) {
        let _ = writeln!(
            out,
            "module ÷ lutra program ≤ 1.05: {} (worst elapsed {wall:.2}, its CPU {cpu:.2}, {label}; \
             {} runs compared)",
            verdict(wall <= 1.05),
            module.len()
        );
    }
    // 5. Wake-ups: at most 1 s beyond the work for 5,000 receivers, growing linearly.
    let wake: Vec<(String, usize, (f64, f64))> = rows
        .iter()
        .filter(|row| row.spec.workers().is_some())
        .filter_map(|row| {
            let n = row.spec.group.strip_prefix("N=")?.parse().ok()?;
            Some((row.spec.variant(), n, beyond_work(row, rows)?))
        })
        .collect();
    for (variant, n, (wall, cpu)) in &wake {
        let _ = write!(
            out,
            "wake: {variant} N={n}: {wall:.3} s beyond the work, {cpu:.3} s CPU ({:.1} µs per receiver)",
            wall / *n as f64 * 1e6
        );
        if *n >= 5_000 {
            let _ = write!(out, "; ≤ 1 s at N=5000: {}", verdict(*wall <= 1.0));
        }
        out.push('\n');
    }
    // 6. The example program: faster on 2 workers than in one lua5.4 process.
    let weblog_lua = wall_of(rows, |s| s.exp == "weblog" && s.runner == Runner::Lua);
    let weblog_w2 = wall_of(rows, |s| s.exp == "weblog" && s.workers() == Some(2));
    if let (Some(lua), Some(w2)) = (weblog_lua, weblog_w2) {
        let _ = writeln!(
            out,
            "weblog: lutra -w2 is {:.2}× as fast as one lua5.4 ({w2:.3} s vs {lua:.3} s); > 1: {}",
            lua / w2,
            two_core_verdict(cores, lua / w2 > 1.0)
        );
    }
    let failed = rows.iter().filter(|row| !row.measured.ok).count();
    if failed > 0 {
        let _ = writeln!(out, "{failed} runs FAILED (see the tables)");
    }
    out
}

/// Experiment 1's aim: the CPU-bound loop on one worker at 0.95× lua5.4's speed or
/// better with preemption on (the worst sync variant); beside it, the same run with
/// preemption off and the module's (lua5.4's own interpreter under Lutra's runtime),
/// which tell the preemption's cost from the interpreter's.
fn exp1_speed(out: &mut String, rows: &[Row]) {
    let slowest = |pick: &dyn Fn(&Spec) -> bool| {
        rows.iter()
            .filter(|row| row.spec.exp == "exp1" && pick(&row.spec))
            .filter_map(|row| Some((row.spec.variant(), 1.0 / vs_lua(row, rows)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let Some((label, speed)) = slowest(&|s| s.workers() == Some(1) && s.mode.is_empty()) else {
        return;
    };
    let _ = write!(
        out,
        "exp1: lutra -w1 ≥ 0.95× lua5.4's speed, preemption on: {} ({speed:.2}×, {label}",
        verdict(speed >= 0.95)
    );
    if let Some((_, off)) = slowest(&|s| s.mode == NO_PREEMPT) {
        let _ = write!(out, "; preemption off: {off:.2}×");
    }
    if let Some((_, module)) = slowest(&|s| s.module_workers() == Some(1)) {
        let _ = write!(
            out,
            "; lua5.4's interpreter under Lutra, the module: {module:.2}×"
        );
    }
    out.push_str(")\n");
}

/// Experiment 2's aims on time: 500,000 messages in at most 0.20 s on one worker and
/// 0.25 s on two, through both APIs in both sync modes (the slowest run of each
/// counts). A `--quick` run carries fewer messages, and its fixed costs (starting
/// 100 processes) weigh more: its figure is printed, not judged.
fn exp2_times(out: &mut String, rows: &[Row], cores: usize) {
    for (workers, limit) in [(1, 0.20), (2, 0.25)] {
        let slowest = rows
            .iter()
            .filter(|row| row.measured.ok && row.spec.workers() == Some(workers))
            .filter_map(|row| Some((row, exp2_messages(&row.spec)?)))
            .max_by(|a, b| a.0.measured.wall.total_cmp(&b.0.measured.wall));
        let Some((row, messages)) = slowest else {
            continue;
        };
        let wall = row.measured.wall;
        let verdict = if messages != EXP2_MESSAGES {
            "not judged at this size"
        } else if workers == 1 {
            verdict(wall <= limit)
        } else {
            two_core_verdict(cores, wall <= limit)
        };
        let _ = writeln!(
            out,
            "exp2: 500,000 messages in ≤ {limit:.2} s on {workers} worker(s), both APIs and sync \
             modes: {verdict} (slowest {wall:.3} s for {messages} messages, {})",
            row.spec.label()
        );
    }
}

/// Experiment 2's aim beside the original luaproc: with the paper's payload (the
/// string "message", one channel), every one-worker `lutra` run (both APIs and sync
/// modes; the slowest counts) in at most 0.8× the original luaproc's time. Without
/// the original luaproc (`LUAPROC_SRC` unset or its build failed) the aim is the
/// instructions per message, which callgrind counts (docs/performance.md).
fn exp2_vs_luaproc(out: &mut String, rows: &[Row]) {
    let aim = "exp2 strings: time ≤ 0.80× the original luaproc's on 1 worker, both APIs and \
               sync modes";
    let strings = |row: &&Row| row.spec.exp == "exp2" && row.spec.group == EXP2_STRINGS;
    let Some(luaproc) = rows
        .iter()
        .filter(strings)
        .find(|row| row.spec.runner == Runner::Luaproc && row.measured.ok)
    else {
        let _ = writeln!(
            out,
            "{aim}: not measured (set LUAPROC_SRC to luaproc's sources; the figure is then \
             the instructions per message, counted with callgrind)"
        );
        return;
    };
    let slowest = rows
        .iter()
        .filter(strings)
        .filter(|row| row.measured.ok && row.spec.workers() == Some(1))
        .max_by(|a, b| a.measured.wall.total_cmp(&b.measured.wall));
    let Some(slowest) = slowest else {
        return;
    };
    let ratio = slowest.measured.wall / luaproc.measured.wall;
    let verdict = match exp2_messages(&luaproc.spec) {
        Some(EXP2_MESSAGES) => verdict(ratio <= 0.8),
        _ => "not judged at this size",
    };
    let _ = writeln!(
        out,
        "{aim}: {verdict} (slowest {:.3} s ÷ luaproc's {:.3} s = {ratio:.2}, {})",
        slowest.measured.wall,
        luaproc.measured.wall,
        slowest.spec.variant()
    );
}

/// One CSV record (see [`CSV_HEADER`]).
pub(crate) fn csv_record(row: &Row, rows: &[Row]) -> Fields {
    let spec = &row.spec;
    let m = &row.measured;
    let program = match spec.runner {
        Runner::Lua | Runner::LuaOther => "lua5.4",
        Runner::Lutra { .. } => "lutra",
        Runner::Module { .. } => "lua5.4+module",
        Runner::Luaproc => "lua5.4+luaproc",
    };
    let opt = |v: Option<f64>| optional(v, 4);
    lutra_bench::fields![
        spec.exp,
        spec.group,
        spec.variant(),
        program,
        or_empty(spec.workers().or(spec.module_workers())),
        spec.sync().unwrap_or(""),
        format!("{:.4}", m.wall),
        format!("{:.4}", m.cpu),
        format!("{:.3}", m.cores_busy()),
        opt(vs_lua(row, rows)),
        opt(vs_one_worker(row, rows)),
        opt(tm_vs_locks(row, rows)),
        opt(module_vs_binary(row, rows, false)),
        m.ok,
        m.problem,
        opt(beyond_work(row, rows).map(|(wall, _)| wall)),
        opt(beyond_work(row, rows).map(|(_, cpu)| cpu)),
    ]
}

#[cfg(test)]
mod tests {
    use super::{Row, aims};
    use crate::child::Measured;
    use crate::plan::{EXP2_STRINGS, NO_PREEMPT, Runner, Spec};
    use std::path::PathBuf;

    fn row(exp: &'static str, mode: &'static str, runner: Runner, argv: &[&str], wall: f64) -> Row {
        Row {
            spec: Spec {
                exp,
                group: "G".into(),
                mode,
                runner,
                program: PathBuf::from("p"),
                argv: argv.iter().map(|arg| (*arg).to_owned()).collect(),
                expect: "ok",
                env: Vec::new(),
            },
            measured: Measured {
                wall,
                cpu: wall,
                ok: true,
                problem: String::new(),
                figures: Vec::new(),
            },
            rounds: Vec::new(),
        }
    }

    fn lutra(workers: usize, sync: Option<&'static str>) -> Runner {
        Runner::Lutra { workers, sync }
    }

    #[test]
    fn the_loop_aim_is_the_slowest_one_worker_run_with_preemption_on() {
        let rows = [
            row("exp1", "", Runner::Lua, &[], 1.00),
            row("exp1", "", lutra(1, Some("locks")), &[], 1.04),
            row("exp1", "", lutra(1, Some("tm")), &[], 1.06),
            row("exp1", "", lutra(2, Some("locks")), &[], 1.20),
            row("exp1", NO_PREEMPT, lutra(1, Some("locks")), &[], 1.02),
            row("exp1", "", Runner::Module { workers: 1 }, &[], 1.01),
        ];
        let text = aims(&rows, 2);
        assert!(
            text.contains(
                "exp1: lutra -w1 ≥ 0.95× lua5.4's speed, preemption on: MISSED (0.94×, \
                 lutra -w1 tm; preemption off: 0.98×; lua5.4's interpreter under Lutra, \
                 the module: 0.99×)"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_message_time_aims_take_the_slowest_run_of_the_issues_size() {
        let (locks, tm) = (lutra(1, Some("locks")), lutra(1, Some("tm")));
        let rows = [
            row(
                "exp2",
                "",
                locks,
                &["-w1", "channels.lua", "1", "10000", "50"],
                0.18,
            ),
            row(
                "exp2",
                "luaproc",
                tm,
                &["-w1", "luaproc_channels.lua", "1", "10000", "50"],
                0.21,
            ),
            row(
                "exp2",
                "",
                lutra(2, Some("tm")),
                &["-w2", "channels.lua", "1", "2000", "50"],
                0.06,
            ),
        ];
        let text = aims(&rows, 2);
        assert!(
            text.contains(
                "exp2: 500,000 messages in ≤ 0.20 s on 1 worker(s), both APIs and sync modes: \
                 MISSED (slowest 0.210 s for 500000 messages, exp2 G · lutra -w1 tm luaproc)"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "exp2: 500,000 messages in ≤ 0.25 s on 2 worker(s), both APIs and sync modes: \
                 not judged at this size (slowest 0.060 s for 100000 messages, exp2 G · lutra \
                 -w2 tm)"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_string_message_aim_takes_the_slowest_one_worker_run_against_luaproc() {
        let strings = |runner: Runner, script: &str, wall: f64| {
            let argv = ["-w1", script, "1", "10000", "50", "string"];
            let mut row = row("exp2", "", runner, &argv, wall);
            row.spec.group = EXP2_STRINGS.into();
            row
        };
        let luaproc = strings(Runner::Luaproc, "luaproc_channels.lua", 0.30);
        let mut rows = vec![
            strings(lutra(1, Some("locks")), "channels.lua", 0.22),
            strings(lutra(1, Some("tm")), "luaproc_channels.lua", 0.25),
            strings(lutra(2, Some("tm")), "channels.lua", 0.40),
        ];
        let text = aims(&rows, 2);
        assert!(
            text.contains(
                "exp2 strings: time ≤ 0.80× the original luaproc's on 1 worker, both \
                 APIs and sync modes: not measured (set LUAPROC_SRC"
            ),
            "{text}"
        );
        rows.push(luaproc);
        let text = aims(&rows, 2);
        assert!(
            text.contains(
                "exp2 strings: time ≤ 0.80× the original luaproc's on 1 worker, both APIs and \
                 sync modes: MISSED (slowest 0.250 s ÷ luaproc's 0.300 s = 0.83, lutra -w1 tm)"
            ),
            "{text}"
        );
        rows[1].measured.wall = 0.21;
        assert!(aims(&rows, 2).contains("sync modes: met (slowest 0.220 s"));
    }
}
