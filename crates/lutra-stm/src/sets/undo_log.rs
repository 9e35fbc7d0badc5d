//! The undo log of a solo attempt (`solo.rs`): the old word of every address the
//! attempt wrote in place, to be put back if it rolls back.
//!
//! The log is a window `[next, end)` of free entries in a buffer, with a C layout, so
//! that code outside the engine may append to it without a call: the C ABI's inline
//! accesses (`LUTRA_INLINE` in `stm.h`) read `next` to learn whether a solo attempt
//! runs, and store by writing `{address, old word}` at `next` and moving `next` on,
//! while `next != end`; a full window goes back to the engine, which grows it.
//!
//! The window lives outside the log, behind a pointer: in a heap cell the log owns,
//! or in a place its driver chose ([`UndoLog::place`]) — the C ABI places it in a
//! thread-local variable, so that inline code tests `next` at a fixed offset from the
//! thread pointer, with no load of the window's address first.
//!
//! # Invariants
//! - `window` points to the log's own cell or to the placed window; the other one (the
//!   own cell while a window is placed) is closed.
//! - Outside solo attempts the window is closed: `next` and `end` are both null.
//! - While open, `buffer`'s storage holds `capacity` entries, `next` and `end` point
//!   into it (`end` one past its last entry), and the entries from its start up to
//!   `next` are the logged writes, oldest first. The vector's own length stays 0: the
//!   entries live in its spare capacity (plain `Copy` words), and it only reallocates
//!   in [`UndoLog::grow`], which moves the window with it.
//! - `limit` is one past the last entry of `buffer`'s storage (its start plus its
//!   capacity), kept wherever the buffer changes: where an opened window ends.

use std::ptr::{self, NonNull};

/// Entries a window opens with at least.
const FIRST_CAPACITY: usize = 64;

/// Buffers that grew past this many entries are given back when the window closes.
const KEPT_CAPACITY: usize = 1 << 14;

/// One logged write: the word's address and its value before the write.
pub(crate) type UndoEntry = [usize; 2];

/// The window of free entries of a descriptor's solo undo log
/// ([`TxDescriptor::place_solo_undo_window`](crate::TxDescriptor::place_solo_undo_window)): each
/// entry is `{address, old word}`, two machine words, and `stm.h` declares the same
/// layout as `struct lutra_undo_window`. While a solo attempt runs the window is open:
/// a caller that writes the word at `a` in place, inside the attempt, may first write
/// `{a, old word}` at `next` and advance `next` by one entry, as long as `next !=
/// end`. Out of solo attempts both pointers are null. The engine puts the logged
/// words back, newest first, if the attempt rolls back.
#[repr(C)]
#[derive(Debug, PartialEq, Eq)]
pub struct UndoWindow {
    next: *mut UndoEntry,
    end: *mut UndoEntry,
}

impl UndoWindow {
    /// A closed window: where a window placed with
    /// [`TxDescriptor::place_solo_undo_window`](crate::TxDescriptor::place_solo_undo_window)
    /// starts (C's zero-initialised `struct lutra_undo_window` is the same).
    pub const CLOSED: Self = Self {
        next: ptr::null_mut(),
        end: ptr::null_mut(),
    };
}

/// The undo log: where its window is, then the buffer behind it (see the module
/// header).
pub(crate) struct UndoLog {
    /// The window in use: `own`, or the placed one.
    window: NonNull<UndoWindow>,
    /// The log's own window, a heap cell (from `Box::leak`) freed on drop.
    own: NonNull<UndoWindow>,
    /// One past the buffer's last entry (module invariants).
    limit: *mut UndoEntry,
    buffer: Vec<UndoEntry>,
}

impl Default for UndoLog {
    fn default() -> Self {
        let own = NonNull::from(Box::leak(Box::new(UndoWindow::CLOSED)));
        let mut buffer = Vec::new();
        Self {
            window: own,
            own,
            limit: buffer.as_mut_ptr(),
            buffer,
        }
    }
}

impl Drop for UndoLog {
    fn drop(&mut self) {
        // SAFETY: `own` came from `Box::leak` in `default` and is
        // freed only here; a placed window does not point to it.
        drop(unsafe { Box::from_raw(self.own.as_ptr()) });
    }
}

