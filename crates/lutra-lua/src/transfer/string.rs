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
//! - `Inline { len, bytes }`: `len <= INLINE_MAX`; the first `len` bytes are the
//!   string and `bytes[len]` is zero (every byte past the string is).
//! - Equality and hashing are those of the bytes (`[u8]`), whatever the layout, so a
//!   `MessageString` and a `&[u8]` look each other up in a map (`Borrow<[u8]>`).

use std::borrow::Borrow;
use std::ffi::CStr;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// The longest string kept inline (a value stays 24 bytes, as with a shared buffer;
/// one more byte holds the terminating zero).
pub const INLINE_MAX: usize = 21;

/// The bytes of a string carried by a message (any bytes, not only UTF-8).
#[derive(Clone)]
pub struct MessageString(Layout);

#[derive(Clone)]
enum Layout {
    /// Up to [`INLINE_MAX`] bytes, in place.
    Inline {
        len: u8,
        bytes: [u8; INLINE_MAX + 1],
    },
    /// A longer string, copied once into a shared buffer.
    Shared(Arc<[u8]>),
}

impl MessageString {
    /// A copy of `bytes`: inline when short, else in a new shared buffer.
    #[inline]
    pub fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_MAX {
            let mut inline = [0; INLINE_MAX + 1];
            inline[..bytes.len()].copy_from_slice(bytes);
            Self(Layout::Inline {
                len: bytes.len() as u8,
                bytes: inline,
            })
        } else {
            Self::shared(bytes)
        }
    }

    #[cold]
    fn shared(bytes: &[u8]) -> Self {
        Self(Layout::Shared(Arc::from(bytes)))
    }

    /// The string's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Layout::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Layout::Shared(bytes) => bytes,
        }
    }
}

impl MessageString {
    /// The string as a zero-terminated C string, when it is kept inline and holds no
    /// zero byte; `None` otherwise (push its bytes with their length instead).
    #[inline]
    pub fn as_c_str(&self) -> Option<&CStr> {
        match &self.0 {
            Layout::Inline { len, bytes } => {
                // SAFETY: `bytes[len]` is zero (module invariants), so the C string
                // ends within the buffer, which it borrows.
                let text = unsafe { CStr::from_ptr(bytes.as_ptr().cast()) };
                // Shorter than the string: a zero byte inside it.
                (text.count_bytes() == usize::from(*len)).then_some(text)
            }
            Layout::Shared(_) => None,
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
        for length in [0, 1, INLINE_MAX, INLINE_MAX + 1, 1000] {
            let bytes: Vec<u8> = (0..length).map(|i| (i % 251) as u8).collect();
            let string = MessageString::new(&bytes);
            assert_eq!(string.as_bytes(), &bytes[..]);
            assert_eq!(string.clone().as_bytes(), &bytes[..]);
        }
    }

    #[test]
    fn only_short_strings_without_zero_are_c_strings() {
        assert_eq!(MessageString::from("message").as_c_str(), Some(c"message"));
        assert_eq!(MessageString::from("").as_c_str(), Some(c""));
        let longest = [b'x'; INLINE_MAX];
        assert_eq!(
            MessageString::new(&longest).as_c_str().map(CStr::to_bytes),
            Some(&longest[..])
        );
        assert_eq!(MessageString::new(&[b'x'; INLINE_MAX + 1]).as_c_str(), None);
        assert_eq!(MessageString::new(b"a\0b").as_c_str(), None);
        assert_eq!(MessageString::new(b"ab\0").as_c_str(), None);
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
        assert_eq!(std::mem::size_of::<crate::transfer::Value>(), 24);
    }
}
