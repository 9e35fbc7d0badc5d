//! A string's bytes in a message: short strings inline, long ones shared.
//!
//! A message of short strings (the common case: names, tags, `"message"`) costs no
//! allocation, no reference count and no free: the bytes sit inside the value itself,
//! zero-terminated, and are copied once more only into the receiving state. There a
//! string with no zero byte is pushed as a C string (`as_c_str`): Lua looks it up
//! in its per-state cache of API strings (by address, then content) before hashing
//! and interning it, so a string received over and over (the same place in the
//! receiver's frame) is found without a hash. A longer string is copied once into a
//! shared buffer, which every import of the message reads.
//!
//! # Invariants
//! - A `MessageString` is 16 bytes, aligned as a word (built and read a word at a
//!   time), with no invalid bit pattern (no niche), so a [`Value`](super::Value)
//!   holding one keeps a plain tag, as cheap to match for an integer as before, and
//!   stays three words; the last byte says which layout the first fifteen hold:
//!   - `0..=INLINE_MAX`: inline, that many bytes; every byte past them is zero, so
//!     a string shorter than `INLINE_MAX` is zero-terminated in place;
//!   - [`SHARED`]: the first 8 bytes are the data pointer and the next 7 the length
//!     (little-endian) of an `Arc<[u8]>` this value owns one reference of.
//! - Equality and hashing are those of the bytes (`[u8]`), whatever the layout, so a
//!   `MessageString` and a `&[u8]` look each other up in a map (`Borrow<[u8]>`).

use std::borrow::Borrow;
use std::ffi::CStr;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// The longest string kept inline.
pub const INLINE_MAX: usize = 15;

/// The last byte of a string kept in a shared buffer.
const SHARED: u8 = 0xff;

/// The bytes of a string carried by a message (any bytes, not only UTF-8).
///
/// It is `Send` and `Sync` as its bytes are, which is sound: besides plain bytes it
/// owns at most a reference of an `Arc<[u8]>`, itself `Send` and `Sync`.
pub struct MessageString(Repr);

/// The sixteen bytes of a [`MessageString`], aligned as a word: a value holds it at
/// a word's boundary, so it is built, copied and read a word at a time.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct Repr([u8; 16]);

impl std::ops::Deref for Repr {
    type Target = [u8; 16];

    #[inline(always)]
    fn deref(&self) -> &[u8; 16] {
        &self.0
    }
}

impl MessageString {
    /// A copy of `bytes`: inline when short, else in a new shared buffer.
    #[inline]
    pub fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_MAX {
            let (low, high) = inline_words(bytes);
            let mut inline = [0; 16];
            inline[..8].copy_from_slice(&low.to_le_bytes());
            inline[8..].copy_from_slice(&high.to_le_bytes());
            Self(Repr(inline))
        } else {
            Self::shared(Arc::from(bytes))
        }
    }

    /// `shared` as a string of the shared layout (its length must fit in 7 bytes,
    /// as every length of an allocation on a 64-bit machine does).
    #[cold]
    fn shared(shared: Arc<[u8]>) -> Self {
        let len = shared.len() as u64;
        assert!(len < 1 << 56, "a string longer than 2^56 bytes");
        let data = Arc::into_raw(shared).cast::<u8>() as usize as u64;
        let mut repr = [0; 16];
        repr[..8].copy_from_slice(&data.to_le_bytes());
        repr[8..15].copy_from_slice(&len.to_le_bytes()[..7]);
        repr[15] = SHARED;
        Self(Repr(repr))
    }

    /// The pointer of the shared buffer (the shared layout only).
    #[inline]
    fn shared_ptr(&self) -> *const [u8] {
        let mut data = [0; 8];
        data.copy_from_slice(&self.0[..8]);
        let mut len = [0; 8];
        len[..7].copy_from_slice(&self.0[8..15]);
        std::ptr::slice_from_raw_parts(
            u64::from_le_bytes(data) as usize as *const u8,
            u64::from_le_bytes(len) as usize,
        )
    }

    /// Whether the bytes are kept inline: the value then owns nothing (its drop does
    /// nothing).
    #[inline]
    pub fn is_inline(&self) -> bool {
        self.0[15] != SHARED
    }

    /// The string's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match self.0[15] {
            SHARED => {
                // SAFETY: the buffer of the reference this value owns (invariants),
                // alive while it is.
                unsafe { &*self.shared_ptr() }
            }
            len => &self.0[..usize::from(len)],
        }
    }

    /// The string as a zero-terminated C string, when it is kept inline, shorter
    /// than [`INLINE_MAX`] and holds no zero byte; `None` otherwise (push its bytes
    /// with their length instead).
    #[inline(always)]
    pub fn as_c_str(&self) -> Option<&CStr> {
        let len = self.0[15];
        if usize::from(len) >= INLINE_MAX {
            return None;
        }
        let len = usize::from(len);
        // Before `len`: a zero byte inside the string.
        if first_zero(&self.0.0) != len {
            return None;
        }
        // SAFETY: `self.0[len]` is zero (invariants) and no byte before it is: the
        // C string is the bytes and their terminator, within the value it borrows.
        Some(unsafe { CStr::from_bytes_with_nul_unchecked(&self.0[..=len]) })
    }
}

