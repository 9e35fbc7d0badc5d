//! `lutra [options] [script [args]]`, read as `lua5.4` reads its command line.
//!
//! # Rules (those of `lua.c`'s `collectargs`)
//! 1. Options come before the script; the first argument that does not start with
//!    `-` is the script, and every argument after it belongs to the script, whatever
//!    it looks like (`lutra s.lua -w 3 --help` passes three arguments).
//! 2. `--` ends the options: the next argument is the script. `-` ends them too and
//!    is itself the script: standard input.
//! 3. lua5.4's options: `-e stat`, `-l mod` (`-l g=mod`), `-i`, `-v`, `-E`, `-W`
//!    (the argument of `-e` and `-l` may be attached: `-eprint(1)`). `-e`, `-l` and
//!    `-W` act in the order given; `-i` implies `-v`.
//! 4. lutra's options: `-w N` (`--workers N`), `--policy`, `--cm`, `--stats`,
//!    `--mailbox-cap`, `--memory-limit`, `--preempt`, `--sync`,
//!    `--max-blocking-threads` (a long option's value
//!    after a space or `=`), `-h`/`--help` and `--version`.
//! 5. Anything else starting with `-` is a usage error, as is a missing value.

use lutra_lua::{Options, SyncMode};
use lutra_sched::policy::Policy;

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Request {
    /// Run (see [`Invocation`]).
    Run(Box<Invocation>),
    /// `-h` / `--help`: print the help and exit 0.
    Help,
    /// `--version`: print lutra's version and exit 0.
    Version,
}

/// An `-e`, `-l` or `-W` option, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// `-e stat`: run `stat`.
    Execute(String),
    /// `-l mod` or `-l g=mod`: the option's text.
    Library(String),
    /// `-W`: turn warnings on.
    Warnings,
}

/// A run of the program: the runtime's settings, lua5.4's options, and the script.
#[derive(Debug)]
pub(crate) struct Invocation {
    /// The runtime's settings from lutra's options.
    pub(crate) options: Options,
    /// `--stats`.
    pub(crate) stats: bool,
    /// `-e`, `-l` and `-W`, in order.
    pub(crate) steps: Vec<Step>,
    /// `-i`.
    pub(crate) interactive: bool,
    /// `-v` (or `-i`).
    pub(crate) version: bool,
    /// `-E`: ignore `LUA_INIT` and the path variables.
    pub(crate) ignore_env: bool,
    /// Every argument, the program's name first (`arg`'s layout is built from it).
    pub(crate) argv: Vec<String>,
    /// Where the script is in `argv` (0: no script).
    pub(crate) script: usize,
}

impl Invocation {
    /// The script's name, if there is one (`-` is standard input, unless it came
    /// after `--`, as under lua5.4).
    pub(crate) fn script_name(&self) -> Option<&str> {
        (self.script > 0).then(|| self.argv[self.script].as_str())
    }

    /// Whether the script is standard input.
    pub(crate) fn script_is_stdin(&self) -> bool {
        self.script_name() == Some("-") && self.argv[self.script - 1] != "--"
    }
}

/// A usage error: its message (the usage text follows it when printed).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UsageError(pub String);

