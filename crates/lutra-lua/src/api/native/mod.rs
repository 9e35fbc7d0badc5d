//! Native fast paths of the blocking message calls — `ch:send`, `ch:receive`,
//! `luaproc.send`, `luaproc.receive`, `p:send`, `lutra.receive` — as
//! `lua_CFunction`s standing in front of the Lua functions of `prelude.lua` and
//! `luaproc.lua`, so that a message costs no mlua conversion, no Lua loop and no
//! label built per call.
//!
//! # Protocol
//! 1. A native call handles the common case itself: a process in its slice (not a
//!    host thread) whose coroutine can yield, outside `lutra.atomic`, a live channel
//!    or process, values that are scalars or handles (`scalar.rs`). In any other
//!    case, before any side effect, it calls the Lua function it stands in front of
//!    (its *fallback*) with the same arguments and answers what that answers (errors
//!    included). Every call enters and continues through one generic pair of
//!    functions (`call.rs`); what differs per call is its `MessageCall`.
//! 2. To wait, it registers its waker and notes what it waits on as the Lua loop does
//!    (`channel/core.rs`'s protocol), then yields `PARK` with `lua_yieldk`: the
//!    yield travels up as the Lua loop's yield does (the prelude's relay, the task),
//!    and the continuation polls again once the process is resumed. On the slice's
//!    main coroutine, whose yield goes straight to the task, it marks the context's
//!    `native_park` and yields no values instead (`process/resume.rs`), its frame
//!    left as it is (the continuation finds a value it is resumed with on the
//!    stack's top, `PARKED_IN_PLACE` in the context's `park_top`). Resumed with
//!    `CANNOT` (a coroutine resumed from a C function that cannot yield), the call
//!    stops waiting and raises the Lua loop's error.
//! 3. Errors are raised at the caller's position (`luaL_where(L, 1)`), with the Lua
//!    loop's wording (both take their labels and texts from `api/texts.rs`); answers
//!    have the Lua functions' shapes.
//!
//! # Invariants
//! - Nothing Rust owns is alive when a native function leaves by `lua_error` or
//!   `lua_yieldk` (both longjmp): each step decides in safe code what to do (an
//!   `Action`) and `perform` does it with plain values only (`perform.rs`).
//! - Upvalues of every native closure: 1 the fallback, 2 `CANNOT`, 3
//!   `raw.take_pending`, 4 (luaproc) the named-channel cache.
//! - A native call finds its process's context in the extra space of the running
//!   thread, else in the slice's thread-local (`process/state.rs`). Only a process's
//!   state has its threads' extra space defined: in a host's state every native
//!   closure is `host_fallback`, which calls the fallback at once (as the others
//!   do outside a slice, where a host's code always runs).
//! - A light userdata as the user value of a full userdata is a channel handle's
//!   address (`channel/handle.rs`), or a process handle's with its low bit set
//!   (`process/handle.rs`): Lua code cannot set one, nor change a handle's
//!   (`debug.setuservalue` is guarded, `handles.rs`).
//! - A native call keeps nothing on its stack across a wait (mlua's `Thread::resume`
//!   empties it when the main coroutine yielded): what the continuation needs is in
//!   the context's `parked` (the channel, kept alive there), its `native_wait` (the
//!   wait, noted by the park) and the continuation's `ctx` (a send's sequence). A
//!   process parks in at most one native call at a time; its continuation takes
//!   `parked` back (`native_wait` stays, for the next park on the same channel).
//!
//! # Files
//! | file | job |
//! |---|---|
//! | `call.rs` | the one native entry and continuation, generic over a [`call::MessageCall`] |
//! | `channel.rs`, `mailbox.rs`, `luaproc.rs` | each API's send and receive as a `MessageCall` |
//! | `wait.rs` | the steps every call shares: begin a send, try a receive, park, end a wait |
//! | `handles.rs` | the caller's context, the channel or process behind a handle |
//! | `perform.rs` | doing a call's decision on the Lua stack (answer, park, raise, fallback) |
//! | `scalar.rs` | messages of scalars and handles, exported and pushed without mlua |
//! | `install.rs` | making the native closures and putting them in front of the Lua API |

mod call;
mod channel;
mod handles;
mod install;
mod luaproc;
mod mailbox;
mod perform;
pub(crate) use perform::returned;
mod scalar;
mod wait;

pub(crate) use handles::{HandleObject, prepare_last_handle};
pub(crate) use install::install;
pub(crate) use perform::raise;

use std::ffi::c_int;

/// Upvalue positions (module invariants).
const FALLBACK: c_int = 1;
const CANNOT: c_int = 2;
const TAKE_PENDING: c_int = 3;
const NAMED: c_int = 4;
