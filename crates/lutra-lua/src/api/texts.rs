//! Every text a message call shows a user — the labels of its waits (in errors and
//! deadlock reports) and its errors — written once. The native fast paths
//! (`native/`), the raw functions (`channel.rs`, `process.rs`, `host.rs`) and the
//! Lua loops of `prelude.lua` and `luaproc.lua` all take them from here: Lua code
//! through `raw.wait_labels` (the labels' first words, a table) and `raw.text(name,
//! ...)` (a text by its name in [`TEXTS`], its holes filled with the arguments, made
//! the first time an error needs it).
//!
//! # Invariants
//! - A label is a wait's kind (one of the `*_ON`/`*_TO` words below) followed by what
//!   it waits on: a channel or process as `tostring` shows it, or a luaproc channel's
//!   name in single quotes ([`label`], [`named_label`]).
//! - A [`Text`] has one `{}` per argument; Lua gets the same bytes as Rust (names
//!   that are not UTF-8 included).

use crate::api::{RawEntry, function};
use mlua::{Lua, LuaString, Variadic};
use std::fmt::Display;

/// The raw values of this module (made on first use, see [`super::RawEntry`]):
/// `wait_labels` (name → first words) and `text(name, ...)`.
pub(super) const RAW: &[RawEntry] = &[
    ("wait_labels", |lua| {
        let labels = lua.create_table_with_capacity(0, WAIT_LABELS.len())?;
        for (name, words) in WAIT_LABELS {
            labels.raw_set(*name, *words)?;
        }
        Ok(mlua::Value::Table(labels))
    }),
    ("text", |lua| function(lua, text)),
];

/// `text(name, ...)`: the text called `name` with its holes filled by the other
/// arguments (strings); an unknown name is an error (a bug in the runtime's Lua).
fn text(lua: &Lua, (name, args): (LuaString, Variadic<LuaString>)) -> mlua::Result<LuaString> {
    let Some(text) = by_name(&name.as_bytes()) else {
        return Err(mlua::Error::runtime(format!(
            "internal error in Lutra: no text called '{}'",
            name.to_string_lossy()
        )));
    };
    let args: Vec<_> = args.iter().map(|arg| arg.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(|arg| &**arg).collect();
    lua.create_string(text.fill_bytes(&args))
}

/// A wait in `ch:send` ("send on channel#3").
pub(crate) const SEND_ON: &str = "send on ";
/// A wait in `ch:receive`, `ch:try_receive` or `ch:values`.
pub(crate) const RECEIVE_ON: &str = "receive on ";
/// A wait in `p:send` ("send to process#2 (worker.lua:4)").
pub(crate) const SEND_TO: &str = "send to ";
/// A wait in `lutra.receive` (the whole label).
pub(crate) const MAILBOX: &str = "its mailbox (lutra.receive)";
/// A wait in `luaproc.send` ("luaproc.send on channel 'jobs'").
pub(crate) const LUAPROC_SEND: &str = "luaproc.send on channel ";
/// A wait in `luaproc.receive`.
pub(crate) const LUAPROC_RECEIVE: &str = "luaproc.receive on channel ";

/// The labels' first words as Lua reads them (`raw.wait_labels`).
pub(crate) const WAIT_LABELS: &[(&str, &str)] = &[
    ("send_on", SEND_ON),
    ("receive_on", RECEIVE_ON),
    ("send_to", SEND_TO),
    ("mailbox", MAILBOX),
    ("luaproc_send", LUAPROC_SEND),
    ("luaproc_receive", LUAPROC_RECEIVE),
];

/// How a channel shows itself (`tostring(ch)`).
pub(crate) fn channel_name(id: u64) -> String {
    format!("channel#{id}")
}

/// How a process shows itself (`tostring(p)`, as `process/handle.rs` writes it).
pub(crate) fn process_name(id: u64, origin: impl Display) -> String {
    format!("process#{id} ({origin})")
}

/// The label of a wait of kind `what` on `object` (as `tostring` shows it).
pub(crate) fn label(what: &str, object: impl Display) -> String {
    format!("{what}{object}")
}

/// The label of a wait of kind `what` on the luaproc channel called `name`.
pub(crate) fn named_label(what: &str, name: &str) -> String {
    format!("{what}'{name}'")
}

/// A text with one hole (`{}`) per argument.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Text(&'static str);

impl Text {
    /// The text with its holes filled by `args`, in order (a hole left without an
    /// argument stays empty).
    pub(crate) fn fill(self, args: &[&dyn Display]) -> String {
        let mut out = String::with_capacity(self.0.len() + 16);
        let mut args = args.iter();
        for (i, part) in self.0.split("{}").enumerate() {
            if i > 0
                && let Some(arg) = args.next()
            {
                out.push_str(&arg.to_string());
            }
            out.push_str(part);
        }
        out
    }

    /// As [`fill`](Self::fill), with arguments of any bytes (Lua strings).
    pub(crate) fn fill_bytes(self, args: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.0.len() + 16);
        let mut args = args.iter();
        for (i, part) in self.0.split("{}").enumerate() {
            if i > 0
                && let Some(arg) = args.next()
            {
                out.extend_from_slice(arg);
            }
            out.extend_from_slice(part.as_bytes());
        }
        out
    }
}

