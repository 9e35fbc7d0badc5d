//! Resting a worker whose share of the work does not pay for the moves it causes.
//!
//! A task woken by a task of worker `w` runs on `w` (the direct switch, `worker.rs`),
//! so tasks that talk to tasks on two workers cross between them at every exchange.
//! When little runs between two crossings (every process on one rendezvous channel:
//! the rendezvous serialises them, and each crossing costs cache-line transfers of
//! the channel, the task and the Lua state, 0.3–1 µs each when the host places the two
//! CPUs far apart), a second worker adds only those transfers: 500,000 rendezvous on
//! one channel took 1.25–1.6x as long on 2 workers as on one. Such a worker hands its
//! tasks over and rests a while, so one worker runs the exchange without crossings.
//!
//! # The measure (each worker its own, no shared write, one clock read per window)
//! A window is [`WINDOW`] slices of one worker. A slice *crossed* if its task last ran
//! on another worker. At the window's end the window *paid* unless it crossed at least
//! [`MIN_CROSSINGS`] times with less than [`WORK_PER_CROSSING`] of wall time per
//! crossing (the window's time includes the worker's sleeps: an idle worker pays).
//! A window that did not pay makes the worker rest (if it may: not worker 0) for the
//! current rest, which starts at [`REST_MIN`] and doubles, up to [`REST_MAX`], with
//! each unpaid window in a row; a paid window resets it. Work with long slices
//! (CPU-bound processes, fib hub's 90 µs requests, word count) never comes near the
//! threshold (fib hub: 80 µs or more per crossing, five times it); two independent
//! channels rarely cross (a channel's processes stay on the worker that runs its
//! exchange).
//!
//! # The check (a rest must not cost pace)
//! Short work between crossings can still be parallel work (a pipeline whose stages
//! each run a few microseconds per item). So a rest is also a trial: the *pace* is
//! the slices per second of all workers together, over the window that asked for
//! the rest; the pace over a rest that ran to its deadline is compared with it. If it
//! fell below [`PACE_KEPT`] of it, the resting worker was doing useful work: it does
//! not rest again for a *cooldown* of windows, which starts at [`COOLDOWN_MIN`] and
//! doubles, up to [`COOLDOWN_MAX`], with each rest in a row that cost pace, so that
//! such work loses at most about one rest in `COOLDOWN_MAX` windows. Each of the first
//! [`COUNTED_WORKERS`] workers publishes its slice count ([`SliceCounts`]: a store to
//! its own cache line per slice); a deciding worker sums them twice per window.
//!
//! # Invariants
//! - Worker 0 never rests: a runnable unpinned task always has a worker that is not
//!   resting. A rest delays, by at most [`REST_MAX`], only what the resting worker
//!   would have stolen.
//! - A resting worker holds no task: it hands its unpinned ones (those of its private
//!   buffer too) to the global queue first (`TaskQueue::retire`, which wakes one
//!   sleeper), and rests only if its own queue holds none after registering (below);
//!   a push of a task pinned to it ends the rest.
//! - A rest ends at its deadline, at a push of a task pinned to the worker, or at
//!   `wake_all` (shutdown, worker count changes), whichever comes first.
//!
//! # Protocol (rest; no lost wake-up for a pinned task)
//! Worker `w` hands its tasks over (`retire`), then sleeps by `queue/idle.rs`'s
//! protocol on a sleeper set of its own (the resting workers'), with a deadline:
//! register, re-check its own queue and the stop condition (anything: withdraw),
//! sleep until woken or the deadline. The pusher of a task pinned to `h` wakes `h`
//! there after the push (`idle.rs`'s pusher step 2); `wake_all` runs after the stop
//! condition is stored, as for idle workers.

use crate::queue::idle::Idle;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Slices per window.
pub(crate) const WINDOW: u32 = 512;

/// Crossings in a window below which it paid whatever its time (one slice in eight:
/// two independent rendezvous channels on two workers cross about one in 40).
pub(crate) const MIN_CROSSINGS: u32 = 64;

/// Wall time per crossing below which a window did not pay. One channel's rendezvous
/// on two workers run 1.3–4 µs per crossing when the two CPUs are near, several times
/// that when the host places them far apart (which is when the crossings cost most);
/// fib hub's fib(17) requests, 80 µs and more.
pub(crate) const WORK_PER_CROSSING: Duration = Duration::from_micros(16);

