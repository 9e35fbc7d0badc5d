//! Which runs an invocation makes: each experiment's configurations, sizes for the
//! full and the `--quick` run, and the program and arguments of each run.
//!
//! A run belongs to a *group* (the work: "C=2", "F=4", "P=2"…); within a group the
//! baseline is the `lua5.4` run, and `lutra` runs differ by workers and sync variant.

use crate::{Args, Programs, data};
use std::io;
use std::path::{Path, PathBuf};

/// Experiment names, as `--only` takes them.
pub(crate) const EXPERIMENTS: [&str; 10] = [
    "exp1", "exp2", "exp3", "fib", "wc", "micro", "wake", "weblog", "prompt", "blocking",
];

/// Who runs the script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Runner {
    /// Stock Lua on one core (the shim's coroutines), the baseline of its group.
    Lua,
    /// Stock Lua, another way of doing the work (not the baseline).
    LuaOther,
    /// `lutra -w workers [--sync=…]`.
    Lutra {
        workers: usize,
        sync: Option<&'static str>,
    },
    /// Stock `lua5.4` loading the `lutra` module (`lutra = require "lutra"`), with
    /// `LUTRA_WORKERS=workers`: the same script as the `lutra` runs.
    Module { workers: usize },
    /// Stock `lua5.4` loading the original luaproc (built from `LUAPROC_SRC`, one
    /// worker, its default): the luaproc-API script as the `lutra` runs take it.
    Luaproc,
}

/// One configuration to measure.
#[derive(Clone, Debug)]
pub(crate) struct Spec {
    /// Experiment name (see [`EXPERIMENTS`]).
    pub(crate) exp: &'static str,
    /// The work within the experiment ("C=2", "F=4", …).
    pub(crate) group: String,
    /// A note on the variant ("serial", "hub"…), empty for most.
    pub(crate) mode: &'static str,
    pub(crate) runner: Runner,
    pub(crate) program: PathBuf,
    /// Arguments: options, the script, its arguments.
    pub(crate) argv: Vec<String>,
    /// What standard output must contain.
    pub(crate) expect: &'static str,
    /// Environment variables of the run (the module's options and search path).
    pub(crate) env: Vec<(String, String)>,
}

impl Spec {
    /// `lua5.4`, `lutra -w2`, `lutra -w2 tm`, plus the mode.
    pub(crate) fn variant(&self) -> String {
        let base = match &self.runner {
            Runner::Lua | Runner::LuaOther => "lua5.4".to_string(),
            Runner::Lutra { workers, sync } => match sync {
                Some(sync) => format!("lutra -w{workers} {sync}"),
                None => format!("lutra -w{workers}"),
            },
            Runner::Module { workers } => format!("module -w{workers}"),
            Runner::Luaproc => ORIGINAL_LUAPROC.to_string(),
        };
        if self.mode.is_empty() {
            base
        } else {
            format!("{base} {}", self.mode)
        }
    }

    /// For the progress line.
    pub(crate) fn label(&self) -> String {
        format!("{} {} · {}", self.exp, self.group, self.variant())
    }

    pub(crate) fn workers(&self) -> Option<usize> {
        match self.runner {
            Runner::Lutra { workers, .. } => Some(workers),
            _ => None,
        }
    }

    /// The workers of a module run (`None` for the others).
    pub(crate) fn module_workers(&self) -> Option<usize> {
        match self.runner {
            Runner::Module { workers } => Some(workers),
            _ => None,
        }
    }

    pub(crate) fn sync(&self) -> Option<&'static str> {
        match self.runner {
            Runner::Lutra { sync, .. } => sync,
            _ => None,
        }
    }
}

