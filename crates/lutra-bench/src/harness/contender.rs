//! The implementations a benchmark compares, and the engine each STM contender runs on.
//!
//! | contender | label | threads | what it is |
//! |-----------|-------|---------|------------|
//! | [`Contender::Sequential`] | `seq` | 1 | the structure alone, no synchronization |
//! | [`Contender::Ceiling`] | `ceiling` | 2 | two sequential runs side by side, each on its own copy: the measured ceiling of 2-thread scaling on this machine |
//! | [`Contender::Mutex`] | `mutex` | any | one global `std::sync::Mutex` |
//! | [`Contender::RwLock`] | `rwlock` | any | one global `std::sync::RwLock` (read-only operations share it) |
//! | [`Contender::Stm`] | `wb-ctl/backoff`, … | any | a fresh engine of that design and contention manager per run |

use lutra_stm::{Config, DesignKind, Stm, cm};

/// Threads of the [`Contender::Ceiling`] run.
pub const CEILING_THREADS: usize = 2;

/// One implementation under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Contender {
    /// One thread, unsynchronized.
    Sequential,
    /// [`CEILING_THREADS`] unsynchronized runs on private copies, at once.
    Ceiling,
    /// A global mutex.
    Mutex,
    /// A global reader-writer lock.
    RwLock,
    /// The STM with this design and contention manager (a name from
    /// [`lutra_stm::cm::NAMES`]).
    Stm {
        /// When write locks are taken.
        design: DesignKind,
        /// Who gives way in a conflict.
        manager: &'static str,
    },
}

impl Contender {
    /// Sequential, ceiling, mutex, rwlock, then every design × manager given.
    pub fn sweep(designs: &[DesignKind], managers: &[&'static str]) -> Vec<Contender> {
        let mut all = vec![Self::Sequential, Self::Ceiling, Self::Mutex, Self::RwLock];
        for &design in designs {
            for &manager in managers {
                all.push(Self::Stm { design, manager });
            }
        }
        all
    }

    /// The name in tables: `seq`, `ceiling`, `mutex`, `rwlock` or `design/manager`.
    pub fn label(&self) -> String {
        match self {
            Self::Stm { design, manager } => format!("{}/{}", design.name(), manager),
            other => other.kind().to_string(),
        }
    }

    /// `seq`, `ceiling`, `mutex`, `rwlock` or `stm` (the CSV's `impl` column).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sequential => "seq",
            Self::Ceiling => "ceiling",
            Self::Mutex => "mutex",
            Self::RwLock => "rwlock",
            Self::Stm { .. } => "stm",
        }
    }

    /// The design's name, or `""` for the baselines.
    pub fn design_name(&self) -> &'static str {
        match self {
            Self::Stm { design, .. } => design.name(),
            _ => "",
        }
    }

    /// The manager's name, or `""` for the baselines.
    pub fn manager_name(&self) -> &'static str {
        match self {
            Self::Stm { manager, .. } => manager,
            _ => "",
        }
    }

    /// The thread counts this contender runs with, out of `requested`: the sequential
    /// run only with 1 thread, the ceiling only with [`CEILING_THREADS`], the others
    /// with all.
    pub fn thread_counts(&self, requested: &[usize]) -> Vec<usize> {
        match self {
            Self::Sequential => vec![1],
            Self::Ceiling => vec![CEILING_THREADS],
            _ => requested.to_vec(),
        }
    }

    /// A fresh engine for an STM contender (statistics on); `None` for the baselines.
    pub fn engine(&self) -> Option<Stm> {
        let Self::Stm { design, manager } = *self else {
            return None;
        };
        let manager = cm::by_name(manager).expect("contender managers are validated names");
        Some(Stm::new(
            Config::default()
                .with_design(design)
                .with_shared_manager(manager),
        ))
    }
}

/// Parses a design name (`wb-ctl`, `wb-etl`, `ctl`, `etl`).
///
/// # Errors
/// A message naming the accepted values.
pub fn parse_design(name: &str) -> Result<DesignKind, String> {
    DesignKind::from_name(name)
        .ok_or_else(|| format!("unknown design `{name}` (expected wb-ctl or wb-etl)"))
}

/// Parses a contention manager name into its canonical `'static` spelling.
///
/// # Errors
/// A message naming the accepted values.
pub fn parse_manager(name: &str) -> Result<&'static str, String> {
    let canonical = cm::by_name(name).map(|manager| manager.name());
    canonical
        .and_then(|canonical| cm::NAMES.into_iter().find(|known| *known == canonical))
        .ok_or_else(|| {
            format!(
                "unknown contention manager `{name}` (expected one of {})",
                cm::NAMES.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_label() {
        assert_eq!(parse_manager("os_prio"), Ok("priority"));
        assert!(parse_manager("polite").is_err());
        let stm = Contender::Stm {
            design: parse_design("etl").unwrap(),
            manager: "timestamp",
        };
        assert_eq!(stm.label(), "wb-etl/timestamp");
        assert_eq!(stm.engine().unwrap().config().manager.name(), "timestamp");
        assert_eq!(Contender::Ceiling.thread_counts(&[1, 4]), vec![2]);
    }
}
