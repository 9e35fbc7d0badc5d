//! Finding a worker blocked inside a C call, for the preemption ticker
//! (`preempt.rs`), which then has the scheduler hand the worker to another thread
//! (`lutra_sched::Carrier::retake`, Go's sysmon retaking the P of an M blocked in a
//! system call).
//!
//! A worker thread is *blocked* when the ticker finds, at two looks at least
//! [`threshold`] apart:
//! 1. the same scheduler slice running on it (`Carrier::observe`: same seat, same
//!    slice counter), so no Lua code between the looks ended the slice, although the
//!    preemption hook was armed by the first look's signal (or by the tick before);
//! 2. its thread's CPU clock advanced by less than an eighth of the time between the
//!    looks: it is not computing (a CPU-bound C call, `string.rep` of a gigabyte or a
//!    long `table.sort`, is preempted as before, never handed off);
//! 3. the kernel reports the thread asleep (`S` or `D` in `/proc/self/task/TID/stat`):
//!    a thread the machine merely did not run (runnable, `R`) is not blocked.
//!
//! What blocks, then: a system call that sleeps (waiting for a child in `os.execute`,
//! reading a pipe, a terminal or a socket, `io.popen`, `sleep`, a C module's blocking
//! call); what does not: computation in C, and waits shorter than the threshold.
//!
//! # Invariants
//! - Only the ticker thread reads or writes a [`Watch`] (it sits in the ticker's
//!   per-slot state).
//! - A watch keeps its first look at a slice until the slice ends, uses CPU or is
//!   found runnable: the second look compares with the start of the wait, not with
//!   the last tick.

use lutra_sched::{Carrier, Observed};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

/// The shortest block handed off: a tenth of a slice, at least 0.5 ms. A shorter
/// one would make spurious hand-offs of calls that sleep briefly (a disk read); a
/// longer one leaves the worker's other processes waiting that long for each call
/// that blocks (a process that starts a command with `io.popen` and reads its pipe
/// blocks once or twice).
pub(crate) fn threshold(slice: Duration) -> Duration {
    (slice / 10).max(Duration::from_micros(500))
}

/// What the ticker needs to look at one worker thread: its carrier, CPU clock and
/// its kernel status file (`/proc/self/task/TID/stat`, kept open: each look rereads
/// it from the start, without opening it again). Made by the worker itself (its
/// first slice).
pub(crate) struct Probe {
    carrier: Carrier,
    clock: libc::clockid_t,
    stat: File,
}

impl Probe {
    /// The calling thread's probe, `None` if it is not a scheduler worker, has no CPU
    /// clock or no status file (no `/proc`: no blocked call can be told then).
    pub(crate) fn here() -> Option<Self> {
        let carrier = lutra_sched::current_carrier()?;
        let mut clock: libc::clockid_t = 0;
        // SAFETY: the calling thread's own handle; `clock` is a valid out parameter.
        if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } != 0 {
            return None;
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let stat = File::open(format!("/proc/self/task/{tid}/stat")).ok()?;
        Some(Self {
            carrier,
            clock,
            stat,
        })
    }

    /// The thread's CPU time so far (zero if the clock cannot be read: the thread
    /// then looks idle, and the kernel's state decides).
    fn cpu(&self) -> Duration {
        let mut time = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a CPU clock id of a thread of this process; `time` is valid. A
        // thread that has exited makes it fail (EINVAL), never fault.
        if unsafe { libc::clock_gettime(self.clock, &mut time) } != 0 {
            return Duration::ZERO;
        }
        Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
    }

    /// Whether the kernel reports the thread asleep in a wait (`S`, `D`).
    fn asleep(&self) -> bool {
        // The line starts with the thread id, its command name (at most 15 bytes, in
        // parentheses) and its state; the fields after it are numbers, so the last
        // ')' of the first bytes ends the name, whatever bytes the name holds.
        let mut head = [0u8; 256];
        let Ok(read) = self.stat.read_at(&mut head, 0) else {
            return false;
        };
        let head = &head[..read];
        let Some(end) = head.iter().rposition(|&byte| byte == b')') else {
            return false;
        };
        matches!(head.get(end + 2), Some(b'S' | b'D'))
    }

    /// Whether the thread still sleeps in a call whose seat was retaken: it runs no
    /// scheduler slice (`Carrier::observe`) while its Lua slice goes on, and its CPU
    /// clock advanced by less than an eighth of the time since the reading in `last`
    /// (which this replaces; with none yet, the answer is no). The hand-off's signal
    /// armed its preemption hook already: another signal would only interrupt the
    /// call it sleeps in.
    pub(crate) fn sleeps_after_hand_off(
        &self,
        last: &mut Option<CpuReading>,
        now: Instant,
    ) -> bool {
        if self.carrier.observe().is_some() {
            *last = None;
            return false;
        }
        let cpu = self.cpu();
        last.replace((cpu, now)).is_some_and(|(cpu_then, then)| {
            idle(
                cpu.saturating_sub(cpu_then),
                now.saturating_duration_since(then),
            )
        })
    }

