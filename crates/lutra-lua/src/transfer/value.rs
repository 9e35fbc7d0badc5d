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
///
/// It is kept small (64 bytes): a message moves several times on its way from a
/// sender's stack to a receiver's, and most messages hold no table.
#[derive(Debug, Clone, Default)]
pub struct Message {
    /// The values, in order.
    pub values: Values,
    /// The copied tables: each a list of key/value pairs.
    pub tables: Tables,
}

impl Message {
    /// A message of plain values (no tables).
    pub fn of(values: impl Into<Values>) -> Self {
        Self {
            values: values.into(),
            tables: Tables::default(),
        }
    }

    /// Whether the message owns nothing to free: no table, its values inline, each a
    /// nil, boolean, number or inline string (no handle, no shared buffer). Dropping
    /// it then does nothing, and [`Message::discard`] skips the destructors.
    #[inline]
    pub fn owns_nothing(&self) -> bool {
        self.tables.is_empty()
            && !self.values.spilled()
            && self.values.iter().all(|value| match value {
                Value::Nil | Value::Boolean(_) | Value::Integer(_) | Value::Number(_) => true,
                Value::String(string) => string.is_inline(),
                _ => false,
            })
    }

    /// Drops the message; one that owns nothing ([`Message::owns_nothing`], the common
    /// message of scalars once received) is forgotten instead, without a call through
    /// the destructors of its values.
    #[inline]
    pub fn discard(self) {
        if self.owns_nothing() {
            std::mem::forget(self);
        }
    }
}

/// One copied table: its key/value pairs.
pub type TablePairs = Vec<(Value, Value)>;

/// The copied tables of a [`Message`], read as a slice: none (most messages) in one
/// word and no allocation, any number behind one pointer.
#[derive(Debug, Clone, Default)]
#[allow(
    clippy::box_collection,
    reason = "one word in every message, the vector's three only when there are tables"
)]
pub struct Tables(Option<Box<Vec<TablePairs>>>);

impl Tables {
    /// The tables, as a vector (empty when there are none).
    pub fn into_vec(self) -> Vec<TablePairs> {
        self.0.map(|tables| *tables).unwrap_or_default()
    }
}

impl From<Vec<TablePairs>> for Tables {
    /// These tables; no allocation kept for none.
    fn from(tables: Vec<TablePairs>) -> Self {
        Self((!tables.is_empty()).then(|| Box::new(tables)))
    }
}

impl std::ops::Deref for Tables {
    type Target = [TablePairs];

    #[inline]
    fn deref(&self) -> &[TablePairs] {
        match &self.0 {
            Some(tables) => tables,
            None => &[],
        }
    }
}

impl IntoIterator for Tables {
    type Item = TablePairs;
    type IntoIter = std::vec::IntoIter<TablePairs>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a> IntoIterator for &'a Tables {
    type Item = &'a TablePairs;
    type IntoIter = std::slice::Iter<'a, TablePairs>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message stays within one 64-byte block: it moves several times per send.
    #[test]
    fn a_message_is_small() {
        assert_eq!(std::mem::size_of::<Message>(), 64);
    }

    /// Only a message of plain scalars and inline strings owns nothing: one with a
    /// shared string, a handle, a table or values on the heap is dropped for real.
    #[test]
    fn what_a_message_owns() {
        use crate::transfer::MessageString;
        let inline = MessageString::new(b"message");
        let shared = MessageString::new(&[b'x'; 40]);
        assert!(Message::of(vec![Value::Integer(1), Value::String(inline)]).owns_nothing());
        assert!(Message::of(vec![Value::Nil, Value::Number(0.5)]).owns_nothing());
        assert!(!Message::of(vec![Value::String(shared.clone())]).owns_nothing());
        let channel = std::sync::Arc::new(crate::channel::Channel::new(0));
        assert!(!Message::of(vec![Value::Channel(channel.clone())]).owns_nothing());
        assert!(
            !Message::of(vec![Value::Integer(1); 3]).owns_nothing(),
            "on the heap"
        );
        let mut tabled = Message::of(vec![Value::Table(0)]);
        tabled.tables = vec![Vec::new()].into();
        assert!(!tabled.owns_nothing());
        // Discarding frees what is owned: the channel and the buffer are back to one
        // reference each.
        Message::of(vec![Value::Channel(channel.clone())]).discard();
        Message::of(vec![Value::String(shared.clone())]).discard();
        assert_eq!(std::sync::Arc::strong_count(&channel), 1);
        Message::of(vec![Value::Integer(1)]).discard();
    }

    /// Tables round-trip through the one-word form; none allocates nothing.
    #[test]
    fn tables_keep_their_pairs() {
        let none = Tables::from(Vec::new());
        assert!(none.is_empty() && none.0.is_none());
        let pairs = vec![(Value::Integer(1), Value::Boolean(true))];
        let tables = Tables::from(vec![pairs, Vec::new()]);
        assert_eq!(tables.len(), 2);
        assert!(matches!(
            tables[0][..],
            [(Value::Integer(1), Value::Boolean(true))]
        ));
        assert_eq!(tables.clone().into_vec().len(), 2);
        assert_eq!((&tables).into_iter().count(), 2);
    }
}