/// Sizes of one invocation.
struct Sizes {
    long_iterations: u64,
    exp1_workers: Vec<usize>,
    messages: u64,
    exp2_workers: Vec<usize>,
    exp2_channels: Vec<usize>,
    log_lines: usize,
    exp3_files: Vec<usize>,
    exp3_workers: Vec<usize>,
    fib_n: u32,
    fib_requests: u32,
    /// The fib hub's aim: fib(17) requests, as many as this, 2 hub workers on 2
    /// workers, against lua5.4's serial loop.
    fib17_requests: u32,
    docs: usize,
    doc_words: usize,
    micro_procs: Vec<usize>,
    while_n: u64,
    iterator_n: u64,
    /// Receivers waiting on one channel.
    wake_n: Vec<usize>,
    /// examples/weblog.lua's logs and lines per log.
    weblog: (usize, usize),
    /// Sleeps (or host round trips) measured per `prompt` run.
    prompt_n: u32,
    /// Loop iterations of each CPU-bound process of `blocking`'s pipe runs.
    pipe_work: u64,
}

/// The mode of word count's ceiling run: two `lua5.4` processes at once, each on
/// half of the files.
pub(crate) const WC_HALVES: &str = "2 halves at once";

/// The mode of experiment 1's run with preemption off (`--preempt 0`).
pub(crate) const NO_PREEMPT: &str = "preempt 0";

/// Experiment 2's full size is 500,000 messages (50 senders of 10,000 each).
pub(crate) const EXP2_MESSAGES: u64 = 500_000;

/// The messages an experiment 2 run carries: senders × messages each, as its
/// script arguments (`C messages pairs`, after the script) give them.
pub(crate) fn exp2_messages(spec: &Spec) -> Option<u64> {
    if spec.exp != "exp2" {
        return None;
    }
    let at = spec
        .argv
        .iter()
        .position(|arg| arg.ends_with("channels.lua"))?;
    let count = |offset: usize| spec.argv.get(at + offset)?.parse::<u64>().ok();
    Some(count(2)? * count(3)?)
}

/// The variant of the original luaproc's runs.
pub(crate) const ORIGINAL_LUAPROC: &str = "original luaproc";

/// Experiment 2's group with the paper's payload, the string "message".
pub(crate) const EXP2_STRINGS: &str = "C=1 strings";

/// The group name's start of the fib hub's request-heavy configuration (`fib(17)x20000`).
pub(crate) const FIB17: &str = "fib(17)x";

impl Sizes {
    fn new(quick: bool, cores: usize) -> Self {
        let mut workers_to_4: Vec<usize> = vec![1, 2, 4];
        if !workers_to_4.contains(&cores) {
            workers_to_4.push(cores);
            workers_to_4.sort_unstable();
        }
        if quick {
            Self {
                long_iterations: 40_000_000,
                exp1_workers: workers_to_4.clone(),
                messages: 2_000,
                exp2_workers: vec![1, 2, 8],
                exp2_channels: vec![1, 4],
                log_lines: 100_000,
                exp3_files: vec![1, 4],
                exp3_workers: vec![1, 2],
                fib_n: 20,
                fib_requests: 400,
                fib17_requests: 2_000,
                docs: 32,
                doc_words: 10_000,
                micro_procs: vec![1, 2],
                while_n: 20_000_000,
                iterator_n: 5_000_000,
                wake_n: vec![1_000],
                weblog: (8, 4_000),
                prompt_n: 40,
                pipe_work: 100_000_000,
            }
        } else {
            let mut exp1_workers = workers_to_4.clone();
            exp1_workers.push(8);
            Self {
                long_iterations: 150_000_000,
                exp1_workers,
                messages: 10_000,
                exp2_workers: vec![1, 2, 4, 8],
                exp2_channels: vec![1, 2, 4],
                log_lines: 300_000,
                exp3_files: vec![1, 2, 4],
                exp3_workers: workers_to_4,
                fib_n: 22,
                fib_requests: 1_000,
                fib17_requests: 20_000,
                docs: 64,
                doc_words: 30_000,
                micro_procs: vec![1, 2, 4],
                while_n: 60_000_000,
                iterator_n: 15_000_000,
                wake_n: vec![1_000, 5_000],
                weblog: (8, 25_000),
                prompt_n: 100,
                pipe_work: 200_000_000,
            }
        }
    }
}