impl UndoLog {
    /// Moves the window to `place` (the log's own cell when `None`): the window's
    /// state goes there, and the place it leaves is closed.
    ///
    /// # Safety
    /// `place` must be valid for reads and writes, and written by no one but this
    /// log's users (as [`UndoWindow`] allows), until the window moves again or the
    /// log is dropped.
    pub(crate) unsafe fn place(&mut self, place: Option<NonNull<UndoWindow>>) {
        let to = place.unwrap_or(self.own);
        if to == self.window {
            return;
        }
        // SAFETY: both windows are valid and unaliased by references (module
        // invariants; the caller's contract for `place`).
        unsafe {
            to.write(self.window.replace(UndoWindow::CLOSED));
        }
        self.window = to;
    }

    /// The window in use.
    #[inline(always)]
    fn window(&self) -> &UndoWindow {
        // SAFETY: `window` is valid (module invariants), and no reference to it
        // outlives a call of the log; outside code writes it only between calls.
        unsafe { self.window.as_ref() }
    }

    /// The window in use, to change.
    #[inline(always)]
    fn window_mut(&mut self) -> &mut UndoWindow {
        // SAFETY: as in `window`; `&mut self` makes this the only reference.
        unsafe { self.window.as_mut() }
    }

    /// Opens an empty window (a solo attempt begins).
    #[inline]
    pub(crate) fn open(&mut self) {
        if self.buffer.capacity() < FIRST_CAPACITY {
            self.allocate();
        }
        self.open_ready();
    }

    /// The buffer's first allocation (or a new one after `close` gave it back).
    #[cold]
    fn allocate(&mut self) {
        self.buffer.reserve(FIRST_CAPACITY);
        self.update_limit();
    }

    /// Sets `limit` after the buffer changed.
    fn update_limit(&mut self) {
        let start = self.buffer.as_mut_ptr();
        // SAFETY: one past the last of the `capacity` entries allocated from `start`
        // (or `start` itself for no storage) is a valid end pointer.
        self.limit = unsafe { start.add(self.buffer.capacity()) };
    }

    /// Closes the window, forgetting the entries (the attempt has ended).
    #[inline]
    pub(crate) fn close(&mut self) {
        if !self.is_kept() {
            self.buffer = Vec::new();
            self.update_limit();
        }
        self.close_window();
    }

    /// Whether the window opens without touching the allocator: the buffer holds
    /// at least the first capacity.
    #[inline(always)]
    pub(crate) fn is_allocated(&self) -> bool {
        self.buffer.capacity() >= FIRST_CAPACITY
    }

    /// Whether the window closes without touching the allocator: the buffer has
    /// not grown past the capacity it keeps.
    #[inline(always)]
    pub(crate) fn is_kept(&self) -> bool {
        self.buffer.capacity() <= KEPT_CAPACITY
    }

    /// Whether the open window is full: the next [`UndoLog::push`] grows the buffer.
    #[inline(always)]
    pub(crate) fn is_full(&self) -> bool {
        let window = self.window();
        window.next == window.end
    }

    /// [`UndoLog::open`] for a log that [`is_allocated`](UndoLog::is_allocated).
    #[inline(always)]
    pub(crate) fn open_ready(&mut self) {
        debug_assert!(self.is_allocated());
        *self.window_mut() = UndoWindow {
            next: self.buffer.as_mut_ptr(),
            end: self.limit,
        };
    }

    /// [`UndoLog::close`] for a log that [`is_kept`](UndoLog::is_kept): nothing to
    /// give back.
    #[inline(always)]
    pub(crate) fn close_window(&mut self) {
        debug_assert!(self.is_kept());
        *self.window_mut() = UndoWindow::CLOSED;
    }

    /// Whether the window is open (a solo attempt runs).
    #[inline]
    pub(crate) fn is_open(&self) -> bool {
        !self.window().next.is_null()
    }

    /// Logs the write of the word at `addr`, which held `old`, growing a full
    /// window. The window must be open.
    #[inline]
    pub(crate) fn push(&mut self, addr: usize, old: usize) {
        if self.is_full() {
            self.grow();
        }
        self.push_within(addr, old);
    }

    /// [`UndoLog::push`] into a window that is open and not full.
    #[inline(always)]
    pub(crate) fn push_within(&mut self, addr: usize, old: usize) {
        debug_assert!(self.is_open() && !self.is_full());
        let window = self.window_mut();
        // SAFETY: the window is open and not full: `next` points to a free entry of
        // the buffer (module invariants).
        unsafe {
            window.next.write([addr, old]);
            window.next = window.next.add(1);
        }
    }

