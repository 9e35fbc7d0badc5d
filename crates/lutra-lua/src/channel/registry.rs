//! Named channels (luaproc's channel table): a name maps to a rendezvous channel
//! until the channel is deleted. The table is a [`SyncCell`]: behind a mutex or in the
//! runtime's private transactional engine, as `--sync` chose (seed 001).
//!
//! # Invariants
//! - A name maps to at most one channel; deleting removes the name and closes the
//!   channel, so every process blocked on it is woken and fails ("destroyed").
//! - A process that looked a channel up before its deletion keeps an `Arc` to it and
//!   sees it closed; it never sees a later channel of the same name by mistake.

use crate::channel::Channel;
use lutra_sched::sync_mode::{SyncCell, SyncDomain};
use std::collections::HashMap;
use std::sync::Arc;

/// The runtime's table of named channels.
pub struct Registry {
    channels: SyncCell<HashMap<Vec<u8>, Arc<Channel>>>,
}

impl Registry {
    /// An empty table synchronised as `domain` says.
    pub fn new(domain: &SyncDomain) -> Self {
        Self {
            channels: SyncCell::new(domain, HashMap::new()),
        }
    }

    /// Creates a rendezvous channel called `name`; `false` if the name is taken.
    pub fn create(&self, name: &[u8]) -> bool {
        let channel = Arc::new(Channel::new(0));
        self.channels.update(|channels| {
            if channels.contains_key(name) {
                return false;
            }
            channels.insert(name.to_vec(), channel.clone());
            true
        })
    }

    /// The channel called `name`, if any.
    pub fn get(&self, name: &[u8]) -> Option<Arc<Channel>> {
        self.channels.read(|channels| channels.get(name).cloned())
    }

    /// Removes and closes the channel called `name`; `false` if there is none.
    pub fn delete(&self, name: &[u8]) -> bool {
        let removed = self.channels.update(|channels| channels.remove(name));
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
        for mode in lutra_sched::sync_mode::SyncMode::ALL {
            names_are_unique_until_deleted_in(mode);
        }
    }

    fn names_are_unique_until_deleted_in(mode: lutra_sched::sync_mode::SyncMode) {
        let registry = Registry::new(&SyncDomain::new(mode));
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
