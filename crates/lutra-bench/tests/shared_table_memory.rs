//! A transaction that inserts many keys into a shared table costs memory in
//! proportion to what it changes: its peak stays under 4x the finished table.
//!
//! Measured with the counting global allocator of `lutra_bench::harness::memory` (live bytes
//! and their high-water mark) in a test binary of its own with a single test, on one
//! thread: the figures are the engine's and the table's own allocations, independent
//! of timing.

#[global_allocator]
static ALLOCATOR: lutra_bench::harness::memory::Counting = lutra_bench::harness::memory::Counting;

/// Keys inserted by the one transaction (1M is measured by `sharedbench`).
const KEYS: i64 = 200_000;

#[test]
fn one_transaction_of_many_inserts_peaks_under_four_times_the_table() {
    let measured = lutra_bench::harness::memory::insert_peak(KEYS);
    let (peak, table_bytes) = (measured.peak, measured.table);
    println!(
        "{KEYS} inserts in one transaction: peak {peak} B, table {table_bytes} B \
         ({:.0} B/key), peak / table = {:.2}",
        table_bytes as f64 / KEYS as f64,
        peak as f64 / table_bytes as f64
    );
    assert!(
        peak < 4 * table_bytes,
        "peak {peak} B is not under 4x the table's {table_bytes} B"
    );
}
