//! Typed transactional variables over the word-based engine.
//!
//! A [`TVar`] is one machine word. Values that are word-sized (or smaller),
//! padding-free and `Copy` (integers, floats, `bool`, `char`) are stored in the word
//! itself; every other value is boxed, the word holding the pointer. A write of a boxed
//! value allocates a new box; the box it replaces is retired at commit and freed only
//! when no transaction can still be reading it (epochs, `epoch.rs`).
//!
//! # Invariants
//! - A `TVar`'s word always holds `T::into_word` of a live value: the initial one or
//!   the last committed write.
//! - A boxed value is never mutated after it is published; readers clone it or
//!   borrow it for the length of a closure (`Transaction::read_with`). Only the
//!   attempt that wrote a box changes it, before publishing it (`inplace.rs`).

use crate::global::sync::data::{self, AtomicUsize};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// A type that can live in a [`TVar`].
///
/// Implemented for the primitive numbers, `bool` and `char` (stored inline), and for
/// `String`, `Vec<T>`, `Box<T>`, `Arc<T>`, `Option<T>` and tuples of up to four
/// elements (boxed). Implement it for your own types with
/// [`boxed_transactable!`](crate::boxed_transactable):
///
/// ```
/// #[derive(Clone)]
/// struct Account { owner: String, balance: i64 }
/// lutra_stm::boxed_transactable!(Account);
/// let account = lutra_stm::TVar::new(Account { owner: "ada".into(), balance: 10 });
/// let stm = lutra_stm::Stm::default();
/// assert_eq!(stm.atomically(|tx| Ok(tx.read(&account)?.balance)), 10);
/// ```
///
/// # Safety
/// `clone_from_word` must accept every word `into_word` returns, for as long as it
/// has not been released with `release_word`; `release_word` must free it exactly once.
/// Inline implementations must not own anything. Boxed implementations (`BOXED`) must
/// encode a value as the address of a `Box<T>` holding it (as
/// [`boxed_transactable!`](crate::boxed_transactable) does): the engine lends and
/// changes boxed values through that address
/// ([`Transaction::read_with`](crate::Transaction::read_with),
/// [`Transaction::update_in_place`](crate::Transaction::update_in_place)).
pub unsafe trait Transactable: Clone + Send + Sync + 'static {
    /// Whether values are boxed (the word is a pointer that must be released).
    #[doc(hidden)]
    const BOXED: bool;
    /// Encodes the value as a word (boxing it if needed).
    #[doc(hidden)]
    fn into_word(self) -> usize;
    /// Clones the value encoded in `word`.
    ///
    /// # Safety
    /// `word` must come from `into_word` and not be released yet.
    #[doc(hidden)]
    unsafe fn clone_from_word(word: usize) -> Self;
    /// Releases the value encoded in `word`; the size argument is unused.
    ///
    /// # Safety
    /// `word` must come from `into_word`, be released once, and not be read after.
    #[doc(hidden)]
    unsafe fn release_word(word: usize, size: usize);
}

/// Helpers for `boxed_transactable!`; not part of the API.
#[doc(hidden)]
pub mod boxed {
    /// Boxes `value` and returns the pointer as a word.
    pub fn into_word<T>(value: T) -> usize {
        Box::into_raw(Box::new(value)) as usize
    }

    /// Clones the boxed value at `word`.
    ///
    /// # Safety
    /// `word` must come from [`into_word::<T>`] and not be released yet.
    pub unsafe fn clone_from_word<T: Clone>(word: usize) -> T {
        // SAFETY: guaranteed by the caller.
        unsafe { (*(word as *const T)).clone() }
    }

    /// Frees the box at `word`.
    ///
    /// # Safety
    /// `word` must come from [`into_word::<T>`] and be released once.
    pub unsafe fn release_word<T>(word: usize, _size: usize) {
        // SAFETY: guaranteed by the caller.
        drop(unsafe { Box::from_raw(word as *mut T) });
    }
}