    /// The logged writes, oldest first (none when the window is closed).
    pub(crate) fn entries(&self) -> &[UndoEntry] {
        if !self.is_open() {
            return &[];
        }
        let start = self.buffer.as_ptr();
        // SAFETY: the entries from the buffer's start to `next` were written by
        // `push` or by the C ABI's inline store (module invariants); `next` points
        // into the same allocation, at or after its start.
        unsafe {
            let len = self.window().next.offset_from(start) as usize;
            std::slice::from_raw_parts(start, len)
        }
    }

    /// Doubles the buffer of a full window, keeping its entries.
    #[cold]
    fn grow(&mut self) {
        let len = self.entries().len();
        // SAFETY: the first `len` entries are initialised (`entries`); the vector's
        // length covers them only while it reallocates, then goes back to 0.
        unsafe { self.buffer.set_len(len) };
        self.buffer.reserve(len.max(FIRST_CAPACITY));
        self.update_limit();
        // SAFETY: as above; `len <= capacity`.
        let window = unsafe {
            self.buffer.set_len(0);
            UndoWindow {
                next: self.buffer.as_mut_ptr().add(len),
                end: self.limit,
            }
        };
        *self.window_mut() = window;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_log_has_no_entries_and_a_null_window() {
        let mut log = UndoLog::default();
        assert!(!log.is_open());
        assert!(log.entries().is_empty());
        log.open();
        log.push(8, 1);
        log.close();
        assert!(!log.is_open());
        assert_eq!(*log.window(), UndoWindow::CLOSED);
        assert!(log.entries().is_empty());
    }

    #[test]
    fn entries_survive_growth_in_order() {
        let mut log = UndoLog::default();
        log.open();
        for at in 0..1000 {
            log.push(at * 8, at);
        }
        let entries = log.entries();
        assert_eq!(entries.len(), 1000);
        assert!(entries.iter().enumerate().all(|(at, e)| *e == [at * 8, at]));
        log.close();
        log.open();
        assert!(log.entries().is_empty());
    }

    #[test]
    fn a_huge_buffer_is_given_back_when_closed() {
        let mut log = UndoLog::default();
        log.open();
        for at in 0..KEPT_CAPACITY + 1 {
            log.push(at, at);
        }
        log.close();
        assert!(log.buffer.capacity() <= KEPT_CAPACITY);
    }

    #[test]
    fn writes_made_through_the_window_count_as_entries() {
        // What the C ABI's inline store does: write at `next`, move `next` on.
        let mut log = UndoLog::default();
        log.open();
        let window = log.window.as_ptr().cast::<*mut UndoEntry>();
        // SAFETY: `UndoWindow` is `repr(C)` with `next` first; the window is open and
        // has room for one entry.
        unsafe {
            let next = *window;
            next.write([16, 7]);
            *window = next.add(1);
        }
        log.push(24, 9);
        assert_eq!(log.entries(), &[[16, 7], [24, 9]]);
    }

    #[test]
    fn a_placed_window_takes_the_state_and_leaves_a_closed_one_behind() {
        let mut log = UndoLog::default();
        let mut placed = UndoWindow::CLOSED;
        let at = NonNull::from(&mut placed);
        log.open();
        log.push(8, 1);
        // SAFETY: `placed` outlives the log's use of it: the window moves back below.
        unsafe { log.place(Some(at)) };
        assert_eq!(*log.own_window(), UndoWindow::CLOSED);
        // What the inline store does, through the placed window only.
        // SAFETY: the window is open, with room for one entry.
        unsafe {
            let next = (*at.as_ptr()).next;
            next.write([16, 2]);
            (*at.as_ptr()).next = next.add(1);
        }
        log.push(24, 3);
        assert_eq!(log.entries(), &[[8, 1], [16, 2], [24, 3]]);
        // SAFETY: the own cell is always valid.
        unsafe { log.place(None) };
        // SAFETY: the log no longer uses `placed`.
        assert_eq!(unsafe { at.read() }, UndoWindow::CLOSED);
        assert_eq!(log.entries(), &[[8, 1], [16, 2], [24, 3]]);
        log.close();
        assert_eq!(*log.own_window(), UndoWindow::CLOSED);
    }

    impl UndoLog {
        /// The log's own cell, whether in use or not.
        fn own_window(&self) -> &UndoWindow {
            // SAFETY: `own` is valid until the log is dropped.
            unsafe { self.own.as_ref() }
        }
    }
}
