//! What crosses between processes, and how (seed 002, Guild: isolation by copying,
//! moving or sharing).
//!
//! A [`Message`] is the transferable form of a list of Lua values: scalars and strings
//! by value, plain tables deep-copied into a graph (so cycles and shared sub-tables
//! survive), and runtime objects (channels, processes, isolated functions, frozen
//! values, shared tables) by reference.
//!
//! - `export.rs`: Lua values → a message (the rules of what crosses, key paths).
//! - `import.rs`: a message → Lua values of the receiver.
//! - `function.rs`: isolated functions (bytecode, upvalues rebound on import).
//! - `freeze.rs`: `lutra.freeze`, immutable graphs shared by reference.
//! - `moved.rs`: `lutra.move`, markers and the moves committed after a send.
//! - `string.rs`: a string's bytes, inline when short (no allocation).
//! - `transfer.lua`: the Lua side of freeze and move (plain-string errors).
//!
//! # Invariants
//! - A `Message` holds no Lua reference: it is `Send` and can be imported into any
//!   state, any number of times.
//! - `Value::Table(i)` indexes `Message::tables`; every index is in range.
//! - Export either succeeds completely or fails naming the value, its key path and the
//!   reason; the sender's values are left as they were (no move happens).

mod export;
pub(crate) mod freeze;
pub(crate) mod function;
mod import;
pub(crate) mod moved;
mod string;
mod value;

pub(crate) use export::{export, export_pending};
pub use freeze::{FrozenGraph, FrozenRef};
pub(crate) use function::load_isolated;
pub use function::{IsolatedFunction, Upvalue};
pub(crate) use import::import;
pub use string::{INLINE_MAX, MessageString};
pub use value::{Message, TablePairs, Tables, Value, Values};

/// Why a value cannot cross between processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferError {
    /// Where the value sits, e.g. `argument #2` or `argument #1.config.handler`.
    pub path: String,
    /// What kind of value it is (`coroutine`, `userdata`, `function`…).
    pub kind: String,
    /// Why it is refused, and what to do instead.
    pub reason: String,
}

impl std::fmt::Display for TransferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot transfer {} at {}: {}",
            self.kind, self.path, self.reason
        )
    }
}

impl std::error::Error for TransferError {}
