//! `io.popen` of a simple command without the shell in between, as Perl and Ruby
//! start theirs: the command is split into words and started through `PATH`
//! (`posix_spawnp`), where `popen` would start `/bin/sh -c command`, which then
//! starts the command. That saves the shell's start-up and half the command's cost
//! (on Debian's dash, a child that costs 1.2 ms of CPU costs 2.1 ms through it), which
//! counts when many processes each run a command.
//!
//! A command goes without the shell only where the shell would do exactly the same:
//! the shell is dash (Debian's `/bin/sh`), which replaces itself with the last
//! command of a `-c` string, so the same program runs as the same child with the same
//! arguments, descriptors and exit status, and:
//! - every byte is a letter, a digit, a space or one of `_-./,:+@%=`, so the shell
//!   would expand, quote, redirect or separate nothing: it would only split on the
//!   spaces;
//! - its first word is not a shell builtin or reserved word (of dash or bash) and
//!   holds no `=` (an assignment);
//! - `PATH` is set (with no `PATH`, dash searches its own default list), and `PWD`
//!   names the current directory (otherwise dash exports a corrected `PWD` to the
//!   command; with it set right, dash passes the environment on unchanged).
//!
//! Anything else, and any command that fails to start (not found, not executable, a
//! script with no `#!` line), goes through `popen` as before, so its errors are the
//! shell's own ("sh: 1: name: not found", status 127).
//!
//! # Invariants
//! - Both ends of the pipe are close-on-exec from their creation, so no other child,
//!   started at the same time by another thread, holds them (a reader would then wait
//!   for that child's end too); the child's end becomes its standard input or output
//!   through `dup2`, which clears the flag on that copy only.
//! - A command is started at most once: after `posix_spawnp` succeeded, a failure
//!   is reported, never retried through the shell.

use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::OnceLock;

unsafe extern "C" {
    /// The process's environment, as `popen` passes it on.
    static environ: *const *mut c_char;
}

/// A command started without the shell: its end of the pipe as a stream, and its
/// process, for the wait when the stream is closed.
pub(super) struct Child {
    pub(super) file: *mut libc::FILE,
    pub(super) pid: libc::pid_t,
}

/// What [`spawn`] did.
pub(super) enum Spawned {
    /// The command runs.
    Running(Child),
    /// Nothing was started: run the command through the shell.
    NotStarted,
    /// The command was started and then lost (no stream for the pipe, `errno` says
    /// why); it was waited for.
    Failed,
}

/// The words of `command` when it may run without the shell (module header).
pub(super) fn simple_command(command: &CStr) -> Option<Vec<CString>> {
    let words = plain_words(command.to_bytes())?;
    (shell_is_dash() && environment_as_the_shell_leaves_it()).then_some(words)
}

/// The words of `command` if the shell would only split it on its spaces and then
/// start a program: the command's own part of the rules in the module header.
fn plain_words(command: &[u8]) -> Option<Vec<CString>> {
    if !command.iter().all(|&byte| plain(byte)) {
        return None;
    }
    let words: Vec<&[u8]> = command
        .split(|&byte| byte == b' ')
        .filter(|word| !word.is_empty())
        .collect();
    let first = *words.first()?;
    if first.contains(&b'=') || SHELL_WORDS.contains(&first) {
        return None;
    }
    // The bytes hold no NUL: `plain` lets none through.
    words
        .into_iter()
        .map(|word| CString::new(word).ok())
        .collect()
}

/// A byte the shell gives no meaning to, or the space it splits words on.
fn plain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b" _-./,:+@%=".contains(&byte)
}

/// The builtins and reserved words of dash and bash that a plain word can spell: the
/// shell would run these itself rather than start a program of that name.
const SHELL_WORDS: &[&[u8]] = &[
    b".",
    b":",
    b"alias",
    b"bg",
    b"bind",
    b"break",
    b"builtin",
    b"caller",
    b"case",
    b"cd",
    b"chdir",
    b"command",
    b"compgen",
    b"complete",
    b"compopt",
    b"continue",
    b"coproc",
    b"declare",
    b"dirs",
    b"disown",
    b"do",
    b"done",
    b"echo",
    b"elif",
    b"else",
    b"enable",
    b"esac",
    b"eval",
    b"exec",
    b"exit",
    b"export",
    b"false",
    b"fc",
    b"fg",
    b"fi",
    b"for",
    b"function",
    b"getopts",
    b"hash",
    b"help",
    b"history",
    b"if",
    b"in",
    b"jobs",
    b"kill",
    b"let",
    b"local",
    b"logout",
    b"mapfile",
    b"popd",
    b"printf",
    b"pushd",
    b"pwd",
    b"read",
    b"readarray",
    b"readonly",
    b"return",
    b"select",
    b"set",
    b"shift",
    b"shopt",
    b"source",
    b"suspend",
    b"test",
    b"then",
    b"time",
    b"times",
    b"trap",
    b"true",
    b"type",
    b"typeset",
    b"ulimit",
    b"umask",
    b"unalias",
    b"unset",
    b"until",
    b"wait",
    b"while",
];

