//! The engine's fixed cost per transaction on one thread: an empty transaction, a
//! one-word update and a ten-word read, with statistics on and off.
//!
//! `cargo run --release -p lutra-stm --example overhead`

use lutra_stm::{Config, Stm, TVar};
use std::time::Instant;
fn main() {
    let vars: Vec<TVar<u64>> = (0..64).map(TVar::new).collect();
    for stats in [true, false] {
        let stm = Stm::new(Config::default().with_stats(stats));
        let n = 2_000_000;
        let t = Instant::now();
        for i in 0..n {
            stm.atomically(|tx| tx.modify(&vars[i % 64], |x| x + 1));
        }
        let upd = t.elapsed().as_nanos() as f64 / n as f64;
        let t = Instant::now();
        let mut s = 0;
        for _ in 0..n {
            s += stm.atomically(|tx| {
                let mut a = 0;
                for v in &vars[..10] {
                    a += tx.read(v)?;
                }
                Ok(a)
            });
        }
        let ro = t.elapsed().as_nanos() as f64 / n as f64;
        let t = Instant::now();
        for _ in 0..n {
            s += stm.atomically(|_tx| Ok(1));
        }
        let empty = t.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "stats={stats}: update-1 {upd:.1} ns, read-10 {ro:.1} ns, empty {empty:.1} ns ({s})"
        );
    }
}