/// The first rest after a window that paid.
pub(crate) const REST_MIN: Duration = Duration::from_millis(1);

/// The longest rest: what a task that only a resting worker would have stolen may wait
/// at worst.
pub(crate) const REST_MAX: Duration = Duration::from_millis(32);

/// The share of the pace before a rest that the workers still running must keep
/// during it, or the rest cost pace (the module's check).
pub(crate) const PACE_KEPT: f64 = 0.8;

/// Windows without a rest after the first rest that cost pace.
pub(crate) const COOLDOWN_MIN: u32 = 8;

/// The longest cooldown, in windows.
pub(crate) const COOLDOWN_MAX: u32 = 1024;

/// The workers whose slices the pace counts (the others' are not counted, which only
/// makes a rest look more costly).
pub(crate) const COUNTED_WORKERS: usize = 64;

/// One worker's current window and rest (owned by its run loop).
pub(crate) struct Crossings {
    slices: u32,
    crossed: u32,
    start: Instant,
    /// The workers' slice count ([`SliceCounts::total`]) when the window started.
    all_start: u32,
    rest: Duration,
    /// The pace of the window that asked for the running (or last) rest.
    pace_before: f64,
    /// Windows left before the worker may rest again.
    cooldown: u32,
    /// The next cooldown's length.
    cooldown_next: u32,
}

impl Crossings {
    /// A first window, starting `now`, when the workers have run `all` slices.
    pub(crate) fn new(now: Instant, all: u32) -> Self {
        Self {
            slices: 0,
            crossed: 0,
            start: now,
            all_start: all,
            rest: REST_MIN,
            pace_before: 0.0,
            cooldown: 0,
            cooldown_next: COOLDOWN_MIN,
        }
    }

    /// Counts one slice (whether it `crossed`); at a window's end, the rest the window
    /// asks for if it did not pay. `all` reads the workers' slice count.
    #[inline]
    pub(crate) fn count(&mut self, crossed: bool, all: impl FnOnce() -> u32) -> Option<Duration> {
        self.slices += 1;
        self.crossed += u32::from(crossed);
        if self.slices < WINDOW {
            return None;
        }
        self.close(Instant::now(), all())
    }

    /// Ends the window at `now`, the workers having run `all` slices (a new window
    /// starts): the rest it asks for, if it did not pay and no cooldown runs.
    pub(crate) fn close(&mut self, now: Instant, all: u32) -> Option<Duration> {
        let elapsed = now.saturating_duration_since(self.start);
        let paid = paid(self.crossed, elapsed);
        let pace = pace(all.wrapping_sub(self.all_start), elapsed);
        self.start_window(now, all);
        if paid {
            self.rest = REST_MIN;
            return None;
        }
        if self.cooldown > 0 {
            self.cooldown -= 1;
            return None;
        }
        self.pace_before = pace;
        let rest = self.rest;
        self.rest = (rest * 2).min(REST_MAX);
        Some(rest)
    }

    /// After a rest that began when the last window closed and ended at `now` (as
    /// `end` says), the workers having run `all` slices: the module's check, then a new
    /// window.
    pub(crate) fn after_rest(&mut self, now: Instant, all: u32, end: RestEnd) {
        if end == RestEnd::Expired {
            let elapsed = now.saturating_duration_since(self.start);
            if pace(all.wrapping_sub(self.all_start), elapsed) < PACE_KEPT * self.pace_before {
                self.cooldown = self.cooldown_next;
                self.cooldown_next = (self.cooldown_next * 2).min(COOLDOWN_MAX);
                self.rest = REST_MIN;
            } else {
                self.cooldown_next = COOLDOWN_MIN;
            }
        }
        self.start_window(now, all);
    }

    fn start_window(&mut self, now: Instant, all: u32) {
        self.slices = 0;
        self.crossed = 0;
        self.start = now;
        self.all_start = all;
    }
}

/// Slices per second.
fn pace(slices: u32, elapsed: Duration) -> f64 {
    f64::from(slices) / elapsed.as_secs_f64().max(1e-9)
}

/// One worker's slice count, on a cache line of its own.
#[derive(Default)]
#[repr(align(128))]
struct SliceCount(AtomicU32);

/// The slice counts of the first [`COUNTED_WORKERS`] workers (the module's check).
pub(crate) struct SliceCounts(Box<[SliceCount]>);

impl Default for SliceCounts {
    fn default() -> Self {
        Self(
            (0..COUNTED_WORKERS)
                .map(|_| SliceCount::default())
                .collect(),
        )
    }
}

