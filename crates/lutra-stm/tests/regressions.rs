//! Regression: encounter-time locking with a waiting contention manager deadlocked.
//!
//! A waiter settled a conflict from the holder's status once, then waited until the
//! record was no longer locked by *that slot*; the killed holder restarted and locked
//! the same record again in its next attempt, then waited (as the younger) for a
//! record the waiter held. Both spun forever (seen with gdb in the benchmark crate's
//! red-black-tree test under WB-ETL + timestamp). A wait now ends when the holder moves
//! to another attempt, and the conflict is settled afresh (`access.rs`).
//!
//! Two threads lock two variables in opposite orders while spinning threads keep the
//! cores busy (so a waiter that yields stays off the processor long enough for the
//! holder to restart and re-lock).

use lutra_stm::{Config, DesignKind, Stm, TVar, cm};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Runs two threads that lock two variables in opposite orders, yielding in between,
/// while spinning threads keep the cores busy (so that a waiter that yields stays off
/// the processor long enough for the killed holder to restart and re-lock). Returns
/// `Err` with the statistics if no transaction commits for 3 s (a deadlock: a
/// correct engine finishes in a few seconds).
fn opposite_order_transfers(design: DesignKind, manager: &str) -> Result<(), String> {
    const THREADS: usize = 2;
    const SPINNERS: usize = 2;
    const TRANSFERS: u64 = 200;
    let stm = Stm::new(
        Config::default()
            .with_design(design)
            .with_shared_manager(cm::by_name(manager).unwrap()),
    );
    let vars = Arc::new([TVar::new(0u64), TVar::new(0u64)]);
    let finished = Arc::new(AtomicUsize::new(0));
    let abandon = Arc::new(AtomicBool::new(false));
    for _ in 0..SPINNERS {
        let (finished, abandon) = (finished.clone(), abandon.clone());
        std::thread::spawn(move || {
            while finished.load(Ordering::Relaxed) < THREADS && !abandon.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
    }
    for thread in 0..THREADS {
        let (stm, vars, finished) = (stm.clone(), vars.clone(), finished.clone());
        std::thread::spawn(move || {
            let (first, second) = if thread % 2 == 0 { (0, 1) } else { (1, 0) };
            for _ in 0..TRANSFERS {
                stm.atomically(|tx| {
                    tx.modify(&vars[first], |n| n + 1)?;
                    std::thread::yield_now();
                    tx.modify(&vars[second], |n| n + 1)
                });
            }
            finished.fetch_add(1, Ordering::SeqCst);
        });
    }
    let mut last = (stm.clock(), Instant::now());
    while finished.load(Ordering::SeqCst) < THREADS {
        std::thread::sleep(Duration::from_millis(50));
        if stm.clock() != last.0 {
            last = (stm.clock(), Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(3) {
            abandon.store(true, Ordering::Relaxed);
            return Err(format!(
                "{} + {manager}: no commit for 3 s after {} commits ({} threads finished); {}",
                design.name(),
                last.0,
                finished.load(Ordering::SeqCst),
                stm.stats().total
            ));
        }
    }
    let totals = stm.atomically(|tx| Ok((tx.read(&vars[0])?, tx.read(&vars[1])?)));
    assert_eq!(
        totals,
        (THREADS as u64 * TRANSFERS, THREADS as u64 * TRANSFERS)
    );
    Ok(())
}

/// The deadlock of the module docs, under WB-ETL with the managers that make the
/// younger transaction wait.
#[test]
fn etl_waiter_re_resolves_after_the_holder_restarts() {
    let failures: Vec<String> = ["timestamp", "size_matters", "priority"]
        .into_iter()
        .filter_map(|manager| opposite_order_transfers(DesignKind::WriteBackEtl, manager).err())
        .collect();
    assert!(failures.is_empty(), "deadlocks:\n{}", failures.join("\n"));
}

/// A `become_irrevocable` that fails validation must not keep the commit gate while
/// its transaction backs off before the irrevocable restart: other updaters would be
/// held back meanwhile (they abort with `Irrevocable` at commit, and wait).
#[test]
fn a_failed_become_irrevocable_leaves_the_gate_open() {
    use lutra_stm::{AbortReason, TxDescriptor, TxOptions};
    let stm = Stm::default();
    let mut x: usize = 0;
    let mut y: usize = 0;
    let (x, y) = (&raw mut x, &raw mut y);
    let mut reader = TxDescriptor::new(&stm).unwrap();
    let mut writer = TxDescriptor::new(&stm).unwrap();
    reader.begin(TxOptions::default());
    // SAFETY: `x` and `y` outlive the transactions and are only accessed through them.
    unsafe { reader.load(x).unwrap() };
    writer.begin(TxOptions::default());
    // SAFETY: as above.
    unsafe { writer.store(x, 1, usize::MAX).unwrap() };
    writer.commit().unwrap();
    let failed = reader.become_irrevocable();
    assert_eq!(
        failed.map_err(|abort| abort.reason()),
        Err(AbortReason::Irrevocable)
    );
    reader.rollback(AbortReason::Irrevocable);
    // The reader now waits (backs off, or is switched away) before its restart.
    writer.begin(TxOptions::default());
    // SAFETY: as above.
    unsafe { writer.store(y, 1, usize::MAX).unwrap() };
    assert_eq!(
        writer.commit().map_err(|abort| abort.reason()),
        Ok(()),
        "an updater was held back by the gate of a transaction between attempts"
    );
    reader.restart();
    assert!(reader.is_irrevocable(), "the restart is irrevocable");
    reader.commit().unwrap();
}
