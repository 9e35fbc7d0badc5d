//! Named channels (luaproc's channel table): a name maps to a rendezvous channel
//! until the channel is deleted.
//!
//! # Invariants
//! - A name maps to at most one channel; deleting removes the name and closes the
//!   channel, so every process blocked on it is woken and fails ("destroyed").
//! - A process that looked a channel up before its deletion keeps an `Arc` to it and
//!   sees it closed; it never sees a later channel of the same name by mistake.

use crate::channel::Channel;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The runtime's table of named channels.
#[derive(Debug, Default)]
pub struct Registry {
    channels: Mutex<HashMap<Vec<u8>, Arc<Channel>>>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Arc<Channel>>> {
        self.channels.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates a rendezvous channel called `name`; `false` if the name is taken.
    pub fn create(&self, name: &[u8]) -> bool {
        let mut channels = self.lock();
        if channels.contains_key(name) {
            return false;
        }
        channels.insert(name.to_vec(), Arc::new(Channel::new(0)));
        true
    }

    /// The channel called `name`, if any.
    pub fn get(&self, name: &[u8]) -> Option<Arc<Channel>> {
        self.lock().get(name).cloned()
    }

    /// Removes and closes the channel called `name`; `false` if there is none.
    pub fn delete(&self, name: &[u8]) -> bool {
        let removed = self.lock().remove(name);
        match removed {
            Some(channel) => {
                channel.close();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_until_deleted() {
        let registry = Registry::default();
        assert!(registry.create(b"a"));
        assert!(!registry.create(b"a"));
        let old = registry.get(b"a").unwrap();
        assert!(registry.delete(b"a"));
        assert!(old.is_closed());
        assert!(!registry.delete(b"a"));
        assert!(registry.get(b"a").is_none());
        assert!(registry.create(b"a"));
        assert!(!registry.get(b"a").unwrap().is_closed());
    }
}
