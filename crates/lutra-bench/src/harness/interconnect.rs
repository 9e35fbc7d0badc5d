//! How long a cache line takes to travel between two cores and back, now: two
//! threads hand a counter back and forth through one atomic word. A workload whose
//! workers share a cache line on every step (experiment 2 on one channel) slows with
//! this figure, which the host's placement of the virtual CPUs decides (on these
//! machines it moves, for minutes at a time, between about 60 ns and about 330 ns),
//! so benchmarks print it beside their tables.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Round trips per measurement.
const ROUND_TRIPS: u64 = 200_000;

/// Nanoseconds per round trip of a cache line between two threads (each on its own
/// core when the machine has two free), the median of three measurements; `None` on
/// a machine with one processor (the threads would take turns, not share a line).
///
/// ```
/// if let Some(ns) = lutra_bench::harness::interconnect::round_trip_ns() {
///     assert!(ns > 0.0);
/// }
/// ```
pub fn round_trip_ns() -> Option<f64> {
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        return None;
    }
    let mut samples = [measure(), measure(), measure()];
    samples.sort_by(f64::total_cmp);
    Some(samples[1])
}

/// One measurement: the main thread writes odd values, the other answers with the
/// next even one.
fn measure() -> f64 {
    let word = AtomicU64::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..ROUND_TRIPS {
                while word.load(Ordering::Acquire) != 2 * i + 1 {
                    spin_loop();
                }
                word.store(2 * i + 2, Ordering::Release);
            }
        });
        let start = Instant::now();
        for i in 0..ROUND_TRIPS {
            word.store(2 * i + 1, Ordering::Release);
            while word.load(Ordering::Acquire) != 2 * i + 2 {
                spin_loop();
            }
        }
        start.elapsed().as_nanos() as f64 / ROUND_TRIPS as f64
    })
}
