//! Lutra inside a host program's Lua state: what `require "lutra"` and
//! `require "luaproc"` do in a stock `lua5.4` (the loadable module,
//! `crates/lutra-lua-module`), and what a Rust program embedding Lua can call.
//!
//! # Protocol
//! 1. The first call creates the one runtime of this OS process (options from the
//!    environment, see [`options_from_env`]); later calls, from any host state, share it.
//! 2. The host state gets a pseudo-process context: its own id (counted down from
//!    `u64::MAX`, so never a process's), a mailbox (`lutra.self()`, `lutra.receive`),
//!    and no place in the live count (a host is not a process: `lutra.wait` and the
//!    deadlock detector do not wait for it).
//! 3. `lutra` is installed without touching the host's globals (`print`, `coroutine`):
//!    the host's thread is not a task, so a blocking call parks the OS thread
//!    (`raw.park_thread`); a host that would wait forever gets a deadlock error
//!    (proven: every process parked, every other host blocked, no wake-up or timer
//!    pending; each open host state counts as awake in the runtime's liveness).
//! 4. When the host state closes (the script ended), the runtime waits for the
//!    processes still running, as luaproc's finaliser does, and reports processes
//!    that failed unjoined (unless reported when they failed) and a deadlock on
//!    standard error (unless a host's blocking call raised the same report); after
//!    a deadlock the loadable module ends the interpreter with status 2, as
//!    `lutra` does.

use crate::options::Options;
use crate::process::{ProcessContext, ProcessCore};
use crate::runtime::{LuaRuntime, WaitOutcome};
use mlua::{Function, Lua, Table, UserData};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Registry key of the value whose finaliser waits for the processes.
const FINALIZER_KEY: &str = "lutra.host.finalizer";

/// Host ids, counted down so that they never meet process ids.
static NEXT_HOST_ID: AtomicU64 = AtomicU64::new(u64::MAX);

/// The runtime of this OS process in module mode, started on first use with the
/// options of the environment.
///
/// # Errors
/// When an environment variable holds a value its option refuses (see
/// [`options_from_env`]); the runtime is then not started, and a later call (with the
/// environment fixed) may start it.
pub fn global_runtime() -> Result<&'static LuaRuntime, String> {
    static RUNTIME: OnceLock<LuaRuntime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let options = options_from_env()?;
    Ok(RUNTIME.get_or_init(|| LuaRuntime::new(options)))
}

/// Options for the module's runtime, from the environment: `LUTRA_WORKERS`,
/// `LUTRA_MAILBOX_CAP`, `LUTRA_MEMORY_LIMIT` (bytes, or with K, M, G), `LUTRA_PREEMPT`
/// (instructions, 0: never), `LUTRA_MAX_BLOCKING_THREADS` (threads that may take over
/// the workers of threads blocked in C calls). Unset or empty variables keep their defaults.
///
/// # Errors
/// A set value that the `lutra` program's option would refuse (the same parsers:
/// `parse_workers`...), with the variable's name: `LUTRA_WORKERS=abc: 'abc' is not a
/// worker count...`.
pub fn options_from_env() -> Result<Options, String> {
    fn var<T>(name: &str, parse: fn(&str) -> Result<T, String>) -> Result<Option<T>, String> {
        match std::env::var(name) {
            Ok(text) if text.trim().is_empty() => Ok(None),
            Ok(text) => parse(&text)
                .map(Some)
                .map_err(|e| format!("{name}={text}: {e}")),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name} is not valid UTF-8")),
        }
    }
    let defaults = Options::default();
    Ok(Options {
        workers: var("LUTRA_WORKERS", crate::options::parse_workers)?,
        mailbox_capacity: var("LUTRA_MAILBOX_CAP", crate::options::parse_mailbox_capacity)?
            .unwrap_or(defaults.mailbox_capacity),
        memory_limit: var("LUTRA_MEMORY_LIMIT", crate::options::parse_bytes)?,
        preempt_slice_ms: var("LUTRA_PREEMPT", crate::options::parse_preempt)?
            .unwrap_or(defaults.preempt_slice_ms),
        max_blocking_threads: var(
            "LUTRA_MAX_BLOCKING_THREADS",
            crate::options::parse_max_blocking_threads,
        )?
        .unwrap_or(defaults.max_blocking_threads),
        ..defaults
    })
}

/// Installs `lutra` into the host state `lua` (once; later calls return the same
/// table) and returns it. See the module's protocol.
///
/// # Errors
/// When the state lacks the standard libraries Lutra needs (`debug`, `package`), or
/// the environment holds a refused option (see [`global_runtime`]).
pub fn open_module(lua: &Lua) -> mlua::Result<Table> {
    if lua.app_data_ref::<ProcessContext>().is_some() {
        // Installed already (a process, or this host earlier): the same table, also
        // after the program cleared `package.loaded.lutra` to require it again.
        return lua.named_registry_value(crate::api::LUTRA_KEY);
    }
    let runtime = global_runtime().map_err(|e| mlua::Error::runtime(format!("lutra: {e}")))?;
    let id = NEXT_HOST_ID.fetch_sub(1, Ordering::Relaxed);
    let capacity = runtime.shared().options.mailbox_capacity;
    lua.set_app_data(ProcessContext::new(
        runtime.shared().clone(),
        Arc::new(ProcessCore::new(id, "host".into(), capacity)),
    ));
    let lutra = crate::api::install_host(lua)?;
    lua.set_named_registry_value(FINALIZER_KEY, HostFinalizer)?;
    runtime.shared().open_host();
    Ok(lutra)
}

