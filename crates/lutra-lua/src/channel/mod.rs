//! Channels: FIFO message queues between processes, rendezvous by default
//! (`capacity` 0, as luaproc's), buffered otherwise, closable, selectable.

mod core;
pub(crate) mod handle;
mod wait_list;

pub use core::{Channel, ReceivePoll, SendPoll};
pub(crate) use handle::ChannelHandle;
pub(crate) use wait_list::{WaitList, Waiter};
