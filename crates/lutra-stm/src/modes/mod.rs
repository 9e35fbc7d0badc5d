//! The ways an attempt runs beside the instrumented one (`mode.rs` has the table).
//!
//! - `straight.rs`: the straight begin and commit, the common case that needs no call.
//! - `solo.rs`: solo attempts, uninstrumented while their descriptor is the engine's
//!   only one; `solo_blocks.rs`: the blocks they free, released at their commit.
//! - `blocks.rs`: the blocks an instrumented attempt frees, retired by a straight commit.
//! - `irrevocable.rs`: attempts that will not abort; `gate.rs`: the commit gate they
//!   hold.
//! - `serial.rs`: irrevocable attempts that run alone.
//! - `fallback.rs`: when the engine makes a transaction irrevocable.
//! - `read_only.rs`: attempts on the program's read-only hint, which keep no read set.
//! - `inplace.rs`: boxed values lent by reference and changed in place.

pub(crate) mod blocks;
pub(crate) mod fallback;
pub(crate) mod gate;
pub(crate) mod inplace;
pub(crate) mod irrevocable;
pub(crate) mod read_only;
pub(crate) mod serial;
pub(crate) mod solo;
pub(crate) mod solo_blocks;
pub(crate) mod straight;
