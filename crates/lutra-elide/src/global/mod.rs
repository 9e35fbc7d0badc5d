//! The elided global lock (seed 000). Filled in by its own change.