struct Builder<'a> {
    programs: &'a Programs,
    lutra_args: &'a [String],
    specs: Vec<Spec>,
}

impl Builder<'_> {
    fn syncs(&self) -> Vec<Option<&'static str>> {
        if self.programs.has_sync {
            vec![Some("locks"), Some("tm")]
        } else {
            vec![None]
        }
    }

    fn lua(
        &mut self,
        exp: &'static str,
        group: &str,
        mode: &'static str,
        baseline: bool,
        script: Vec<String>,
    ) {
        let Some(lua) = &self.programs.lua else {
            return;
        };
        self.specs.push(Spec {
            exp,
            group: group.to_owned(),
            mode,
            runner: if baseline {
                Runner::Lua
            } else {
                Runner::LuaOther
            },
            program: lua.clone(),
            argv: script,
            expect: expect_of(exp),
            env: Vec::new(),
        });
    }

    fn lutra(
        &mut self,
        exp: &'static str,
        group: &str,
        mode: &'static str,
        workers: usize,
        sync: Option<&'static str>,
        script: Vec<String>,
    ) {
        let mut argv = vec![format!("-w{workers}")];
        if let Some(sync) = sync {
            argv.push(format!("--sync={sync}"));
        }
        argv.extend(self.lutra_args.iter().cloned());
        argv.extend(script);
        self.specs.push(Spec {
            exp,
            group: group.to_owned(),
            mode,
            runner: Runner::Lutra { workers, sync },
            program: self.programs.lutra.clone(),
            argv,
            expect: expect_of(exp),
            env: Vec::new(),
        });
    }

    /// Gives the `lutra` run planned last more of `lutra`'s `options` (after its
    /// `-w`).
    fn with_options(&mut self, options: &[&str]) {
        if let Some(spec) = self.specs.last_mut() {
            let options = options.iter().map(|option| (*option).to_owned());
            spec.argv.splice(1..1, options);
        }
    }

    /// Two `lua5.4` processes at once, running `first` and `second` (the work of a
    /// group split in two): the machine's ceiling for two cores on that work, with
    /// nothing shared between them. Run through `sh`, which waits for both and fails
    /// if either does.
    fn lua_pair(
        &mut self,
        exp: &'static str,
        group: &str,
        mode: &'static str,
        first: Vec<String>,
        second: Vec<String>,
    ) {
        let Some(lua) = &self.programs.lua else {
            return;
        };
        let quoted = |argv: &[String]| {
            argv.iter()
                .map(|arg| format!("'{}'", arg.replace('\'', "'\\''")))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let lua = quoted(&[lua.display().to_string()]);
        let command = format!(
            "{lua} {} & {lua} {} && wait $!",
            quoted(&first),
            quoted(&second)
        );
        self.specs.push(Spec {
            exp,
            group: group.to_owned(),
            mode,
            runner: Runner::LuaOther,
            program: PathBuf::from("sh"),
            argv: vec!["-c".to_owned(), command],
            expect: expect_of(exp),
            env: Vec::new(),
        });
    }

    /// `script` (written for luaproc's API) through the original luaproc under
    /// `lua5.4`, when both are there.
    fn original_luaproc(&mut self, exp: &'static str, group: &str, script: Vec<String>) {
        let (Some(lua), Some(dir)) = (&self.programs.lua, &self.programs.luaproc) else {
            return;
        };
        self.specs.push(Spec {
            exp,
            group: group.to_owned(),
            mode: "",
            runner: Runner::Luaproc,
            program: lua.clone(),
            argv: script,
            expect: expect_of(exp),
            env: vec![("LUA_CPATH".to_owned(), format!("{}/?.so;;", dir.display()))],
        });
    }

    /// `script` through the module under `lua5.4` on `workers` (when both are there),
    /// beside the `lutra` run of the same script.
    fn module(
        &mut self,
        exp: &'static str,
        group: &str,
        mode: &'static str,
        workers: usize,
        script: Vec<String>,
    ) {
        let (Some(lua), Some(module)) = (&self.programs.lua, &self.programs.module) else {
            return;
        };
        let dir = module.parent().unwrap_or(Path::new("."));
        let mut argv = vec!["-e".to_owned(), "lutra = require 'lutra'".to_owned()];
        argv.extend(script);
        self.specs.push(Spec {
            exp,
            group: group.to_owned(),
            mode,
            runner: Runner::Module { workers },
            program: lua.clone(),
            argv,
            expect: expect_of(exp),
            env: vec![
                ("LUA_CPATH".to_owned(), format!("{}/?.so;;", dir.display())),
                ("LUTRA_WORKERS".to_owned(), workers.to_string()),
            ],
        });
    }
}