impl SliceCounts {
    /// Worker `worker` has run `slices` slices (wrapping).
    #[inline(always)]
    pub(crate) fn publish(&self, worker: usize, slices: u32) {
        if let Some(count) = self.0.get(worker) {
            count.0.store(slices, Ordering::Relaxed);
        }
    }

    /// The counts as last published, summed (wrapping: only differences mean
    /// anything).
    pub(crate) fn total(&self) -> u32 {
        self.0.iter().fold(0u32, |sum, count| {
            sum.wrapping_add(count.0.load(Ordering::Relaxed))
        })
    }
}

/// Whether a window of `elapsed` wall time with `crossed` crossings paid (module
/// header).
pub(crate) fn paid(crossed: u32, elapsed: Duration) -> bool {
    crossed < MIN_CROSSINGS || elapsed >= WORK_PER_CROSSING * crossed
}

/// How a rest ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RestEnd {
    /// The worker had a task, or had to stop, after registering (step 3).
    Withdrawn,
    /// A pinned task's push or `wake_all` ended it.
    Woken,
    /// Its deadline passed.
    Expired,
}

/// The resting workers of one runtime.
#[derive(Default)]
pub(crate) struct Resting {
    /// The workers' slice counts (the module's check).
    pub(crate) slices: SliceCounts,
    /// The resting workers, asleep by `queue/idle.rs`'s protocol.
    sleepers: Idle,
}

impl Resting {
    /// The rest of `worker` (the module's protocol), until `deadline`; `busy` is the
    /// re-check (a task in its own queue, or the stop condition).
    pub(crate) fn rest(
        &self,
        worker: usize,
        deadline: Instant,
        busy: impl Fn() -> bool,
    ) -> RestEnd {
        self.sleepers.prepare(worker);
        if busy() {
            self.sleepers.cancel(worker);
            RestEnd::Withdrawn
        } else if self.sleepers.sleep_until(worker, deadline) {
            RestEnd::Woken
        } else {
            RestEnd::Expired
        }
    }

    /// The pusher's step, after a task pinned to `worker` was pushed: ends its rest.
    pub(crate) fn wake(&self, worker: usize) {
        self.sleepers.wake(worker);
    }

    /// Ends every rest (after the stop condition changed).
    pub(crate) fn wake_all(&self) {
        self.sleepers.wake_all();
    }