/// Whether `/bin/sh` is dash (looked at once).
fn shell_is_dash() -> bool {
    static DASH: OnceLock<bool> = OnceLock::new();
    *DASH.get_or_init(|| {
        std::fs::canonicalize("/bin/sh")
            .is_ok_and(|shell| shell.file_name().is_some_and(|name| name == "dash"))
    })
}

/// Whether dash would pass the environment on unchanged and search the same `PATH`:
/// `PATH` set, and `PWD` an absolute name of the current directory.
fn environment_as_the_shell_leaves_it() -> bool {
    use std::os::unix::fs::MetadataExt;
    if std::env::var_os("PATH").is_none() {
        return false;
    }
    let Some(pwd) = std::env::var_os("PWD") else {
        return false;
    };
    let pwd = std::path::Path::new(&pwd);
    let (Ok(named), Ok(current)) = (std::fs::metadata(pwd), std::fs::metadata(".")) else {
        return false;
    };
    pwd.is_absolute() && named.dev() == current.dev() && named.ino() == current.ino()
}

/// Starts `words` (see [`simple_command`]) with a pipe to its standard output
/// (`reading`) or from its standard input.
pub(super) fn spawn(words: &[CString], reading: bool) -> Spawned {
    let mut ends = [0 as c_int; 2];
    // SAFETY: `ends` has room for the two descriptors `pipe2` writes.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Spawned::NotStarted;
    }
    let (ours, theirs, target) = if reading {
        (ends[0], ends[1], 1)
    } else {
        (ends[1], ends[0], 0)
    };
    let mut argv: Vec<*mut c_char> = words.iter().map(|word| word.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    let mut pid: libc::pid_t = 0;
    // SAFETY: the file actions are initialised before use and destroyed once; `argv`
    // is a null-terminated array of C strings that outlive the call (`words`);
    // `environ` is the C library's own, as `popen` passes it; the descriptors are
    // this function's, each closed once.
    let started = unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        libc::posix_spawn_file_actions_init(&mut actions);
        libc::posix_spawn_file_actions_adddup2(&mut actions, theirs, target);
        let error = libc::posix_spawnp(
            &mut pid,
            argv[0],
            &actions,
            std::ptr::null(),
            argv.as_ptr(),
            environ.cast(),
        );
        libc::posix_spawn_file_actions_destroy(&mut actions);
        libc::close(theirs);
        error == 0
    };
    if !started {
        // SAFETY: `ours` is open and no stream owns it.
        unsafe { libc::close(ours) };
        return Spawned::NotStarted;
    }
    let mode = if reading { c"r" } else { c"w" };
    // SAFETY: `ours` is an open descriptor that the stream takes over.
    let file = unsafe { libc::fdopen(ours, mode.as_ptr()) };
    if file.is_null() {
        // SAFETY: `fdopen` failed, so `ours` is still this function's; `pid` is the
        // child just started, waited for once. `errno` is kept for the caller.
        unsafe {
            let error = *libc::__errno_location();
            libc::close(ours);
            wait(pid);
            *libc::__errno_location() = error;
        }
        return Spawned::Failed;
    }
    Spawned::Running(Child { file, pid })
}

/// Waits for the child `pid` to end: its wait status, or -1 with `errno` set (as
/// `pclose` answers).
pub(super) fn wait(pid: libc::pid_t) -> c_int {
    let mut status: c_int = 0;
    loop {
        // SAFETY: `status` is a valid place for the status.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return status;
        }
        // SAFETY: reading this thread's `errno`.
        if unsafe { *libc::__errno_location() } != libc::EINTR {
            return -1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Option<Vec<String>> {
        plain_words(command.as_bytes()).map(|words| {
            words
                .into_iter()
                .map(|word| word.into_string().unwrap())
                .collect()
        })
    }

    #[test]
    fn plain_commands_split_on_spaces() {
        assert_eq!(words("sleep 1"), Some(vec!["sleep".into(), "1".into()]));
        assert_eq!(
            words("  dd  of=/tmp/x status=none "),
            Some(vec!["dd".into(), "of=/tmp/x".into(), "status=none".into()])
        );
        assert_eq!(
            words("/usr/bin/env -u X"),
            Some(vec!["/usr/bin/env".into(), "-u".into(), "X".into()])
        );
    }

    #[test]
    fn anything_the_shell_would_interpret_goes_through_it() {
        for command in [
            "echo hi",
            "exit 3",
            "cat > f",
            "ls *",
            "ls ?",
            "ls [a]",
            "a | b",
            "x; y",
            "cat 'f'",
            "cat \"f\"",
            "echo $HOME",
            "ls `pwd`",
            "FOO=1 env",
            "cd /",
            "ls ~",
            "a\tb",
            "a\nb",
            "",
            "   ",
            "printf x",
            "true",
            "test -e f",
            "a && b",
            "(ls)",
            "ls #c",
            "ls\\ x",
            "ls {a,b}",
            "! ls",
            "ls \u{e9}",
        ] {
            assert_eq!(words(command), None, "{command:?}");
        }
    }
}
