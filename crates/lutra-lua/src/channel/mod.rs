//! Channels: FIFO message queues between processes, rendezvous by default
//! (`capacity` 0, as luaproc's), buffered otherwise, closable, selectable.
//!
//! - `core`: one channel's state and its never-blocking operations;
//! - `registry`: luaproc's named channels;
//! - `wait_list`: who waits on an event, and how to wake them;
//! - `handle`: the Lua userdata of a channel.

mod core;
pub(crate) mod handle;
mod registry;
mod wait_list;

pub use core::{Channel, ReceivePoll, SendPoll};
pub(crate) use handle::ChannelHandle;
pub use registry::Registry;
pub(crate) use wait_list::{WaitList, Waiter};