/// The two words (little-endian) of `bytes` (at most [`INLINE_MAX`]) kept inline:
/// the bytes, zeros after them, and their length in the last byte. Read as two
/// overlapping words (or half-words, or three bytes when fewer than four), as a small
/// `memcpy` does, without calling it: most strings of a message are short.
#[inline(always)]
fn inline_words(bytes: &[u8]) -> (u64, u64) {
    let len = bytes.len();
    debug_assert!(len <= INLINE_MAX);
    let (low, high) = if len >= 8 {
        // The last word, moved down over the bytes the first word holds already
        // (none when the string is exactly a word).
        let last = u64_at(&bytes[len - 8..]);
        let high = if len == 8 {
            0
        } else {
            last >> (8 * (16 - len))
        };
        (u64_at(bytes), high)
    } else if len >= 4 {
        let first = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let last = u32::from_le_bytes([
            bytes[len - 4],
            bytes[len - 3],
            bytes[len - 2],
            bytes[len - 1],
        ]);
        // The two half-words overlap on equal bytes: or-ing them keeps those.
        (u64::from(first) | u64::from(last) << (8 * (len - 4)), 0)
    } else if len > 0 {
        let byte = |at: usize| u64::from(bytes[at]) << (8 * at);
        (byte(0) | byte(len / 2) | byte(len - 1), 0)
    } else {
        (0, 0)
    };
    (low, high | (len as u64) << 56)
}

/// The position of the first zero byte of `bytes` (16 if none), found a word at a
/// time (no call to `strlen`): in `w - 0x01…01 & !w & 0x80…80` the lowest bit set
/// marks the first zero byte (a borrow can set bits only above it).
#[inline(always)]
fn first_zero(bytes: &[u8; 16]) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let zeros = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    let (mut low, mut high) = ([0; 8], [0; 8]);
    low.copy_from_slice(&bytes[..8]);
    high.copy_from_slice(&bytes[8..]);
    let low = zeros(u64::from_le_bytes(low));
    if low != 0 {
        return (low.trailing_zeros() / 8) as usize;
    }
    let high = zeros(u64::from_le_bytes(high));
    8 + (high.trailing_zeros() / 8) as usize
}

/// The first 8 bytes of `bytes` (at least 8) as a little-endian word.
#[inline(always)]
fn u64_at(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(word)
}

impl Clone for MessageString {
    #[inline]
    fn clone(&self) -> Self {
        if self.0[15] == SHARED {
            // SAFETY: the buffer of a live `Arc<[u8]>` (invariants); the clone owns
            // the reference counted here.
            unsafe { Arc::increment_strong_count(self.shared_ptr()) };
        }
        Self(self.0)
    }
}

impl Drop for MessageString {
    #[inline]
    fn drop(&mut self) {
        if self.0[15] == SHARED {
            // SAFETY: gives back the reference this value owns (invariants).
            drop(unsafe { Arc::from_raw(self.shared_ptr()) });
        }
    }
}

