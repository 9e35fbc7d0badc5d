//! Profiling aid: one thread runs the red-black tree (1024 keys, 20% updates) on the
//! STM for a few seconds and then sequentially, printing both rates.
//! `cargo run --release -p lutra-bench --example rb_profile`
use lutra_bench::workloads::intset::{RbTree, Sequential, SharedIntSet, StmIntSet};
use lutra_stm::{Config, Stm};
use std::time::{Duration, Instant};

fn main() {
    let seconds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let set: StmIntSet<RbTree<lutra_stm::TVar<u64>>> =
        StmIntSet::new(Stm::new(Config::default()), 2048);
    let mut pool = set.handle();
    let mut seq: Sequential<RbTree<lutra_bench::workloads::intset::PlainWord>> =
        Sequential::new(2048);
    for key in (0..2048).step_by(2) {
        set.insert(&mut pool, key);
        seq.insert(key);
    }
    let run = |op: &mut dyn FnMut(u64, u32)| {
        let (start, mut ops) = (Instant::now(), 0u64);
        while start.elapsed() < Duration::from_secs(seconds) {
            for _ in 0..1000 {
                let r = fastrand::u32(0..100);
                op(fastrand::u64(0..2048), r);
                ops += 1;
            }
        }
        ops as f64 / start.elapsed().as_secs_f64()
    };
    let stm_rate = run(&mut |key, r| {
        if r < 10 {
            set.insert(&mut pool, key);
        } else if r < 20 {
            set.remove(&mut pool, key);
        } else {
            set.contains(&mut pool, key);
        }
    });
    let seq_rate = run(&mut |key, r| {
        if r < 10 {
            seq.insert(key);
        } else if r < 20 {
            seq.remove(key);
        } else {
            seq.contains(key);
        }
    });
    println!(
        "stm {:.2}M ops/s  seq {:.2}M ops/s  overhead {:.2}x",
        stm_rate / 1e6,
        seq_rate / 1e6,
        seq_rate / stm_rate
    );
}
