//! Quick checks of the core task operations (the full suite lives beside it).
use lutra_sched::{Barrier, Runtime, current_waker, park};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

#[test]
fn panics_come_back_through_join() {
    let runtime = Runtime::builder().workers(2).build();
    let task = runtime.spawn(|| -> u32 { panic!("boom") });
    let payload = task.join().unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    assert_eq!(runtime.spawn(|| 7).join().unwrap(), 7);
}

#[test]
fn park_unpark_loses_no_wake_up() {
    let runtime = Runtime::builder().workers(2).build();
    for _ in 0..200 {
        let flag = Arc::new(AtomicBool::new(false));
        let slot = Arc::new(std::sync::Mutex::new(None));
        let (f, s) = (flag.clone(), slot.clone());
        let sleeper = runtime.spawn(move || {
            *s.lock().unwrap() = Some(current_waker());
            while !f.load(Ordering::SeqCst) {
                park();
            }
        });
        let waker = loop {
            if let Some(w) = slot.lock().unwrap().take() {
                break w;
            }
            std::thread::yield_now();
        };
        flag.store(true, Ordering::SeqCst);
        waker.wake();
        sleeper.join().unwrap();
    }
}

#[test]
fn barrier_with_many_more_tasks_than_workers() {
    let runtime = Runtime::builder().workers(2).build();
    let barrier = Arc::new(Barrier::new(200));
    let phase = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let (barrier, phase) = (barrier.clone(), phase.clone());
            runtime.spawn(move || {
                for round in 0..5 {
                    assert!(phase.load(Ordering::SeqCst) >= round * 200);
                    phase.fetch_add(1, Ordering::SeqCst);
                    barrier.wait();
                    assert!(phase.load(Ordering::SeqCst) >= (round + 1) * 200);
                    barrier.wait();
                }
            })
        })
        .collect();
    tasks.into_iter().for_each(|t| t.join().unwrap());
}
