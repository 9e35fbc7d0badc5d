//! The synchronisation primitives the engine is built from.
//!
//! Normally these are `std`'s. With the `shuttle` feature they are shuttle's, so the
//! model checks in `tests/model.rs` explore the engine's own commit, validation and
//! wake-up protocols rather than a copy of them; shuttle explores interleavings, with
//! every atomic sequentially consistent. With the `loom` feature they are loom's, so
//! `tests/loom.rs` also explores the reorderings the C++/Rust memory model allows for
//! each `Ordering` the engine chose: a load may return an older store unless some
//! happens-before edge forbids it.
//!
//! Transactional data words ([`data`]) are the program's memory, not the engine's:
//! `std` atomics normally and under shuttle, loom atomics under loom (so that a
//! reader may see a stale value, and the read protocol's fences must make up for it).
//! If both features are on, loom wins.
//!
//! Under loom, two of loom's own gaps are made up for here, each where it bites (see
//! [`Record`] and the engine's atomics below): both make loom forbid executions that
//! the memory model forbids too, and would otherwise fail the checks falsely. A third
//! gap is not (`tests/loom.rs` says which check it rules out).
//!
//! Every `cfg` on a model checker belongs here, not in the engine's logic.

#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::sync::Mutex;
#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::thread;
#[cfg(not(any(feature = "shuttle", feature = "loom")))]
pub(crate) use std::thread_local;

#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::sync::Mutex;
#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::thread;
#[cfg(all(feature = "shuttle", not(feature = "loom")))]
pub(crate) use shuttle::thread_local;

#[cfg(feature = "loom")]
pub(crate) use loom::sync::Mutex;
#[cfg(feature = "loom")]
pub(crate) use loom::sync::atomic::{Ordering, fence};
#[cfg(feature = "loom")]
pub(crate) use loom::thread;
#[cfg(feature = "loom")]
pub(crate) use loom_atomics::{AtomicBool, AtomicU64, AtomicUsize};

/// `thread_local!` on loom, whose macro takes no `const { .. }` initialiser: the
/// engine's are unwrapped (loom runs each initialiser once per thread and execution).
#[cfg(feature = "loom")]
macro_rules! loom_thread_local {
    ($($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr };)*) => {
        $(loom::thread_local!($(#[$attr])* $vis static $name: $t = $init;);)*
    };
}
#[cfg(feature = "loom")]
pub(crate) use loom_thread_local as thread_local;

/// The engine's atomics under loom: loom's, whose initial value is also stored
/// sequentially consistent.
///
/// Loom lets a `SeqCst` load skip an older `SeqCst` store when a newer one exists, as
/// in the C++ memory model's total order `S`, but takes an atomic's initial value for
/// a release store: so a `SeqCst` load may still return the initial value after a
/// `SeqCst` store that, in `S`, came before it (a false alarm loom's README lists
/// under "SeqCst accesses"). In C++ and Rust the initialisation happens before that
/// store, and a `SeqCst` load cannot return it. Storing the initial value again with
/// `SeqCst`, before the atomic is shared, gives loom that rule; nothing else changes.
/// Without it, the solo gate's Dekker pair (`solo.rs`: a CAS then a load on each
/// side, all `SeqCst`) fails under loom in executions no machine has. (Loom's rule
/// skips only older `SeqCst` stores; the memory model skips every store older, in
/// modification order, than a `SeqCst` store that precedes the load in `S`: that gap
/// remains.)
#[cfg(feature = "loom")]
mod loom_atomics {
    use loom::sync::atomic::Ordering;

    macro_rules! initialised_seq_cst {
        ($name:ident, $value:ty, $zero:expr) => {
            pub(crate) struct $name(loom::sync::atomic::$name);

            impl $name {
                pub(crate) fn new(value: $value) -> Self {
                    let atomic = loom::sync::atomic::$name::new(value);
                    atomic.store(value, Ordering::SeqCst);
                    Self(atomic)
                }
            }

            impl Default for $name {
                fn default() -> Self {
                    Self::new($zero)
                }
            }

            impl std::ops::Deref for $name {
                type Target = loom::sync::atomic::$name;

                fn deref(&self) -> &Self::Target {
                    &self.0
                }
            }
        };
    }

    initialised_seq_cst!(AtomicBool, bool, false);
    initialised_seq_cst!(AtomicU64, u64, 0);
    initialised_seq_cst!(AtomicUsize, usize, 0);
}

/// One round of a busy wait. Under loom it yields to the model's scheduler: loom
/// explores a thread that spins without yielding forever (it never preempts a
/// thread on its own), and the model would never end.
#[inline(always)]
pub(crate) fn spin_loop() {
    #[cfg(not(feature = "loom"))]
    std::hint::spin_loop();
    #[cfg(feature = "loom")]
    loom::hint::spin_loop();
}

/// An ownership record's word (`orec.rs`).
#[cfg(not(feature = "loom"))]
pub(crate) use self::AtomicUsize as Record;

/// An ownership record's word under loom: loom's `AtomicUsize`, except that a store is
/// a swap.
///
/// Loom 0.7 does not order a plain store after a read-modify-write of another thread
/// that the storing thread has not seen, although the RMW read the value just before
/// its own in the modification order (loom issues #254 and #389, fix proposed in
/// pull request #391). So a `retry` waiter whose re-read (`waiting.rs`, step 2: a
/// `fetch_add(0)`) caught a committer's lock could go on reading that lock after the
/// committer released the record, and loop forever in executions no machine has. A
/// swap reads the latest value, so loom places it after every RMW it could follow.
/// Its cost in faithfulness: the release store continues the release sequences of
/// other threads' RMWs on the record (a plain store ends them), which no `ORDERING:`
/// argument of the engine relies on.
#[cfg(feature = "loom")]
pub(crate) struct Record(AtomicUsize);

#[cfg(feature = "loom")]
impl Record {
    pub(crate) fn new(value: usize) -> Self {
        Self(AtomicUsize::new(value))
    }

    pub(crate) fn load(&self, order: Ordering) -> usize {
        self.0.load(order)
    }

    pub(crate) fn store(&self, value: usize, order: Ordering) {
        self.0.swap(value, order);
    }

    pub(crate) fn fetch_add(&self, value: usize, order: Ordering) -> usize {
        self.0.fetch_add(value, order)
    }

    pub(crate) fn compare_exchange(
        &self,
        current: usize,
        new: usize,
        success: Ordering,
        failure: Ordering,
    ) -> Result<usize, usize> {
        self.0.compare_exchange(current, new, success, failure)
    }
}

/// Transactional data words: what a `TVar` holds and what the engine's reads, writes
/// and write-back cast an address to.
pub(crate) mod data {
    #[cfg(not(feature = "loom"))]
    pub(crate) use std::sync::atomic::AtomicUsize;

    #[cfg(feature = "loom")]
    pub(crate) use loom::sync::atomic::AtomicUsize;

    /// Runs `f` on the value of a word nobody else can reach (`&mut`).
    #[inline(always)]
    pub(crate) fn exclusive<R>(word: &mut AtomicUsize, f: impl FnOnce(&mut usize) -> R) -> R {
        #[cfg(not(feature = "loom"))]
        return f(word.get_mut());
        #[cfg(feature = "loom")]
        return word.with_mut(f);
    }
}

/// Locks `mutex`, ignoring poisoning: every structure the engine guards with a mutex
/// is left consistent before any code that could panic runs under it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> impl std::ops::DerefMut<Target = T> + '_ {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