fn expect_of(exp: &str) -> &'static str {
    match exp {
        "exp1" => "long: ok",
        "exp2" => "channels: ok",
        "exp3" => "search: ok",
        "fib" => "fib_hub: ok",
        "wc" => "word_count: ok",
        "wake" => "wake: ok",
        "weblog" => "\"unparsed\":0}",
        "prompt" => "prompt: ok",
        "blocking" => "blocking: ok",
        _ => "micro: ok",
    }
}

fn script(name: &str, args: &[String]) -> Vec<String> {
    let mut argv = vec![name.to_owned()];
    argv.extend(args.iter().cloned());
    argv
}

fn strings(values: &[&dyn ToString]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

fn paths(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

/// Every run of this invocation, in order (input files are generated here).
pub(crate) fn build(
    args: &Args,
    programs: &Programs,
    data_dir: &Path,
    cores: usize,
) -> io::Result<Vec<Spec>> {
    let sizes = Sizes::new(args.quick, cores);
    let wanted = |exp: &str| {
        args.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|o| o == exp))
    };
    let mut b = Builder {
        programs,
        lutra_args: &args.lutra_arg,
        specs: Vec::new(),
    };
    if wanted("exp1") {
        let s = script("long.lua", &strings(&[&sizes.long_iterations]));
        b.lua("exp1", "long loop", "", true, s.clone());
        for sync in b.syncs() {
            for &w in &sizes.exp1_workers {
                b.lutra("exp1", "long loop", "", w, sync, s.clone());
            }
        }
        // The same run with preemption off: what preemption itself costs, apart from
        // the interpreter lutra is built with (unless the invocation sets a slice).
        if !b.lutra_args.iter().any(|arg| arg.starts_with("--preempt")) {
            let sync = b.syncs()[0];
            b.lutra("exp1", "long loop", NO_PREEMPT, 1, sync, s.clone());
            b.with_options(&["--preempt", "0"]);
        }
        b.module("exp1", "long loop", "", 1, s);
    }
    if wanted("exp2") {
        for &c in &sizes.exp2_channels {
            let group = format!("C={c}");
            let s = script("channels.lua", &strings(&[&c, &sizes.messages, &50]));
            // The same work through luaproc's API (`require "luaproc"`, named channels).
            let lp = script(
                "luaproc_channels.lua",
                &strings(&[&c, &sizes.messages, &50]),
            );
            b.lua("exp2", &group, "", true, s.clone());
            for sync in b.syncs() {
                for &w in &sizes.exp2_workers {
                    b.lutra("exp2", &group, "", w, sync, s.clone());
                    b.lutra("exp2", &group, "luaproc", w, sync, lp.clone());
                }
            }
            for w in [1, 2] {
                b.module("exp2", &group, "", w, s.clone());
            }
            b.original_luaproc("exp2", &group, lp);
        }
        // The paper's payload, the string "message", over one channel (the instructions
        // per message are counted with callgrind, docs/performance.md).
        let group = EXP2_STRINGS;
        let args = strings(&[&1, &sizes.messages, &50, &"string"]);
        let s = script("channels.lua", &args);
        let lp = script("luaproc_channels.lua", &args);
        b.lua("exp2", group, "", true, s.clone());
        for sync in b.syncs() {
            for w in [1, 2] {
                b.lutra("exp2", group, "", w, sync, s.clone());
                b.lutra("exp2", group, "luaproc", w, sync, lp.clone());
            }
        }
        b.original_luaproc("exp2", group, lp);
    }
    if wanted("exp3") {
        let max_files = sizes.exp3_files.iter().copied().max().unwrap_or(1);
        let logs = data::log_files(&data_dir.join("logs"), sizes.log_lines, max_files)?;
        for &f in &sizes.exp3_files {
            let group = format!("F={f}");
            let files = paths(&logs[..f]);
            let mut lua_args = vec!["1".to_owned()];
            lua_args.extend(files.iter().cloned());
            b.lua("exp3", &group, "", true, script("search.lua", &lua_args));
            for sync in b.syncs() {
                for &w in &sizes.exp3_workers {
                    // one searcher per worker, as the paper's runs had
                    let mut a = vec![w.to_string()];
                    a.extend(files.iter().cloned());
                    b.lutra("exp3", &group, "", w, sync, script("search.lua", &a));
                }
            }
        }
    }
    if wanted("fib") {
        let group = format!("fib({})x{}", sizes.fib_n, sizes.fib_requests);
        let workers = cores.max(2) * 2;
        let hub = script(
            "fib_hub.lua",
            &strings(&[&"hub", &sizes.fib_n, &sizes.fib_requests, &workers]),
        );
        let serial = script(
            "fib_hub.lua",
            &strings(&[&"serial", &sizes.fib_n, &sizes.fib_requests]),
        );
        b.lua("fib", &group, "serial", true, serial.clone());
        b.lua("fib", &group, "hub", false, hub.clone());
        b.lutra("fib", &group, "serial", 1, None, serial);
        let mut ws = vec![1, 2];
        if cores > 2 {
            ws.push(cores);
        }
        for w in ws {
            b.lutra("fib", &group, "hub", w, None, hub.clone());
        }
        b.module("fib", &group, "hub", 2, hub);
        // The request-heavy configuration: short requests, where messages weigh.
        let group = format!("{FIB17}{}", sizes.fib17_requests);
        let hub = script(
            "fib_hub.lua",
            &strings(&[&"hub", &17, &sizes.fib17_requests, &2]),
        );
        let serial = script(
            "fib_hub.lua",
            &strings(&[&"serial", &17, &sizes.fib17_requests]),
        );
        b.lua("fib", &group, "serial", true, serial);
        b.lutra("fib", &group, "hub", 2, None, hub);
    }
    if wanted("wc") {
        let docs = data::text_files(&data_dir.join("text"), sizes.docs, sizes.doc_words)?;
        let group = format!("{} docs", sizes.docs);
        let mappers = (cores.max(2) * 2).to_string();
        let mut hub = vec!["hub".to_owned(), mappers];
        hub.extend(paths(&docs));
        let mut serial = vec!["serial".to_owned(), "1".to_owned()];
        serial.extend(paths(&docs));
        b.lua(
            "wc",
            &group,
            "serial",
            true,
            script("word_count.lua", &serial),
        );
        b.lua("wc", &group, "hub", false, script("word_count.lua", &hub));
        let (first, second) = docs.split_at(docs.len() / 2);
        let half = |docs: &[PathBuf]| {
            let mut argv = vec!["serial".to_owned(), "1".to_owned()];
            argv.extend(paths(docs));
            script("word_count.lua", &argv)
        };
        b.lua_pair("wc", &group, WC_HALVES, half(first), half(second));
        let mut ws = vec![1, 2];
        if cores > 2 {
            ws.push(cores);
        }
        for w in ws {
            b.lutra("wc", &group, "hub", w, None, script("word_count.lua", &hub));
        }
    }
    if wanted("micro") {
        for (kind, n) in [("while", sizes.while_n), ("iterator", sizes.iterator_n)] {
            for &p in &sizes.micro_procs {
                let group = format!("{kind} P={p}");
                let s = script("micro.lua", &strings(&[&kind, &p, &n]));
                b.lua("micro", &group, "", true, s.clone());
                b.lutra("micro", &group, "", cores, None, s);
            }
        }
    }
    if wanted("wake") {
        for &n in &sizes.wake_n {
            let group = format!("N={n}");
            let own = script("wake.lua", &strings(&[&"own", &n]));
            let one = script("wake.lua", &strings(&[&"one", &n]));
            b.lua("wake", &group, "own", true, own.clone());
            b.lua("wake", &group, "one", false, one.clone());
            for sync in b.syncs() {
                b.lutra("wake", &group, "own", cores, sync, own.clone());
                b.lutra("wake", &group, "one", cores, sync, one.clone());
            }
        }
    }
    if wanted("weblog") {
        // The example program (from bench/lua, the runs' directory): its processes
        // as coroutines under lua5.4, on 1 and 2 workers under lutra.
        let (files, lines) = sizes.weblog;
        let group = format!("{files}x{lines} lines");
        let s = script("../../examples/weblog.lua", &strings(&[&files, &lines]));
        b.lua("weblog", &group, "", true, s.clone());
        for w in [1, 2] {
            b.lutra("weblog", &group, "", w, None, s.clone());
        }
    }
    if wanted("prompt") {
        let sleep = script("prompt.lua", &strings(&[&"sleep", &sizes.prompt_n]));
        let host = script("prompt.lua", &strings(&[&"host", &sizes.prompt_n]));
        for w in [1, 2] {
            for sync in b.syncs() {
                b.lutra("prompt", PROMPT_SLEEP, "", w, sync, sleep.clone());
            }
            b.module("prompt", PROMPT_SLEEP, "", w, sleep.clone());
            b.module("prompt", PROMPT_HOST, "", w, host.clone());
        }
    }
    if wanted("blocking") {
        let execute = script("blocking.lua", &strings(&[&"execute", &8]));
        let pipe = |readers: u32| {
            script(
                "blocking.lua",
                &strings(&[&"pipe", &readers, &sizes.pipe_work]),
            )
        };
        for sync in b.syncs() {
            b.lutra("blocking", BLOCKING_EXECUTE, "", 2, sync, execute.clone());
            b.lutra("blocking", BLOCKING_PIPE, PIPE_ALONE, cores, sync, pipe(0));
            b.lutra(
                "blocking",
                BLOCKING_PIPE,
                PIPE_BLOCKED,
                cores,
                sync,
                pipe(64),
            );
        }
        b.module("blocking", BLOCKING_EXECUTE, "", 2, execute);
        b.module("blocking", BLOCKING_PIPE, PIPE_ALONE, cores, pipe(0));
        b.module("blocking", BLOCKING_PIPE, PIPE_BLOCKED, cores, pipe(64));
    }
    Ok(b.specs)
}

/// `prompt`'s groups: a process's `lutra.sleep(0.05)`, the host's round trip.
pub(crate) const PROMPT_SLEEP: &str = "sleep 0.05";
pub(crate) const PROMPT_HOST: &str = "host round trip";
/// `blocking`'s groups: 8 processes × `os.execute("sleep 0.5")`; CPU-bound work beside
/// (or without) 64 processes blocked reading a pipe.
pub(crate) const BLOCKING_EXECUTE: &str = "8 x sleep 0.5";
pub(crate) const BLOCKING_PIPE: &str = "cpu + pipes";
pub(crate) const PIPE_ALONE: &str = "alone";
pub(crate) const PIPE_BLOCKED: &str = "64 blocked";