/// Reads `argv` (the program's name first).
///
/// # Errors
/// A [`UsageError`] for an unknown option, a missing or refused value.
pub(crate) fn parse(argv: Vec<String>) -> Result<Request, UsageError> {
    let mut invocation = Invocation {
        options: Options::default(),
        stats: false,
        steps: Vec::new(),
        interactive: false,
        version: false,
        ignore_env: false,
        argv,
        script: 0,
    };
    let mut i = 1;
    while i < invocation.argv.len() {
        let arg = invocation.argv[i].clone();
        match arg.as_str() {
            "--" => {
                if i + 1 < invocation.argv.len() {
                    invocation.script = i + 1;
                }
                break;
            }
            "-" => {
                invocation.script = i;
                break;
            }
            "-h" | "--help" => return Ok(Request::Help),
            "--version" => return Ok(Request::Version),
            "-i" => {
                invocation.interactive = true;
                invocation.version = true;
            }
            "-v" => invocation.version = true,
            "-E" => invocation.ignore_env = true,
            "-W" => invocation.steps.push(Step::Warnings),
            "--stats" => {
                invocation.stats = true;
                invocation.options.count_messages = true;
            }
            _ if arg.starts_with("-e") || arg.starts_with("-l") => {
                let value = short_value(&invocation.argv, &mut i, &arg[..2])?;
                invocation.steps.push(if arg.starts_with("-e") {
                    Step::Execute(value)
                } else {
                    Step::Library(value)
                });
            }
            _ if arg.starts_with("-w") => {
                let value = short_value(&invocation.argv, &mut i, "-w")?;
                set_option(&mut invocation.options, "--workers", &value).map_err(
                    |UsageError(message)| UsageError(message.replacen("'--workers'", "'-w'", 1)),
                )?;
            }
            _ if arg.starts_with("--") => {
                let (name, attached) = match arg.split_once('=') {
                    Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                    None => (arg.clone(), None),
                };
                if !TAKES_VALUE.contains(&name.as_str()) {
                    return Err(unrecognized(&arg));
                }
                let value = match attached {
                    Some(value) => value,
                    None => next_value(&invocation.argv, &mut i, &name)?,
                };
                set_option(&mut invocation.options, &name, &value)?;
            }
            _ if arg.starts_with('-') => return Err(unrecognized(&arg)),
            _ => {
                invocation.script = i;
                break;
            }
        }
        i += 1;
    }
    invocation.options.package_paths = lutra_lua::PackagePaths::new(invocation.ignore_env);
    Ok(Request::Run(Box::new(invocation)))
}

/// lutra's options that take a value.
const TAKES_VALUE: [&str; 8] = [
    "--workers",
    "--policy",
    "--cm",
    "--mailbox-cap",
    "--memory-limit",
    "--preempt",
    "--sync",
    "--max-blocking-threads",
];

#[cold]
fn unrecognized(arg: &str) -> UsageError {
    UsageError(format!("unrecognized option '{arg}'"))
}

/// The value of a short option `flag` at `argv[*i]`: attached (`-eprint(1)`) or the
/// next argument (then `*i` moves to it).
fn short_value(argv: &[String], i: &mut usize, flag: &str) -> Result<String, UsageError> {
    let attached = &argv[*i][flag.len()..];
    if !attached.is_empty() {
        return Ok(attached.to_owned());
    }
    next_value(argv, i, flag)
}

/// The argument after `argv[*i]`, the value of `flag` (then `*i` moves to it).
fn next_value(argv: &[String], i: &mut usize, flag: &str) -> Result<String, UsageError> {
    match argv.get(*i + 1) {
        Some(value) => {
            *i += 1;
            Ok(value.clone())
        }
        None => Err(UsageError(format!("'{flag}' needs argument"))),
    }
}

