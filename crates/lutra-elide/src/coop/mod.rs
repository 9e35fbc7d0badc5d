//! Cooperative locks (seed 003). Filled in by its own change.