/// A send whose channel was closed before its message was received (the channel).
pub(crate) const CLOSED_BEFORE_RECEIVED: Text =
    Text("send on {}: the channel was closed before the message was received");
/// A send on a closed channel (the channel).
pub(crate) const SEND_CLOSED: Text = Text("send on {}: the channel is closed");
/// A receive on a closed and drained channel (the channel).
pub(crate) const RECEIVE_CLOSED: Text = Text("receive on {}: the channel is closed");
/// A send to a process that has finished (the send's label: `send to process#2`).
pub(crate) const PROCESS_FINISHED: Text = Text("cannot {}: it has finished");
/// A blocking call inside `lutra.atomic` (the wait's label).
pub(crate) const CANNOT_BLOCK_IN_ATOMIC: Text = Text(
    "cannot block on {} inside lutra.atomic: a transaction cannot wait for another process \
     (use lutra.retry() to wait for a change to shared tables)",
);
/// A blocking call inside a C function that cannot yield (the wait's label).
pub(crate) const CANNOT_BLOCK_IN_C: Text = Text(
    "cannot block on {} here: the call runs inside a C function (a metamethod, a \
     table.sort comparator, string.gsub's callback...) that cannot yield",
);
/// A blocking call in a coroutine resumed from a C function (the wait's label).
pub(crate) const CANNOT_REACH_SCHEDULER: Text = Text(
    "cannot block on {} here: this coroutine was resumed from a C function that cannot \
     yield, so the scheduler cannot be reached",
);
/// `luaproc.send` on a channel deleted while it waited (the name).
pub(crate) const LUAPROC_SEND_DESTROYED: Text =
    Text("channel '{}' destroyed while waiting for receiver");
/// `luaproc.receive` on a channel deleted while it waited (the name).
pub(crate) const LUAPROC_RECEIVE_DESTROYED: Text =
    Text("channel '{}' destroyed while waiting for sender");
/// A luaproc call on a name that no channel has (the name).
pub(crate) const LUAPROC_NO_CHANNEL: Text = Text("channel '{}' does not exist");

/// Every text by the name Lua asks for it with (`raw.text(name, ...)`).
pub(crate) const TEXTS: &[(&str, Text)] = &[
    ("closed_before_received", CLOSED_BEFORE_RECEIVED),
    ("send_closed", SEND_CLOSED),
    ("receive_closed", RECEIVE_CLOSED),
    ("process_finished", PROCESS_FINISHED),
    ("cannot_block_in_atomic", CANNOT_BLOCK_IN_ATOMIC),
    ("cannot_block_in_c", CANNOT_BLOCK_IN_C),
    ("cannot_reach_scheduler", CANNOT_REACH_SCHEDULER),
    ("luaproc_send_destroyed", LUAPROC_SEND_DESTROYED),
    ("luaproc_receive_destroyed", LUAPROC_RECEIVE_DESTROYED),
    ("luaproc_no_channel", LUAPROC_NO_CHANNEL),
];

/// The text called `name` ([`TEXTS`]), if there is one.
pub(crate) fn by_name(name: &[u8]) -> Option<Text> {
    TEXTS
        .iter()
        .find(|(key, _)| key.as_bytes() == name)
        .map(|(_, text)| *text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_are_filled_in_order() {
        let text = Text("a {} b {} c");
        assert_eq!(text.fill(&[&1, &"x"]), "a 1 b x c");
        assert_eq!(text.fill_bytes(&[b"1", b"\xff"]), b"a 1 b \xff c");
        assert_eq!(text.fill(&[&1]), "a 1 b  c");
    }

    #[test]
    fn every_text_is_found_by_its_name() {
        for (name, text) in TEXTS {
            assert_eq!(by_name(name.as_bytes()).unwrap().0, text.0);
        }
        assert!(by_name(b"no such text").is_none());
    }
}
