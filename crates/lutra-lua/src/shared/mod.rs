//! Shared tables (Guild's special shareable objects, seed 002): tables stored in the
//! engine, reachable from every process that holds a handle, changed only by
//! transactions.
//!
//! - `table.rs`: the storage (an index `TVar` and one `TVar` per key) and its
//!   conflict behaviour.
//! - `value.rs`: what may be stored and used as a key, converted from and to Lua.
//! - `handle.rs`: the Lua face (a userdata with `__index`, `__newindex`, `__len`,
//!   `__pairs`), each access run in the process's current transaction or as its own.

pub(crate) mod handle;
pub(crate) mod table;
pub(crate) mod value;

pub(crate) use handle::SharedHandle;
pub use table::SharedTable;
pub use value::{Key, Stored};