/// Sets lutra's option `name` (its long name) from `value`.
fn set_option(options: &mut Options, name: &str, value: &str) -> Result<(), UsageError> {
    let refused =
        |error: String| UsageError(format!("invalid value '{value}' for '{name}': {error}"));
    match name {
        "--workers" => options.workers = Some(lutra_lua::parse_workers(value).map_err(refused)?),
        "--policy" => {
            let policy = value
                .parse::<Policy>()
                .map_err(|e| refused(e.to_string()))?;
            options.policy = Some(policy.name().to_owned());
        }
        "--cm" => {
            if lutra_stm::cm::by_name(value).is_none() {
                return Err(refused(format!(
                    "unknown contention manager (expected one of: {})",
                    lutra_stm::cm::NAMES.join(", ")
                )));
            }
            options.contention_manager = Some(value.to_owned());
        }
        "--mailbox-cap" => {
            options.mailbox_capacity = lutra_lua::parse_mailbox_capacity(value).map_err(refused)?;
        }
        "--memory-limit" => {
            options.memory_limit = Some(lutra_lua::parse_bytes(value).map_err(refused)?)
        }
        "--preempt" => {
            options.preempt_slice_ms = lutra_lua::parse_preempt(value).map_err(refused)?
        }
        "--sync" => options.sync = value.parse::<SyncMode>().map_err(refused)?,
        "--max-blocking-threads" => {
            options.max_blocking_threads =
                lutra_lua::parse_max_blocking_threads(value).map_err(refused)?
        }
        _ => return Err(unrecognized(name)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Invocation {
        let argv = std::iter::once("lutra")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        match parse(argv) {
            Ok(Request::Run(invocation)) => *invocation,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn error(args: &[&str]) -> String {
        let argv = std::iter::once("lutra")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        match parse(argv) {
            Err(UsageError(message)) => message,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn everything_after_the_script_is_the_scripts() {
        let invocation = run(&["-w", "2", "s.lua", "-w", "3", "--help", "x"]);
        assert_eq!(invocation.script_name(), Some("s.lua"));
        assert_eq!(
            &invocation.argv[invocation.script + 1..],
            ["-w", "3", "--help", "x"]
        );
        assert_eq!(invocation.options.workers, Some(2));
    }

    #[test]
    fn lua_options_act_in_order() {
        let invocation = run(&["-e", "a=1", "-lm", "-W", "-eb=2", "-l", "g=m", "-E", "-i"]);
        assert_eq!(
            invocation.steps,
            [
                Step::Execute("a=1".into()),
                Step::Library("m".into()),
                Step::Warnings,
                Step::Execute("b=2".into()),
                Step::Library("g=m".into())
            ]
        );
        assert!(invocation.ignore_env && invocation.interactive && invocation.version);
        assert_eq!(invocation.script, 0);
    }

    #[test]
    fn dashes_end_the_options() {
        let invocation = run(&["--", "-e"]);
        assert_eq!(invocation.script_name(), Some("-e"));
        let invocation = run(&["-", "a"]);
        assert!(invocation.script_is_stdin());
        let invocation = run(&["--", "-"]);
        assert!(!invocation.script_is_stdin(), "`-- -` is a file named -");
        assert_eq!(run(&["--"]).script, 0);
    }

    #[test]
    fn lutra_options_take_values_both_ways() {
        let invocation = run(&[
            "-w3",
            "--policy",
            "ats",
            "--cm=backoff",
            "--mailbox-cap",
            "5",
            "--memory-limit=1M",
            "--preempt",
            "0",
            "--sync",
            "tm",
            "--max-blocking-threads=7",
            "--stats",
            "s.lua",
        ]);
        let options = &invocation.options;
        assert_eq!(options.workers, Some(3));
        assert_eq!(options.policy.as_deref(), Some("ats"));
        assert_eq!(options.contention_manager.as_deref(), Some("backoff"));
        assert_eq!(options.mailbox_capacity, 5);
        assert_eq!(options.memory_limit, Some(1 << 20));
        assert_eq!(options.preempt_slice_ms, 0);
        assert_eq!(options.sync, SyncMode::Tm);
        assert_eq!(options.max_blocking_threads, 7);
        assert!(invocation.stats);
        assert!(invocation.options.count_messages);
    }

    #[test]
    fn bad_options_are_usage_errors() {
        assert_eq!(error(&["-x"]), "unrecognized option '-x'");
        assert_eq!(error(&["-iv"]), "unrecognized option '-iv'");
        assert_eq!(error(&["--nope", "s.lua"]), "unrecognized option '--nope'");
        assert_eq!(error(&["-e"]), "'-e' needs argument");
        assert_eq!(error(&["-l"]), "'-l' needs argument");
        assert_eq!(error(&["--workers"]), "'--workers' needs argument");
        let too_many = (lutra_lua::MAX_WORKERS + 1).to_string();
        for bad in ["0", "-3", "abc", too_many.as_str()] {
            assert!(error(&["-w", bad, "s.lua"]).contains("for '-w'"), "{bad}");
            assert!(
                error(&["--workers", bad, "s.lua"]).contains("for '--workers'"),
                "{bad}"
            );
        }
        assert!(error(&["--policy", "fifo"]).contains("fifo"));
        assert!(error(&["--cm", "polite"]).contains("polite"));
        assert!(error(&["--sync", "spin"]).contains("spin"));
        assert!(error(&["--stats=1"]).contains("--stats=1"));
    }

    #[test]
    fn help_and_version_are_requests() {
        let argv = |a: &str| vec!["lutra".to_owned(), a.to_owned()];
        assert!(matches!(parse(argv("--help")), Ok(Request::Help)));
        assert!(matches!(parse(argv("-h")), Ok(Request::Help)));
        assert!(matches!(parse(argv("--version")), Ok(Request::Version)));
    }
}