/// Makes types storable in a [`TVar`](crate::TVar), boxed. The types must be
/// `Clone + Send + Sync + 'static`.
///
/// ```
/// #[derive(Clone, Debug, PartialEq)]
/// struct Point { x: f64, y: f64 }
/// lutra_stm::boxed_transactable!(Point);
/// ```
#[macro_export]
macro_rules! boxed_transactable {
    ($($ty:ty),+ $(,)?) => {$(
        // SAFETY: the boxed helpers satisfy the trait's contract for any
        // `Clone + Send + Sync + 'static` type.
        unsafe impl $crate::Transactable for $ty {
            const BOXED: bool = true;
            fn into_word(self) -> usize {
                $crate::tvar::boxed::into_word(self)
            }
            unsafe fn clone_from_word(word: usize) -> Self {
                // SAFETY: forwarded contract.
                unsafe { $crate::tvar::boxed::clone_from_word::<Self>(word) }
            }
            unsafe fn release_word(word: usize, size: usize) {
                // SAFETY: forwarded contract.
                unsafe { $crate::tvar::boxed::release_word::<Self>(word, size) }
            }
        }
    )+};
}

macro_rules! inline_transactable {
    ($($ty:ty => |$w:ident| $decode:expr, |$v:ident| $encode:expr;)+) => {$(
        // SAFETY: the value is stored in the word itself and owns nothing.
        unsafe impl Transactable for $ty {
            const BOXED: bool = false;
            fn into_word(self) -> usize {
                let $v = self;
                $encode
            }
            unsafe fn clone_from_word($w: usize) -> Self {
                $decode
            }
            unsafe fn release_word(_word: usize, _size: usize) {}
        }
    )+};
}

inline_transactable! {
    u8 => |w| w as u8, |v| v as usize;
    u16 => |w| w as u16, |v| v as usize;
    u32 => |w| w as u32, |v| v as usize;
    u64 => |w| w as u64, |v| v as usize;
    usize => |w| w, |v| v;
    i8 => |w| w as i8, |v| v as usize;
    i16 => |w| w as i16, |v| v as usize;
    i32 => |w| w as i32, |v| v as usize;
    i64 => |w| w as i64, |v| v as usize;
    isize => |w| w as isize, |v| v as usize;
    bool => |w| w != 0, |v| usize::from(v);
    char => |w| char::from_u32(w as u32).unwrap_or(char::REPLACEMENT_CHARACTER), |v| v as usize;
    f32 => |w| f32::from_bits(w as u32), |v| v.to_bits() as usize;
    f64 => |w| f64::from_bits(w as u64), |v| v.to_bits() as usize;
}

const _: () = assert!(
    std::mem::size_of::<usize>() == 8,
    "lutra-stm needs 64-bit words"
);

macro_rules! generic_boxed_transactable {
    ($(<$($param:ident),+> $ty:ty;)+) => {$(
        // SAFETY: the boxed helpers satisfy the trait's contract for any
        // `Clone + Send + Sync + 'static` type.
        unsafe impl<$($param: Clone + Send + Sync + 'static),+> Transactable for $ty {
            const BOXED: bool = true;
            fn into_word(self) -> usize {
                boxed::into_word(self)
            }
            unsafe fn clone_from_word(word: usize) -> Self {
                // SAFETY: forwarded contract.
                unsafe { boxed::clone_from_word::<Self>(word) }
            }
            unsafe fn release_word(word: usize, size: usize) {
                // SAFETY: forwarded contract.
                unsafe { boxed::release_word::<Self>(word, size) }
            }
        }
    )+};
}

generic_boxed_transactable! {
    <T> Vec<T>;
    <T> Box<T>;
    <T> Option<T>;
    <A, B> (A, B);
    <A, B, C> (A, B, C);
    <A, B, C, D> (A, B, C, D);
}