    /// See [`Carrier::retake`].
    pub(crate) fn retake(&self, observed: Observed) -> bool {
        self.carrier.retake(observed)
    }
}

/// A thread's CPU clock, and when it was read.
pub(crate) type CpuReading = (Duration, Instant);

/// What one look found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No slice runs on the thread.
    Idle,
    /// A slice that computes, or one seen for the first time.
    Running,
    /// The same slice, no CPU used, but not yet for `threshold`.
    Waiting,
    /// Blocked (the module's three conditions): the slice to retake.
    Blocked(Observed),
}

/// The ticker's memory of one thread: the slice it last saw start waiting, and its
/// last reading of the thread's CPU clock.
#[derive(Default)]
pub(crate) struct Watch {
    since: Option<(Observed, Duration, Instant)>,
    last: Option<(Duration, Instant)>,
}

/// Whether `used` CPU time over `wall` time is idle: under an eighth.
fn idle(used: Duration, wall: Duration) -> bool {
    used * 8 < wall.max(Duration::from_micros(1))
}

impl Watch {
    /// Looks at `probe`'s thread at `now`.
    pub(crate) fn look(&mut self, probe: &Probe, now: Instant, threshold: Duration) -> Verdict {
        let Some(observed) = probe.carrier.observe() else {
            self.since = None;
            return Verdict::Idle;
        };
        let cpu = probe.cpu();
        let last = self.last.replace((cpu, now));
        let Some((seen, cpu_then, then)) = self.since.filter(|(seen, ..)| *seen == observed) else {
            // A slice seen for the first time: a thread that was idle since the last
            // look and sleeps now may have blocked already; it is looked at again
            // soon (`Waiting`), not only at the next tick.
            self.since = Some((observed, cpu, now));
            let was_idle = last.is_some_and(|(cpu_last, at)| {
                idle(
                    cpu.saturating_sub(cpu_last),
                    now.saturating_duration_since(at),
                )
            });
            return if was_idle && probe.asleep() {
                Verdict::Waiting
            } else {
                Verdict::Running
            };
        };
        let waited = now.saturating_duration_since(then);
        let computing = seen != observed || !idle(cpu.saturating_sub(cpu_then), waited);
        match again(computing, || probe.asleep(), waited, threshold) {
            Again::Running => {
                self.since = Some((observed, cpu, now));
                Verdict::Running
            }
            Again::Waiting => Verdict::Waiting,
            Again::Blocked => {
                self.since = None;
                Verdict::Blocked(observed)
            }
        }
    }
}

/// What a look at a slice seen before finds (the module's three conditions).
#[derive(Debug, PartialEq, Eq)]
enum Again {
    Running,
    Waiting,
    Blocked,
}

/// The verdict on a slice seen before, `waited` after the look that first saw it
/// wait: `computing` if it ended or used CPU since; `asleep` reads the kernel's
/// state, and only when the slice is idle. A thread that used no CPU but is runnable
/// was not run by the machine (other threads had the cores): it waits for a core, not
/// in a call, so it is `Running` (looked at again at the next tick), not `Waiting`
/// (looked at again within half a threshold, which on a loaded machine would be
/// every half threshold for as long as the load lasts).
fn again(
    computing: bool,
    asleep: impl FnOnce() -> bool,
    waited: Duration,
    threshold: Duration,
) -> Again {
    if computing || !asleep() {
        Again::Running
    } else if waited < threshold {
        Again::Waiting
    } else {
        Again::Blocked
    }
}

#[cfg(test)]
mod tests {
    use super::{Again, again, threshold};
    use std::time::Duration;

    #[test]
    fn only_a_thread_asleep_without_cpu_for_the_threshold_is_blocked() {
        let (short, long) = (Duration::from_micros(100), Duration::from_millis(1));
        let limit = Duration::from_micros(500);
        assert_eq!(again(false, || true, long, limit), Again::Blocked);
        assert_eq!(again(false, || true, short, limit), Again::Waiting);
        // Runnable without CPU: the machine did not run it; no quick looks.
        assert_eq!(again(false, || false, short, limit), Again::Running);
        assert_eq!(again(false, || false, long, limit), Again::Running);
        // Computing: the kernel's state is not even read.
        let unread = || panic!("read the state of a computing thread");
        assert_eq!(again(true, unread, long, limit), Again::Running);
    }

    #[test]
    fn the_threshold_is_a_tenth_of_a_slice_and_at_least_half_a_millisecond() {
        assert_eq!(
            threshold(Duration::from_millis(5)),
            Duration::from_micros(500)
        );
        assert_eq!(
            threshold(Duration::from_millis(50)),
            Duration::from_millis(5)
        );
        assert_eq!(
            threshold(Duration::from_millis(1)),
            Duration::from_micros(500)
        );
    }
}
