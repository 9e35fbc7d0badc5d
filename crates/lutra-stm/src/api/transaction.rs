//! The safe face of a running attempt, handed to the closure of
//! [`Stm::atomically`](crate::Stm::atomically).

use crate::api::tvar::{TVar, Transactable};
use crate::attempt::abort::{Abort, AbortReason};
use crate::attempt::descriptor::TxDescriptor;
use crate::global::orec::PerWord;
use std::alloc::Layout;
use std::ptr::NonNull;

/// A running transaction attempt. Every access returns `Err(Abort)` once the attempt
/// is doomed; return that error with `?` and the engine rolls back and re-runs the
/// closure (or, after [`Transaction::retry`], waits first).
///
/// Work done inside the closure besides transactional accesses (printing, changing
/// local variables) happens again on every re-run: keep it out, or make the
/// transaction irrevocable first ([`Transaction::become_irrevocable`]).
pub struct Transaction<'d> {
    pub(crate) desc: &'d mut TxDescriptor,
}

impl Transaction<'_> {
    /// Reads `var`.
    ///
    /// # Errors
    /// The abort that dooms the attempt (a conflict, a kill, an earlier error).
    #[inline]
    pub fn read<T: Transactable>(&mut self, var: &TVar<T>) -> Result<T, Abort> {
        let word = self
            .desc
            .core
            .load::<PerWord>(&self.desc.stm, var.as_word_ptr() as usize)?;
        // SAFETY: the word holds a value written by `T::into_word` (the `TVar`
        // invariant); a boxed value read in a snapshot stays allocated while this
        // attempt's epoch is announced.
        Ok(unsafe { T::clone_from_word(word) })
    }

    /// Reads `var` and lends its value to `body` by reference, together with the
    /// transaction. Nothing is cloned, so reading a boxed value (an `Arc`, a map)
    /// writes no shared memory, where [`Transaction::read`]'s clone of an `Arc` would
    /// write its reference count. The reference cannot outlive `body`.
    ///
    /// ```
    /// use lutra_stm::{Stm, TVar};
    /// let stm = Stm::default();
    /// let names = TVar::new(vec![String::from("ada"), String::from("lin")]);
    /// let longest = stm.atomically(|tx| {
    ///     tx.read_with(&names, |names, _| Ok(names.iter().map(String::len).max()))
    /// });
    /// assert_eq!(longest, Some(3));
    /// ```
    ///
    /// # Errors
    /// As [`Transaction::read`], and whatever `body` returns.
    #[inline]
    pub fn read_with<T: Transactable, R>(
        &mut self,
        var: &TVar<T>,
        body: impl FnOnce(&T, &mut Transaction<'_>) -> Result<R, Abort>,
    ) -> Result<R, Abort> {
        let word = self
            .desc
            .core
            .load::<PerWord>(&self.desc.stm, var.as_word_ptr() as usize)?;
        if !T::BOXED {
            // SAFETY: the word holds a value written by `T::into_word`; an inline value
            // owns nothing, so this copy is the value itself.
            let value = unsafe { T::clone_from_word(word) };
            return body(&value, self);
        }
        // SAFETY: a boxed word is the address of a live `T` (the `Transactable`
        // contract). It stays allocated until `body` returns and is not changed
        // meanwhile: a published value never is, and `lent` keeps
        // `update_in_place` from changing a buffered one (see `inplace.rs`).
        let value = unsafe { &*(word as *const T) };
        self.desc.core.mark_not_straight();
        self.desc.core.lent += 1;
        let result = body(value, self);
        self.desc.core.lent -= 1;
        result
    }

    /// Changes the value of `var` in place with `change`, and returns what `change`
    /// returns. The first change in an attempt (or in an `or_else` branch) writes a
    /// private clone of the value; later ones change that clone without copying it
    /// again. So a transaction that changes a large value many times (a persistent map
    /// it inserts into) costs memory in proportion to its changes, not a copy per
    /// change. Others see the value when the transaction commits, as after
    /// [`Transaction::write`].
    ///
    /// ```
    /// use lutra_stm::{Stm, TVar};
    /// let stm = Stm::default();
    /// let log = TVar::new(Vec::<u32>::new());
    /// stm.atomically(|tx| (0..1000).try_for_each(|i| tx.update_in_place(&log, |log| log.push(i))));
    /// assert_eq!(stm.atomically(|tx| tx.read_with(&log, |log, _| Ok(log.len()))), 1000);
    /// ```
    ///
    /// # Errors
    /// As [`Transaction::read`].
    pub fn update_in_place<T: Transactable, R>(
        &mut self,
        var: &TVar<T>,
        change: impl FnOnce(&mut T) -> R,
    ) -> Result<R, Abort> {
        self.desc.core.check_usable(&self.desc.stm)?;
        let addr = var.as_word_ptr() as usize;
        if T::BOXED
            && let Some(word) = self.desc.core.private_value(addr)
        {
            // SAFETY: `word` is this attempt's private value for `var` (see
            // `inplace.rs`): a live `Box<T>` that no other transaction can reach and
            // that no reference lent by `read_with` aliases now.
            return Ok(change(unsafe { &mut *(word as *mut T) }));
        }
        let mut value = self.read(var)?;
        let result = change(&mut value);
        self.write(var, value)?;
        if T::BOXED {
            self.desc.core.note_private(addr);
        }
        Ok(result)
    }

    /// Writes `value` to `var` (visible to others once the transaction commits).
    ///
    /// # Errors
    /// As [`Transaction::read`].
    pub fn write<T: Transactable>(&mut self, var: &TVar<T>, value: T) -> Result<(), Abort> {
        self.desc.core.check_usable(&self.desc.stm)?;
        let addr = var.as_word_ptr() as usize;
        let word = value.into_word();
        if T::BOXED {
            self.desc.record_tvar_value(word, T::release_word);
            self.desc.store_replacing(addr, word, T::release_word)
        } else {
            self.desc
                .core
                .store::<PerWord>(&self.desc.stm, addr, word, usize::MAX, None)
        }
    }

    /// Replaces the value of `var` with `change(old)`.
    ///
    /// # Errors
    /// As [`Transaction::read`].
    pub fn modify<T: Transactable>(
        &mut self,
        var: &TVar<T>,
        change: impl FnOnce(T) -> T,
    ) -> Result<(), Abort> {
        let old = self.read(var)?;
        self.write(var, change(old))
    }

    /// Abandons this attempt and blocks until another transaction commits a change to
    /// something this attempt read; then the transaction runs again. Use it to wait for
    /// a condition ("queue not empty") without spinning.
    ///
    /// Always returns `Err`: return it with `?`. Inside a transaction that the program
    /// made irrevocable, or in one that read nothing, `retry` is a misuse and
    /// `atomically` panics (an attempt that the engine made irrevocable, after it
    /// outgrew its sets or kept aborting, may retry).
    ///
    /// ```
    /// use lutra_stm::{Stm, TVar};
    /// use std::sync::Arc;
    /// let stm = Stm::default();
    /// let ready = Arc::new(TVar::new(false));
    /// let setter = {
    ///     let (stm, ready) = (stm.clone(), ready.clone());
    ///     std::thread::spawn(move || stm.atomically(|tx| tx.write(&ready, true)))
    /// };
    /// stm.atomically(|tx| if tx.read(&ready)? { Ok(()) } else { tx.retry() });
    /// setter.join().unwrap();
    /// ```
    pub fn retry<T>(&mut self) -> Result<T, Abort> {
        let reason = if !self.desc.may_retry() {
            AbortReason::Misuse
        } else {
            AbortReason::Retry
        };
        Err(self.desc.doom(reason))
    }

    /// Runs `first`; if it calls [`retry`](Transaction::retry), undoes its writes and
    /// runs `second` instead. If both retry, the transaction waits for a change to
    /// anything either read.
    ///
    /// # Errors
    /// As [`Transaction::read`], and `second`'s retry.
    ///
    /// ```
    /// use lutra_stm::{Stm, TVar};
    /// let stm = Stm::default();
    /// let (a, b) = (TVar::new(0u32), TVar::new(5u32));
    /// let taken = stm.atomically(|tx| {
    ///     tx.or_else(
    ///         |tx| { let n = tx.read(&a)?; if n == 0 { tx.retry() } else { tx.write(&a, n - 1).map(|_| "a") } },
    ///         |tx| { let n = tx.read(&b)?; if n == 0 { tx.retry() } else { tx.write(&b, n - 1).map(|_| "b") } },
    ///     )
    /// });
    /// assert_eq!(taken, "b");
    /// ```
    pub fn or_else<T>(
        &mut self,
        first: impl FnOnce(&mut Transaction<'_>) -> Result<T, Abort>,
        second: impl FnOnce(&mut Transaction<'_>) -> Result<T, Abort>,
    ) -> Result<T, Abort> {
        match self
            .desc
            .with_checkpoint(|desc| first(&mut Transaction { desc }))
        {
            Some(result) => result,
            None => second(self),
        }
    }

    /// Aborts this attempt; the transaction runs again (counted as an explicit abort).
    ///
    /// Always returns `Err`: return it with `?`.
    pub fn abort<T>(&mut self) -> Result<T, Abort> {
        Err(self.desc.doom(AbortReason::Explicit))
    }

    /// Makes this transaction irrevocable: it will not abort any more, so it may do
    /// what cannot be undone (I/O). Other updating transactions wait until it ends.
    ///
    /// # Errors
    /// The attempt is doomed; when something it read had already changed, the next
    /// attempt starts irrevocable.
    pub fn become_irrevocable(&mut self) -> Result<(), Abort> {
        self.desc.become_irrevocable()
    }

    /// Abandons this attempt and runs the transaction again irrevocable (alone among
    /// updaters, never aborting): what a cooperative lock does when a critical section
    /// that ran optimistically needs exclusion (seed 003). Unlike
    /// [`become_irrevocable`](Transaction::become_irrevocable), the work done so far
    /// is always discarded and the closure runs again from the start.
    ///
    /// Always returns `Err`: return it with `?`.
    pub fn restart_irrevocable<T>(&mut self) -> Result<T, Abort> {
        Err(self.desc.restart_irrevocable())
    }

    /// Waits, without reading anything transactionally, until `done` holds (see
    /// [`TxDescriptor::wait_until`]).
    ///
    /// # Errors
    /// The abort that dooms this attempt, noticed while waiting.
    pub fn wait_until(&mut self, done: impl FnMut() -> bool) -> Result<(), Abort> {
        self.desc.wait_until(done)
    }

    /// Whether this attempt is irrevocable.
    pub fn is_irrevocable(&self) -> bool {
        self.desc.is_irrevocable()
    }

    /// Whether this attempt is irrevocable only because the engine chose so (see
    /// [`TxDescriptor::is_fallback_irrevocable`]): it may still
    /// [`retry`](Transaction::retry).
    pub fn is_fallback_irrevocable(&self) -> bool {
        self.desc.is_fallback_irrevocable()
    }

    /// Aborted attempts of this transaction before this one.
    pub fn aborts_so_far(&self) -> u32 {
        self.desc.aborts_in_row()
    }

    /// Reads the word at `addr`.
    ///
    /// # Errors
    /// As [`Transaction::read`].
    ///
    /// # Safety
    /// As [`TxDescriptor::load`].
    pub unsafe fn load_word(&mut self, addr: *const usize) -> Result<usize, Abort> {
        // SAFETY: forwarded contract.
        unsafe { self.desc.load(addr) }
    }

    /// Writes the bits of `value` selected by `mask` to the word at `addr`.
    ///
    /// # Errors
    /// As [`Transaction::read`].
    ///
    /// # Safety
    /// As [`TxDescriptor::store`].
    pub unsafe fn store_word(
        &mut self,
        addr: *mut usize,
        value: usize,
        mask: usize,
    ) -> Result<(), Abort> {
        // SAFETY: forwarded contract.
        unsafe { self.desc.store(addr, value, mask) }
    }

    /// Allocates memory that is freed again if this attempt aborts.
    ///
    /// # Errors
    /// As [`Transaction::read`].
    ///
    /// # Panics
    /// If `layout` has size 0 or alignment above 16.
    pub fn alloc(&mut self, layout: Layout) -> Result<NonNull<u8>, Abort> {
        assert!(
            layout.size() > 0 && layout.align() <= 16,
            "unsupported layout {layout:?}"
        );
        self.desc.core.check_usable(&self.desc.stm)?;
        let layout = layout.align_to(16).expect("alignment 16 is valid");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        self.desc
            .record_allocation(ptr.as_ptr() as usize, layout.size(), release_rust_block);
        Ok(ptr)
    }

    /// Frees memory from [`Transaction::alloc`] if this attempt commits, once no
    /// transaction can still read it.
    ///
    /// # Errors
    /// As [`Transaction::read`].
    ///
    /// # Safety
    /// `ptr` must come from `alloc` with the same `layout`, committed, and be freed
    /// once.
    pub unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) -> Result<(), Abort> {
        let layout = layout.align_to(16).expect("alignment 16 is valid");
        // SAFETY: forwarded contract.
        unsafe {
            self.desc
                .free_on_commit(ptr.as_ptr() as usize, layout.size(), release_rust_block)
        }
    }
}

impl TxDescriptor {
    /// The running attempt as a [`Transaction`], for drivers that run their own attempt
    /// loop (begin, run user code, commit or roll back, decide what comes next) yet
    /// hand the user code the typed API. May be called at any time: outside an active
    /// attempt every access fails with [`AbortReason::Misuse`].
    ///
    /// The thread is not marked as inside a transaction ([`crate::in_transaction`]
    /// stays false): the driver owns that decision.
    ///
    /// ```
    /// use lutra_stm::{Stm, TVar, TxDescriptor, TxOptions};
    /// let stm = Stm::default();
    /// let counter = TVar::new(1u64);
    /// let mut desc = TxDescriptor::new(&stm).unwrap();
    /// assert!(desc.transaction().read(&counter).is_err(), "no attempt is active");
    /// desc.begin(TxOptions::default());
    /// desc.transaction().modify(&counter, |n| n + 1).unwrap();
    /// desc.commit().unwrap();
    /// assert_eq!(stm.atomically(|tx| tx.read(&counter)), 2);
    /// ```
    pub fn transaction(&mut self) -> Transaction<'_> {
        Transaction { desc: self }
    }
}

/// Frees a block from [`Transaction::alloc`].
unsafe fn release_rust_block(addr: usize, size: usize) {
    let layout = Layout::from_size_align(size, 16).expect("recorded layouts are valid");
    // SAFETY: `addr` was allocated with this layout by `Transaction::alloc`.
    unsafe { std::alloc::dealloc(addr as *mut u8, layout) }
}