/// Installs `lutra` if needed and returns luaproc's API table (`require "luaproc"`).
///
/// # Errors
/// As [`open_module`].
pub fn open_luaproc(lua: &Lua) -> mlua::Result<Table> {
    open_module(lua)?;
    let package: Table = lua.globals().get("package")?;
    let loaded: Table = package.get("loaded")?;
    if let Ok(luaproc) = loaded.get::<Table>("luaproc") {
        return Ok(luaproc);
    }
    let loader: Function = package.get::<Table>("preload")?.get("luaproc")?;
    let luaproc: Table = loader.call("luaproc")?;
    loaded.set("luaproc", &luaproc)?;
    Ok(luaproc)
}

/// Lives in the host's registry; dropped when the host state closes.
struct HostFinalizer;

impl UserData for HostFinalizer {}

impl Drop for HostFinalizer {
    fn drop(&mut self) {
        let Some(runtime) = global_runtime().ok() else {
            return; // unreachable: a host state exists only once the runtime started
        };
        // The closing host can wake nobody any more: only processes are waited for.
        runtime.shared().close_host();
        let waited = runtime.wait();
        for (process, error) in runtime.unjoined_failures() {
            if !process.was_reported() {
                eprintln!(
                    "lutra: process#{} ({}) failed: {error}",
                    process.id(),
                    process.origin()
                );
            }
        }
        if let WaitOutcome::Deadlock(report) = waited {
            // A host's blocking call may have raised this very report already.
            if !runtime.shared().host_saw_deadlock(&report) {
                eprint!("lutra: {report}");
            }
            // In the loadable module the host is a Lua interpreter about to exit 0:
            // processes blocked for good make it exit as `lutra` does on a deadlock.
            #[cfg(not(feature = "vendored"))]
            std::process::exit(2);
        }
    }
}

// SAFETY: without mlua's `send` feature (module mode: the host's Lua is not built
// with it) a process task holds `Rc`-counted handles of its own Lua state. A task is
// resumed by one worker at a time (the scheduler never runs it on two at once); every
// handle to its state lives in the task or inside the state itself; mlua keeps no
// per-thread cache for Lua 5.4; so moving the task moves every reference together and
// no two threads ever touch the counts at once.
#[cfg(not(feature = "vendored"))]
unsafe impl Send for crate::process::ProcessTask {}

// SAFETY: as above for the finished states kept for reuse: each pooled `Lua` is the
// last handle to its state (its process's task dropped every other), and the pool's
// mutex hands it to one thread at a time.
#[cfg(not(feature = "vendored"))]
unsafe impl Send for crate::process::StatePool {}
// SAFETY: every access goes through the pool's mutex (see above).
#[cfg(not(feature = "vendored"))]
unsafe impl Sync for crate::process::StatePool {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The tests share the one module runtime; while one test's host can still act,
    /// another's deadlock is not proven (that host could wake it), so they run one
    /// by one.
    static ONE_HOST_AT_A_TIME: Mutex<()> = Mutex::new(());

    /// A host state (not a task) spawns processes, blocks on channels and mailboxes
    /// by parking its OS thread, and waits for every process.
    #[test]
    fn host_state_blocks_by_parking_its_thread() {
        let _one = ONE_HOST_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the debug library is what stock `lua5.4` hosts have.
        let lua = unsafe { Lua::unsafe_new_with(mlua::StdLib::ALL, mlua::LuaOptions::new()) };
        let lutra = open_module(&lua).unwrap();
        lua.globals().set("lutra", lutra).unwrap();
        lua.load(
            r#"
            local ch = lutra.channel()
            lutra.spawn(function(ch) for i = 1, 3 do ch:send(i) end ch:close() end, ch)
            local sum = 0
            for v in ch:values() do sum = sum + v end
            assert(sum == 6)
            local me = lutra.self()
            lutra.spawn(function(host) host:send("hi", 7) end, me)
            local word, n = lutra.receive(5)
            assert(word == "hi" and n == 7, tostring(word))
            assert(lutra.receive(0.05) == nil)
            lutra.spawn(function() lutra.sleep(0.05) end)
            lutra.wait()
            local lp = require "luaproc"
            assert(lp.newchannel("c"))
            assert(lp.newproc([[luaproc.send("c", "ping")]]))
            assert(lp.receive("c") == "ping")
            lp.wait()
            "#,
        )
        .exec()
        .unwrap();
        assert!(open_luaproc(&lua).unwrap().contains_key("newproc").unwrap());
    }

    /// A host waiting on a channel nobody will ever send to gets a deadlock error
    /// instead of hanging.
    #[test]
    fn host_deadlock_is_an_error() {
        let _one = ONE_HOST_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: as above.
        let lua = unsafe { Lua::unsafe_new_with(mlua::StdLib::ALL, mlua::LuaOptions::new()) };
        let lutra = open_module(&lua).unwrap();
        lua.globals().set("lutra", lutra).unwrap();
        let error = lua
            .load(
                r#"
                local ch = lutra.channel()
                lutra.spawn(function(ch) pcall(ch.receive, ch) end, ch)
                local ok, err = pcall(ch.receive, ch)
                ch:close()
                return err
                "#,
            )
            .eval::<String>()
            .unwrap();
        assert!(error.contains("deadlock"), "{error}");
    }
}
