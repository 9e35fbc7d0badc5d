//! The documentation's Rust examples, compiled and run as doctests: each module below
//! is a page of the documentation, included whole, so `cargo test -p lutra-docs`
//! runs every ` ```rust ` block of it. The other blocks (Lua, C, shell) are run by
//! `tests/docs.sh`, which also fails on a block whose language nothing runs.
//!
//! A page that gains Rust examples is added here; a page without any needs no entry
//! (tests/docs.sh checks that every page holding a ` ```rust ` block is listed).

#[doc = include_str!("../../../README.md")]
pub mod readme {}

#[doc = include_str!("../../../docs/rust.md")]
pub mod rust_guide {}