// SAFETY: as for the generic boxed types above; `Arc<T>` is `Send + Sync` when
// `T: Send + Sync`.
unsafe impl<T: Send + Sync + 'static + ?Sized> Transactable for Arc<T> {
    const BOXED: bool = true;
    fn into_word(self) -> usize {
        boxed::into_word(self)
    }
    unsafe fn clone_from_word(word: usize) -> Self {
        // SAFETY: forwarded contract.
        unsafe { boxed::clone_from_word::<Self>(word) }
    }
    unsafe fn release_word(word: usize, size: usize) {
        // SAFETY: forwarded contract.
        unsafe { boxed::release_word::<Self>(word, size) }
    }
}

crate::boxed_transactable!(String);

/// A transactional variable: read and written inside transactions
/// ([`Transaction::read`](crate::Transaction::read),
/// [`Transaction::write`](crate::Transaction::write)).
///
/// A `TVar` must be used with one engine instance only.
pub struct TVar<T: Transactable> {
    word: AtomicUsize,
    _value: PhantomData<T>,
}

impl<T: Transactable> TVar<T> {
    /// A variable holding `value`.
    pub fn new(value: T) -> Self {
        Self {
            word: AtomicUsize::new(value.into_word()),
            _value: PhantomData,
        }
    }

    /// The current value, read without a transaction: exclusive access proves no
    /// transaction uses the variable.
    pub fn get_mut(&mut self) -> T {
        // SAFETY: the word holds a live value (module invariant).
        unsafe { T::clone_from_word(data::exclusive(&mut self.word, |word| *word)) }
    }

    /// Replaces the value without a transaction, returning the old one: exclusive
    /// access proves no transaction uses the variable.
    ///
    /// ```
    /// let mut var = lutra_stm::TVar::new(String::from("old"));
    /// assert_eq!(var.replace_mut(String::from("new")), "old");
    /// assert_eq!(var.get_mut(), "new");
    /// ```
    pub fn replace_mut(&mut self, value: T) -> T {
        let old = data::exclusive(&mut self.word, |word| {
            std::mem::replace(word, value.into_word())
        });
        // SAFETY: `old` held a live value that only this variable owned; taken out of
        // the word, it is released exactly once: by the returned `T` (cloned out of
        // the word, then the word's own reference released).
        unsafe {
            let taken = T::clone_from_word(old);
            T::release_word(old, 0);
            taken
        }
    }

    /// Consumes the variable and returns its value.
    pub fn into_inner(mut self) -> T {
        self.get_mut()
    }

    /// The address of the variable's word (what the engine locks and versions).
    pub fn as_word_ptr(&self) -> *const usize {
        // The atomic's own address: under loom (`sync.rs`) the word is a loom atomic,
        // which the engine casts the address back to.
        (&raw const self.word).cast()
    }
}

impl<T: Transactable> Drop for TVar<T> {
    fn drop(&mut self) {
        // SAFETY: the word holds a live value that only this variable owns; no
        // transaction can reach it any more (it would need a reference to `self`).
        unsafe { T::release_word(data::exclusive(&mut self.word, |word| *word), 0) }
    }
}

impl<T: Transactable + Default> Default for TVar<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: Transactable> fmt::Debug for TVar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TVar")
            .field("word", &self.as_word_ptr())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Transactable + PartialEq + fmt::Debug>(value: T) {
        let word = value.clone().into_word();
        // SAFETY: `word` was just encoded and is released once below.
        unsafe {
            assert_eq!(T::clone_from_word(word), value);
            T::release_word(word, 0);
        }
    }

    #[test]
    fn inline_and_boxed_values_round_trip() {
        round_trip(-5i8);
        round_trip(u64::MAX);
        round_trip(-1isize);
        round_trip(true);
        round_trip('λ');
        round_trip(-0.5f32);
        round_trip(f64::MIN_POSITIVE);
        round_trip(String::from("lutra"));
        round_trip(vec![1, 2, 3]);
        round_trip(Some((1u8, String::from("x"))));
    }

    #[test]
    fn get_mut_and_into_inner_see_the_value() {
        let mut var = TVar::new(vec![7u32]);
        assert_eq!(var.get_mut(), vec![7]);
        assert_eq!(var.into_inner(), vec![7]);
    }
}