    /// How many workers rest.
    #[cfg(test)]
    pub(crate) fn resting(&self) -> usize {
        self.sleepers.sleepers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    /// A rest no test waits for: these tests never depend on a deadline.
    const FOREVER: Duration = Duration::from_secs(3600);

    #[test]
    fn a_window_pays_with_few_crossings_or_enough_work_between_them() {
        let window = Duration::from_micros(500);
        assert!(paid(MIN_CROSSINGS - 1, Duration::ZERO));
        assert!(paid(100, WORK_PER_CROSSING * 100));
        assert!(!paid(100, WORK_PER_CROSSING * 99));
        assert!(!paid(WINDOW / 2, window), "one channel's rendezvous");
        assert!(paid(WINDOW / 40, window), "two channels");
    }

    #[test]
    fn unpaid_windows_in_a_row_double_the_rest_up_to_the_longest() {
        let start = Instant::now();
        let mut crossings = Crossings::new(start, 0);
        let mut rests = Vec::new();
        for _ in 0..8 {
            for _ in 0..WINDOW - 1 {
                assert_eq!(crossings.count(true, || 0), None);
            }
            crossings.slices += 1;
            crossings.crossed += 1;
            rests.push(crossings.close(crossings.start + Duration::from_micros(1), 0));
        }
        let ms = Duration::from_millis;
        let expected = [1, 2, 4, 8, 16, 32, 32, 32].map(|n| Some(ms(n)));
        assert_eq!(rests, expected);
        assert_eq!(crossings.close(crossings.start + FOREVER, 0), None);
        assert_eq!(crossings.rest, REST_MIN, "a paid window resets the rest");
    }

    /// A window that did not pay, closed at `start + elapsed` with the workers at
    /// `all` slices (this worker's `WINDOW` slices all crossed).
    fn unpaid_window(crossings: &mut Crossings, elapsed: Duration, all: u32) -> Option<Duration> {
        crossings.slices = WINDOW;
        crossings.crossed = WINDOW;
        let end = crossings.start + elapsed;
        crossings.close(end, all)
    }

    #[test]
    fn a_rest_that_costs_pace_starts_a_cooldown_that_doubles() {
        let ms = Duration::from_millis;
        let mut crossings = Crossings::new(Instant::now(), 0);
        // Each window: 1 ms, this worker's 512 slices and worker 0's 512, a pace of
        // 1,024 slices per ms. Each rest: 1 ms in which worker 0 alone runs 512, half
        // the pace: the resting worker's work was real.
        let mut all = 0u32;
        let window = |crossings: &mut Crossings, all: &mut u32| {
            *all += 1024;
            unpaid_window(crossings, ms(1), *all)
        };
        assert_eq!(window(&mut crossings, &mut all), Some(REST_MIN));
        let mut cooldowns = Vec::new();
        for _ in 0..3 {
            all += 512;
            let end = crossings.start + ms(1);
            crossings.after_rest(end, all, RestEnd::Expired);
            let mut windows = 0;
            let rest = loop {
                match window(&mut crossings, &mut all) {
                    Some(rest) => break rest,
                    None => windows += 1,
                }
            };
            assert_eq!(rest, REST_MIN, "a rest that cost pace resets the rest");
            cooldowns.push(windows);
        }
        assert_eq!(
            cooldowns,
            [COOLDOWN_MIN, 2 * COOLDOWN_MIN, 4 * COOLDOWN_MIN]
        );
    }

    #[test]
    fn a_rest_that_keeps_the_pace_changes_nothing_and_an_early_end_is_not_judged() {
        let ms = Duration::from_millis;
        let mut crossings = Crossings::new(Instant::now(), 0);
        // Window: 1,024 slices of both workers in 1 ms. Rest: worker 0 alone runs
        // 1,024 in 1 ms, the same pace.
        let rest = unpaid_window(&mut crossings, ms(1), 1024);
        assert_eq!(rest, Some(REST_MIN));
        crossings.after_rest(crossings.start + ms(1), 2048, RestEnd::Expired);
        assert_eq!(crossings.cooldown, 0, "the pace was kept");
        let rest = unpaid_window(&mut crossings, ms(1), 3072);
        assert_eq!(
            rest,
            Some(2 * REST_MIN),
            "unpaid windows in a row double the rest"
        );
        // A rest woken early: nothing ran meanwhile, but that is not judged.
        crossings.after_rest(crossings.start + ms(1), 3072, RestEnd::Woken);
        assert_eq!(crossings.cooldown, 0);
    }

    #[test]
    fn the_pace_counts_every_worker_and_only_differences() {
        let counts = SliceCounts::default();
        counts.publish(0, u32::MAX);
        counts.publish(3, 5);
        counts.publish(COUNTED_WORKERS, 1_000);
        let before = counts.total();
        counts.publish(0, 9);
        counts.publish(3, 15);
        assert_eq!(counts.total().wrapping_sub(before), 20);
    }

    #[test]
    fn a_worker_with_a_task_after_registering_does_not_rest() {
        let resting = Resting::default();
        assert_eq!(
            resting.rest(1, Instant::now() + FOREVER, || true),
            RestEnd::Withdrawn
        );
        assert_eq!(resting.resting(), 0);
    }

    #[test]
    fn a_rest_past_its_deadline_ends_and_leaves_nothing_registered() {
        let resting = Resting::default();
        assert_eq!(resting.rest(1, Instant::now(), || false), RestEnd::Expired);
        assert_eq!(resting.resting(), 0);
    }

    #[test]
    fn a_pinned_push_or_wake_all_ends_a_rest() {
        for all in [false, true] {
            let resting = Arc::new(Resting::default());
            let registered = Arc::new(AtomicBool::new(false));
            let worker = {
                let (resting, registered) = (resting.clone(), registered.clone());
                std::thread::spawn(move || {
                    resting.rest(1, Instant::now() + FOREVER, || {
                        // ORDERING: the test's handshake: pairs with the load below
                        // (Release and Acquire would do).
                        registered.store(true, Ordering::SeqCst);
                        false
                    })
                })
            };
            // ORDERING: pairs with the store in the resting thread's stop check.
            while !registered.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            resting.wake(0);
            if all {
                resting.wake_all();
            } else {
                resting.wake(1);
            }
            assert_eq!(worker.join().unwrap(), RestEnd::Woken);
            assert_eq!(resting.resting(), 0);
        }
    }
}
