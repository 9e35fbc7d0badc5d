//! The machine a run measured: its processor and cores, and the load it carried.
//!
//! A [`LoadMonitor`] samples `/proc/loadavg` and `/proc/stat` in the background. For
//! a window (one experiment) it reports the load average seen and the *foreign* load:
//! processor time spent by everything but this process and its children (the busy
//! time of `/proc/stat` minus this process tree's own time from `/proc/self/stat`,
//! children counted once they have been waited for, which the suite does before it
//! closes a window). A window whose foreign load exceeds [`FOREIGN_LIMIT`] of the
//! cores is marked in the report: its figures were taken on a shared machine.
//!
//! Outside Linux the files are missing and every figure is `None`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The share of the cores that other processes may keep busy before a window is
/// marked as loaded.
pub const FOREIGN_LIMIT: f64 = 0.25;

/// How often the monitor samples.
const PERIOD: Duration = Duration::from_millis(250);

/// Clock ticks per second of `/proc/stat` and `/proc/self/stat` (Linux: 100).
const TICKS: f64 = 100.0;

/// What the report says about the machine.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Processors available to this process.
    pub cores: usize,
    /// The processor's model name (`/proc/cpuinfo`), or "unknown".
    pub model: String,
    /// The kernel (`/proc/sys/kernel/osrelease`), or "unknown".
    pub kernel: String,
    /// 1-, 5- and 15-minute load averages when the run started.
    pub load_before: Option<[f64; 3]>,
}

impl Machine {
    /// Reads the machine's description now.
    pub fn probe() -> Self {
        let model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|line| line.starts_with("model name"))
                    .and_then(|line| line.split_once(':'))
                    .map(|(_, name)| name.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".into(), |text| text.trim().to_owned());
        Self {
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            model,
            kernel,
            load_before: load_average(),
        }
    }
}

/// The load of one window.
#[derive(Clone, Copy, Debug, Default)]
pub struct WindowLoad {
    /// Wall-clock length of the window.
    pub elapsed: Duration,
    /// 1-minute load average at the start of the window.
    pub load_start: Option<f64>,
    /// Highest 1-minute load average sampled during the window.
    pub load_max: Option<f64>,
    /// Processors kept busy on average by other processes during the window.
    pub foreign_cores: Option<f64>,
}

impl WindowLoad {
    /// Whether other processes kept more than [`FOREIGN_LIMIT`] of `cores` busy.
    pub fn is_loaded(&self, cores: usize) -> bool {
        self.foreign_cores
            .is_some_and(|foreign| foreign > FOREIGN_LIMIT * cores as f64)
    }
}

/// Samples the load in the background until dropped.
#[derive(Debug)]
pub struct LoadMonitor {
    samples: Arc<Mutex<Vec<(Instant, f64)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// A window opened by [`LoadMonitor::open`].
#[derive(Clone, Copy, Debug)]
pub struct Window {
    start: Instant,
    busy: Option<f64>,
    own: Option<f64>,
    load: Option<f64>,
}

impl LoadMonitor {
    /// Starts sampling `/proc/loadavg`.
    pub fn start() -> Self {
        let samples: Arc<Mutex<Vec<(Instant, f64)>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (samples, stop) = (samples.clone(), stop.clone());
            std::thread::Builder::new()
                .name("load-monitor".into())
                .spawn(move || {
                    // ORDERING: the flag carries no data; Relaxed only bounds how
                    // late the sampler notices it.
                    while !stop.load(Ordering::Relaxed) {
                        if let Some([one, _, _]) = load_average() {
                            samples
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push((Instant::now(), one));
                        }
                        std::thread::sleep(PERIOD);
                    }
                })
                .ok()
        };
        Self {
            samples,
            stop,
            thread,
        }
    }

    /// Opens a window now.
    pub fn open(&self) -> Window {
        Window {
            start: Instant::now(),
            busy: busy_seconds(),
            own: own_seconds(),
            load: load_average().map(|[one, _, _]| one),
        }
    }

    /// Closes `window` now (after every child of the window was waited for).
    pub fn close(&self, window: Window) -> WindowLoad {
        let elapsed = window.start.elapsed();
        let load_max = self
            .samples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(at, _)| *at >= window.start)
            .map(|&(_, one)| one)
            .chain(window.load)
            .reduce(f64::max);
        let foreign_cores = match (window.busy, busy_seconds(), window.own, own_seconds()) {
            (Some(busy0), Some(busy1), Some(own0), Some(own1)) => {
                let foreign = (busy1 - busy0) - (own1 - own0);
                Some((foreign / elapsed.as_secs_f64().max(1e-3)).max(0.0))
            }
            _ => None,
        };
        WindowLoad {
            elapsed,
            load_start: window.load,
            load_max,
            foreign_cores,
        }
    }
}

impl Drop for LoadMonitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The 1-, 5- and 15-minute load averages.
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// Seconds of processor time all processors spent busy since boot (`/proc/stat`:
/// user, nice, system, irq, softirq, steal).
fn busy_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|line| line.starts_with("cpu "))?;
    let ticks: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal
    let busy = [0, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| ticks.get(i))
        .sum::<f64>();
    Some(busy / TICKS)
}

/// Seconds of processor time of this process and its waited-for children
/// (`/proc/self/stat`: utime, stime, cutime, cstime).
fn own_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start at the state.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = (11..=14)
        .map(|i| fields.get(i)?.parse::<f64>().ok())
        .sum::<Option<f64>>()?;
    Some(ticks / TICKS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reports_its_length_and_never_a_negative_load() {
        let monitor = LoadMonitor::start();
        let window = monitor.open();
        std::thread::sleep(Duration::from_millis(30));
        let load = monitor.close(window);
        assert!(load.elapsed >= Duration::from_millis(30));
        if cfg!(target_os = "linux") {
            assert!(load.foreign_cores.is_some_and(|f| f >= 0.0), "{load:?}");
            assert!(load.load_max.is_some());
        }
    }

    #[test]
    fn loaded_means_above_the_limit_share_of_the_cores() {
        let load = WindowLoad {
            foreign_cores: Some(0.6),
            ..WindowLoad::default()
        };
        assert!(load.is_loaded(2));
        assert!(!load.is_loaded(4));
        assert!(!WindowLoad::default().is_loaded(1));
    }
}