impl Deref for MessageString {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for MessageString {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for MessageString {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for MessageString {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for MessageString {}

impl Hash for MessageString {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl std::fmt::Debug for MessageString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl From<&[u8]> for MessageString {
    fn from(bytes: &[u8]) -> Self {
        Self::new(bytes)
    }
}

impl From<&str> for MessageString {
    fn from(text: &str) -> Self {
        Self::new(text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn short_and_long_strings_keep_their_bytes() {
        for length in (0..=INLINE_MAX + 1).chain([1000]) {
            let bytes: Vec<u8> = (0..length).map(|i| (i % 251) as u8).collect();
            let string = MessageString::new(&bytes);
            assert_eq!(string.as_bytes(), &bytes[..]);
            assert_eq!(string.clone().as_bytes(), &bytes[..]);
        }
    }

    /// A zero byte anywhere inside a short string keeps it from being a C string
    /// (the word-at-a-time search finds the first one, wherever it is).
    #[test]
    fn a_zero_byte_anywhere_is_found() {
        for length in 1..INLINE_MAX {
            for at in 0..length {
                let mut bytes = vec![0xff_u8; length];
                bytes[at] = 0;
                assert_eq!(MessageString::new(&bytes).as_c_str(), None, "{length} {at}");
                bytes[at] = 1;
                assert!(MessageString::new(&bytes).as_c_str().is_some());
            }
        }
    }

    /// Every short length is copied whole (the overlapping words of `inline_words`
    /// miss no byte), and zero-terminated in place: nothing past the bytes is written.
    #[test]
    fn short_strings_are_copied_whole_and_terminated() {
        for length in 0..INLINE_MAX {
            let bytes: Vec<u8> = (1..=length).map(|i| i as u8).collect();
            let string = MessageString::new(&bytes);
            assert_eq!(string.as_bytes(), &bytes[..], "length {length}");
            assert_eq!(
                string.as_c_str().map(CStr::to_bytes),
                Some(&bytes[..]),
                "length {length}"
            );
        }
    }

    #[test]
    fn only_short_strings_without_zero_are_c_strings() {
        assert_eq!(MessageString::from("message").as_c_str(), Some(c"message"));
        assert_eq!(MessageString::from("").as_c_str(), Some(c""));
        let longest = [b'x'; INLINE_MAX - 1];
        assert_eq!(
            MessageString::new(&longest).as_c_str().map(CStr::to_bytes),
            Some(&longest[..])
        );
        assert_eq!(MessageString::new(&[b'x'; INLINE_MAX]).as_c_str(), None);
        assert_eq!(MessageString::new(&[b'x'; INLINE_MAX + 1]).as_c_str(), None);
        assert_eq!(MessageString::new(b"a\0b").as_c_str(), None);
        assert_eq!(MessageString::new(b"ab\0").as_c_str(), None);
    }

    #[test]
    fn a_shared_buffer_is_counted_by_clones_and_freed_by_the_last() {
        let long = MessageString::new(&[7; 100]);
        let buffer = long.shared_ptr();
        let copy = long.clone();
        // SAFETY: the buffer is alive (two values own references of it).
        let strong = |p| unsafe {
            Arc::increment_strong_count(p);
            let arc = Arc::from_raw(p);
            Arc::strong_count(&arc) - 1
        };
        assert_eq!(strong(buffer), 2);
        drop(long);
        assert_eq!(strong(buffer), 1);
        assert_eq!(copy.as_bytes(), &[7; 100][..]);
    }

    #[test]
    fn looked_up_by_bytes_in_a_map() {
        let mut map = HashMap::new();
        map.insert(MessageString::from("name"), 1);
        map.insert(MessageString::new(&[b'x'; 40]), 2);
        assert_eq!(map.get(&b"name"[..]), Some(&1));
        assert_eq!(map.get(&[b'x'; 40][..]), Some(&2));
        assert_eq!(map.get(&b"other"[..]), None);
    }

    #[test]
    fn a_value_stays_three_words() {
        assert_eq!(std::mem::size_of::<MessageString>(), 16);
        assert_eq!(std::mem::size_of::<crate::transfer::Value>(), 24);
    }
}
