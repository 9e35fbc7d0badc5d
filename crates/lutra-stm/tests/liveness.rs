//! Liveness when a driver restarts killed attempts at once (as `TxDescriptor`
//! drivers such as the C ABI may): under encounter-time locking and the `Timestamp`
//! manager, a killed younger writer used to restart and re-lock the record its older
//! killer was waiting for before the killer saw it free, be killed again, and so on
//! (one transaction aborted 686,393 times in a row in a debug build). A killed attempt
//! now waits for its killer's attempt to end before restarting; this test drives
//! descriptors with no yield or delay of its own and requires every transaction to
//! commit with a bounded number of aborts in a row.

use lutra_stm::{Abort, Config, DesignKind, Stm, TxDescriptor, TxOptions, cm};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const ACCOUNTS: usize = 4;
const THREADS: usize = 4;

/// Runs `body` as a transaction, restarting at once after every abort.
fn run_restarting_at_once(
    desc: &mut TxDescriptor,
    mut body: impl FnMut(&mut TxDescriptor) -> Result<(), Abort>,
) -> u64 {
    let mut aborts = 0;
    desc.begin(TxOptions::default());
    loop {
        let outcome = body(desc).and_then(|()| desc.commit());
        match outcome {
            Ok(()) => return aborts,
            Err(abort) => {
                desc.rollback(abort.reason());
                aborts += 1;
                desc.restart();
            }
        }
    }
}

#[test]
fn oldest_transaction_commits_when_killed_writers_restart_at_once() {
    let stm = Stm::new(
        Config::default()
            .with_design(DesignKind::WriteBackEtl)
            .with_manager(cm::Timestamp),
    );
    let accounts: Arc<Vec<AtomicU64>> =
        Arc::new((0..ACCOUNTS).map(|_| AtomicU64::new(100)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let max_aborts = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(20);
    let workers: Vec<_> = (0..THREADS)
        .map(|id| {
            let (stm, accounts, stop, max_aborts) = (
                stm.clone(),
                accounts.clone(),
                stop.clone(),
                max_aborts.clone(),
            );
            std::thread::spawn(move || {
                let mut desc = TxDescriptor::new(&stm).unwrap();
                let mut done = 0u64;
                let mut seed = id as u64 + 1;
                while !stop.load(Ordering::Relaxed) && done < 20_000 {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let from = (seed >> 33) as usize % ACCOUNTS;
                    let to = (from + 1 + (seed >> 40) as usize % (ACCOUNTS - 1)) % ACCOUNTS;
                    let words: Vec<*mut usize> =
                        accounts.iter().map(|a| a.as_ptr() as *mut usize).collect();
                    let aborts = if done.is_multiple_of(10) {
                        run_restarting_at_once(&mut desc, |desc| {
                            let mut total = 0usize;
                            for word in &words {
                                // SAFETY: the accounts outlive the test; only transactions write them.
                                total = total.wrapping_add(unsafe { desc.load(*word) }?);
                            }
                            assert_eq!(total, 100 * ACCOUNTS);
                            Ok(())
                        })
                    } else {
                        run_restarting_at_once(&mut desc, |desc| {
                            // SAFETY: as above.
                            unsafe {
                                let balance = desc.load(words[from])?;
                                desc.store(words[from], balance.wrapping_sub(1), usize::MAX)?;
                                let balance = desc.load(words[to])?;
                                desc.store(words[to], balance.wrapping_add(1), usize::MAX)
                            }
                        })
                    };
                    max_aborts.fetch_max(aborts, Ordering::Relaxed);
                    done += 1;
                }
                done
            })
        })
        .collect();
    while Instant::now() < deadline && !workers.iter().all(|w| w.is_finished()) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let finished = workers.iter().all(|w| w.is_finished());
    stop.store(true, Ordering::Relaxed);
    let done: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let max = max_aborts.load(Ordering::Relaxed);
    assert!(
        finished && max < 10_000,
        "{done} of {} transactions in 20 s; one transaction aborted {max} times in a row",
        THREADS * 20_000
    );
}
