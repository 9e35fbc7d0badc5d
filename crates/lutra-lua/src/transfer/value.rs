//! The transferable values themselves.

use crate::channel::Channel;
use crate::process::ProcessCore;
use crate::transfer::freeze::FrozenRef;
use crate::transfer::function::IsolatedFunction;
use crate::transfer::string::MessageString;
use std::sync::Arc;

/// One transferable value.
#[derive(Debug, Clone)]
pub enum Value {
    /// `nil`.
    Nil,
    /// A boolean.
    Boolean(bool),
    /// An integer (kept distinct from floats).
    Integer(i64),
    /// A float.
    Number(f64),
    /// A string (any bytes).
    String(MessageString),
    /// A deep-copied table: an index into [`Message::tables`] (or, inside a frozen
    /// value, into the frozen graph's nodes).
    Table(usize),
    /// A channel, shared by reference.
    Channel(Arc<Channel>),
    /// A process handle, shared by reference.
    Process(Arc<ProcessCore>),
    /// A function that captures nothing but globals (and itself), as bytecode.
    Function(Arc<IsolatedFunction>),
    /// A frozen (deeply immutable) table, shared by reference.
    Frozen(FrozenRef),
    /// A shared table (stored in the engine), shared by reference.
    Shared(Arc<crate::shared::SharedTable>),
}

/// A message's values: up to two inline (most messages), more on the heap.
pub type Values = smallvec::SmallVec<[Value; 2]>;

/// A list of values sent as one message, with the tables they contain.
#[derive(Debug, Clone, Default)]
pub struct Message {
    /// The values, in order.
    pub values: Values,
    /// The copied tables: each a list of key/value pairs.
    pub tables: Vec<Vec<(Value, Value)>>,
}

impl Message {
    /// A message of plain values (no tables).
    pub fn of(values: impl Into<Values>) -> Self {
        Self {
            values: values.into(),
            tables: Vec::new(),
        }
    }
}
