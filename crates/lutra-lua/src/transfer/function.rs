//! Isolated functions (seed 002's "isolated Proc"): Lua functions that capture nothing
//! of their process but its globals, sent as bytecode.
//!
//! # Rules
//! - A C function never crosses (it has no bytecode).
//! - Each upvalue must hold the sender's globals table (`_ENV`, or a local alias of
//!   `_G`), the sender's `lutra` table (`local lutra = require "lutra"`, the usual
//!   way to write a module program) or the function itself (a `local function f`
//!   that recurses). On import each is bound again: to the receiver's globals, to the
//!   receiver's `lutra`, or to the new function. The position of `_ENV` among the
//!   upvalues does not matter.
//! - Any other upvalue is a captured local: refused, naming the variable.
//!
//! Globals resolve in the receiving process: a function that recurses through a
//! global (`function fib(n) ... fib(n - 1) end`) needs that global defined there.

use mlua::chunk::ChunkMode;
use mlua::{Function, Lua};

/// Registry key of the original `debug.setupvalue`.
pub(crate) const SETUPVALUE_KEY: &str = "lutra.setupvalue";

/// What one upvalue of an isolated function is bound to in the receiving process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upvalue {
    /// The receiving process's globals table (`_ENV`).
    Globals,
    /// The function itself (local recursion).
    Itself,
    /// The receiving process's `lutra` table.
    Lutra,
}

/// A function that captures nothing but its globals and itself, as bytecode.
#[derive(Debug)]
pub struct IsolatedFunction {
    /// `string.dump` of the function (not stripped: tracebacks keep line numbers).
    pub bytecode: Vec<u8>,
    /// Where it was defined (`file.lua:12`), for error messages.
    pub origin: String,
    /// How each upvalue is bound on import, in order.
    pub upvalues: Vec<Upvalue>,
}

/// Why a function cannot cross: what it is, and the reason.
pub(crate) type Refusal = (&'static str, String);

/// Checks that `f` is isolated and dumps it.
pub(crate) fn isolate(lua: &Lua, f: &Function) -> Result<IsolatedFunction, Refusal> {
    let info = f.info();
    if info.what == "C" {
        return Err((
            "C function",
            "only Lua functions can cross (as bytecode); call the C function inside the receiving process instead".into(),
        ));
    }
    if info.source.as_deref().is_some_and(is_library_chunk) {
        return Err((
            "library function",
            "Lutra's own functions (print, coroutine.wrap, lutra.*) exist in every process: use them by name there".into(),
        ));
    }
    let upvalues = bindings(lua, f)?;
    let origin = format!(
        "{}:{}",
        info.short_src.as_deref().unwrap_or("?"),
        info.line_defined.unwrap_or(0)
    );
    Ok(IsolatedFunction {
        bytecode: f.dump(false),
        origin,
        upvalues,
    })
}

/// Whether `source` names one of Lutra's own chunks (`=lutra`, `=lutra.transfer`,
/// `=luaproc`…), whose functions capture the library's internals.
fn is_library_chunk(source: &str) -> bool {
    source == "=lutra" || source.starts_with("=lutra.") || source == "=luaproc"
}

fn bindings(lua: &Lua, f: &Function) -> Result<Vec<Upvalue>, Refusal> {
    let internal = |e: mlua::Error| ("function", e.to_string());
    let get_upvalue: Function = lua
        .named_registry_value(crate::process::GETUPVALUE_KEY)
        .map_err(internal)?;
    let globals = lua.globals();
    let lutra = lua
        .named_registry_value::<mlua::Table>(crate::api::LUTRA_KEY)
        .map_err(internal)?;
    let mut upvalues = Vec::new();
    for index in 1.. {
        let (name, value): (Option<String>, mlua::Value) =
            get_upvalue.call((f.clone(), index)).map_err(internal)?;
        let Some(name) = name else { break };
        let binding = match &value {
            mlua::Value::Table(t) if t.to_pointer() == globals.to_pointer() => Upvalue::Globals,
            mlua::Value::Table(t) if t.to_pointer() == lutra.to_pointer() => Upvalue::Lutra,
            mlua::Value::Function(g) if g.to_pointer() == f.to_pointer() => Upvalue::Itself,
            _ if name == "_ENV" => {
                return Err((
                    "function",
                    "its _ENV is a local table, not the process's globals; a function sent to another process may use only globals".into(),
                ));
            }
            _ => {
                return Err((
                    "function",
                    format!(
                        "it captures the local '{name}'; a function sent to another process may use only globals: pass '{name}' as an argument instead"
                    ),
                ));
            }
        };
        upvalues.push(binding);
    }
    Ok(upvalues)
}

/// Loads `function` into `lua` and binds its upvalues.
pub(crate) fn load_isolated(lua: &Lua, function: &IsolatedFunction) -> mlua::Result<Function> {
    let loaded = lua
        .load(&function.bytecode[..])
        .set_name(format!("={}", function.origin))
        .set_mode(ChunkMode::Binary)
        .into_function()?;
    // `load` already set the first upvalue to the globals; the rest start as nil.
    if function.upvalues.len() <= 1
        && function
            .upvalues
            .first()
            .is_none_or(|u| *u == Upvalue::Globals)
    {
        return Ok(loaded);
    }
    let set_upvalue: Function = lua.named_registry_value(SETUPVALUE_KEY)?;
    for (index, binding) in function.upvalues.iter().enumerate() {
        let value = match binding {
            Upvalue::Globals => mlua::Value::Table(lua.globals()),
            Upvalue::Itself => mlua::Value::Function(loaded.clone()),
            Upvalue::Lutra => lua.named_registry_value(crate::api::LUTRA_KEY)?,
        };
        set_upvalue.call::<()>((loaded.clone(), index + 1, value))?;
    }
    Ok(loaded)
}
