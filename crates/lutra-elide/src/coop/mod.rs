//! Cooperative locks and priority without inversion (Rossbach et al., "TxLinux:
//! Using and Managing Hardware Transactional Memory in an Operating System", seed
//! 003: Section 4, cooperative transactional spinlocks, and Section 6, priority).
//!
//! A [`CoopLock`] protects one critical section sometimes by a transaction and
//! sometimes by mutual exclusion. [`CoopLock::optimistic`] runs it as a transaction,
//! many holders at once; a holder that needs exclusion — I/O ([`CoopTx::io`]), a
//! nested exclusive entry, an explicit [`CoopTx::need_exclusive`] — restarts and
//! runs again exclusively. [`CoopLock::exclusive`] takes the lock at once and
//! aborts the transactional holders inside. Inside a transaction, locks nest
//! ([`CoopLock::nested`]) and flatten into the outermost transaction.
//!
//! | file | job |
//! |------|-----|
//! | `lock.rs` | the lock's two words and how an attempt enters ([`CoopLock`], [`Mode`]) |
//! | `driver.rs` | outermost and nested sections ([`Driver`], `optimistic`, `exclusive`, `nested`) |
//! | `need.rs` | the exclusion need: restart exclusively ([`CoopTx`]) |
//! | `inversion.rs` | inversions decided by a contention manager ([`CountingManager`]) |
//! | `escalate.rs` | validation losses and escalation past them, per transaction and per task ([`ValidationEscalation`], [`TaskMemory`]) |
//!
//! # The paper's Table 2, and what Lutra does
//! What happens when each lock function is called by each kind of thread. A
//! "transactional thread" is code already inside a transaction.
//!
//! | caller | `spin_lock` (paper) | `cx_exclusive` | `cx_optimistic` |
//! |--------|---------------------|----------------|-----------------|
//! | non-transactional | critical region locked; always gets exclusive access, kicks transactional threads out (they may re-enter) | critical region locked; defers to the contention manager to decide whether it may preempt the transactional threads inside | critical region transactional, many transactional threads inside; one that needs exclusion restarts and reverts to `cx_exclusive` |
//! | transactional | critical region transactional; one thread at a time (conflicts on the lock variable); no good way to do I/O | reverts the outer transaction to mutual exclusion | as above, nested: flattened into the outer transaction |
//!
//! In Lutra (software TM, invisible reads):
//!
//! | caller | [`CoopLock::exclusive`] / [`CoopLock::nested_exclusive`] | [`CoopLock::optimistic`] / [`CoopLock::nested`] |
//! |--------|------------------------------|-----------------------------|
//! | non-transactional | an irrevocable transaction closes the lock's door (optimistic entrants wait outside) and writes the lock word: optimistic updaters inside cannot commit meanwhile (the commit gate) and fail validation after; optimistic readers inside serialize before it. It always wins: with invisible reads the manager never sees a reader, as MetaTM always favours the non-transactional side of an asymmetric conflict | a transaction that waits (polling the door, not reading the lock word) until no exclusive section runs, then keeps the lock word in its read set; many at once; an exclusion need restarts it exclusively, once |
//! | transactional | restarts the outermost transaction exclusively (irrevocable from its start), unless it already is | the lock joins the running transaction (flat nesting), in its mode; an exclusion need at any depth restarts the outermost |
//!
//! A `spin_lock` inside a transaction has no counterpart: blocking inside a
//! transaction is refused ([`lutra_stm::ensure_may_block`]).
//!
//! # Invariants
//! - A section's mode is its attempt's: exclusive exactly when irrevocable. The engine
//!   carries "restart irrevocable" from one attempt to the next, so an exclusion need
//!   restarts the outermost transaction exclusively whoever started it.
//! - An exclusive section runs once (unless it aborts explicitly): I/O in it is never
//!   repeated. Data stays instrumented in it, so concurrent readers keep opacity (a
//!   plain, uninstrumented critical section would let them commit torn reads).
//! - Only the outermost level of a section holds its lock's door; see `lock.rs` for
//!   the words and `driver.rs` for who opens the door again.
//!
//! # Protocol
//! 1. The outermost section runs a transaction; each attempt enters the lock in its
//!    mode (`driver.rs`, `lock.rs`).
//! 2. Optimistic: wait for the door without transactional reads, read the lock word,
//!    run the body; commit as any transaction.
//! 3. An exclusion need: restart irrevocable (`need.rs`); step 1 then closes the door
//!    and writes the lock word.
//! 4. After the commit, the door opens again.
//!
//! # Priority without inversion (Section 6)
//! The engine's [`Priority`](lutra_stm::cm::Priority) manager (priority, then size,
//! then age: TxLinux's os_prio) decides every conflict it sees in favour of the
//! higher priority; [`CountingManager`] counts how often a manager let the higher
//! priority lose. Invisible reads hide read-write conflicts from any manager (the
//! reader fails validation); [`ValidationEscalation`] counts those and makes a
//! high-priority transaction that keeps losing them irrevocable. With a
//! [`TaskMemory`] it also remembers, per scheduler task ([`TaskIdentity`]), a
//! high-priority task that lost once, and starts its next transactions irrevocable
//! for a window that doubles with each loss and halves with clean optimistic
//! commits: the first loss of each transaction is then avoided too.

mod driver;
mod escalate;
mod inversion;
mod lock;
mod need;

pub use driver::Driver;
pub use escalate::{TaskIdentity, TaskKey, TaskMemory, ValidationEscalation, ValidationLosses};
pub use inversion::{CountingManager, Decisions};
pub use lock::{CoopLock, Mode};
pub use need::CoopTx;
