//! I/O in an optimistic section: the section re-runs exclusively exactly once, and
//! the I/O happens exactly once, alone and under contention.

use lutra_elide::coop::{CoopLock, CoopTx, Mode};
use lutra_stm::{AbortReason, Stm, TVar};
use std::io::Write;
use std::sync::Arc;

#[test]
fn io_in_an_optimistic_section_reruns_exclusively_once() {
    let (stm, lock) = (Stm::default(), CoopLock::new());
    let balance = TVar::new(100i64);
    let (mut modes, mut printed) = (Vec::new(), Vec::new());
    let seen = lock.optimistic(&stm, |tx| {
        modes.push(tx.mode());
        let now = tx.read(&balance)? - 1;
        tx.write(&balance, now)?;
        tx.io(|| printed.push(now))?;
        Ok(now)
    });
    assert_eq!(seen, 99);
    assert_eq!(modes, [Mode::Optimistic, Mode::Exclusive]);
    assert_eq!(printed, [99], "the I/O ran once, in the exclusive run");
    let stats = stm.stats().total;
    assert_eq!(stats.aborts_for(AbortReason::Irrevocable), 1, "one restart");
    assert_eq!((stats.commits, stats.irrevocable_commits), (1, 1));
    assert_eq!(lock.generation(), 1);
    assert!(!lock.is_held());
}

/// An exclusive section does its I/O at once, in its only run.
#[test]
fn io_in_an_exclusive_section_runs_at_once() {
    let (stm, lock) = (Stm::default(), CoopLock::new());
    let mut runs = 0;
    let mut printed = 0;
    lock.exclusive(&stm, |tx| {
        runs += 1;
        tx.io(|| printed += 1)
    });
    assert_eq!((runs, printed), (1, 1));
    assert_eq!(stm.stats().total.total_aborts(), 0);
}

/// Many more threads than cores; one section in ten writes a line to a file (which
/// must not be repeated). Every line is there once, and the data agree with it.
#[test]
fn io_under_contention_happens_exactly_once() {
    const THREADS: usize = 16;
    const SECTIONS: usize = 200;
    let stm = Stm::default();
    let lock = Arc::new(CoopLock::new());
    let counter = Arc::new(TVar::new(0u64));
    let path = std::env::temp_dir().join(format!("lutra-coop-io-{}.log", std::process::id()));
    let file = Arc::new(std::fs::File::create(&path).unwrap());
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (stm, lock, counter, file) =
                (stm.clone(), lock.clone(), counter.clone(), file.clone());
            std::thread::spawn(move || {
                for section in 0..SECTIONS {
                    lock.optimistic(&stm, |tx| {
                        let value = tx.read(&counter)? + 1;
                        tx.write(&counter, value)?;
                        if section % 10 == 0 {
                            tx.io(|| writeln!(&*file, "{thread} {section} {value}").unwrap())?;
                        }
                        Ok(())
                    });
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut lines: Vec<(usize, usize, u64)> = text
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            (
                fields[0].parse().unwrap(),
                fields[1].parse().unwrap(),
                fields[2].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lines.len(),
        THREADS * SECTIONS / 10,
        "each I/O exactly once"
    );
    lines.sort_unstable_by_key(|&(_, _, value)| value);
    lines.dedup_by_key(|&mut (_, _, value)| value);
    assert_eq!(
        lines.len(),
        THREADS * SECTIONS / 10,
        "each value written by one section"
    );
    let total = (THREADS * SECTIONS) as u64;
    assert_eq!(stm.atomically(|tx| tx.read(&counter)), total);
    assert_eq!(lock.generation(), THREADS * SECTIONS / 10);
    assert!(!lock.is_held());
}
