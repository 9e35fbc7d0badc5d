//! Per-site transaction length (seed 000, Fig. 3) driven by the fake hardware backend:
//! a site whose transactions overflow beyond some number of steps settles on the
//! longest length of the geometric sequence 255, 191, 143, … that fits, and is no
//! longer watched after a quiet profiling period; other sites keep their own length.

use lutra_elide::global::{
    AbortBeyond, AbortClass, Backend, FallbackCause, GilConfig, GlobalLock, LengthPolicy,
    LiveThread, Script, Step,
};
use lutra_stm::Stm;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

const OVERFLOWING: u32 = 1;
const QUIET: u32 = 2;

/// Runs `steps` empty steps at `site`.
fn run(me: &mut LiveThread, site: u32, steps: u64) {
    me.run_steps(site, 0u64, |_, done| {
        *done += 1;
        Ok(if *done == steps {
            Step::Done(())
        } else {
            Step::Continue
        })
    });
}

fn overflowing_lock(limit: u32, policy: LengthPolicy) -> GlobalLock {
    GlobalLock::with_backend(
        &Stm::default(),
        GilConfig::default().with_length(policy),
        Backend::fake(AbortBeyond {
            steps: limit,
            class: AbortClass::Persistent,
            only_site: Some(OVERFLOWING),
        }),
    )
}

#[test]
fn the_length_settles_on_the_paper_fixed_point() {
    let gil = overflowing_lock(20, LengthPolicy::DYNAMIC);
    let mut me = gil.register().unwrap();
    let _idle = gil.register().unwrap();
    run(&mut me, OVERFLOWING, 20_000);
    run(&mut me, QUIET, 20_000);
    assert_eq!(gil.length(OVERFLOWING), 18, "255 → 191 → … → 24 → 18 ≤ 20");
    assert_eq!(gil.length(QUIET), 255);
    let stats = gil.stats();
    let site = stats.by_site[&OVERFLOWING];
    // Nine shortenings, each on the fifth aborted transaction of its period; every
    // aborted transaction fell back (persistent) with its full length.
    assert_eq!(site.aborts_of(AbortClass::Persistent), 45, "{site}");
    assert_eq!(site.fallbacks_for(FallbackCause::Persistent), 45, "{site}");
    assert_eq!(site.total_aborts(), 45, "{site}");
    assert_eq!(site.steps, 20_000, "{site}");
    assert_eq!(stats.by_site[&QUIET].total_aborts(), 0);
}

#[test]
fn an_always_aborting_site_reaches_length_one() {
    let gil = overflowing_lock(0, LengthPolicy::DYNAMIC);
    let mut me = gil.register().unwrap();
    let _idle = gil.register().unwrap();
    run(&mut me, OVERFLOWING, 5_000);
    assert_eq!(gil.length(OVERFLOWING), 1);
    let site = gil.stats().by_site[&OVERFLOWING];
    // 16 shortenings × 5 aborted transactions; at length 1 the single step runs alone
    // and the script's limit of 0 steps still aborts it at its commit: the length
    // cannot go lower, so the site keeps falling back.
    assert_eq!(site.length, 1);
    assert!(site.fallbacks() >= 80, "{site}");
}

/// Overflows beyond `limit` steps, a limit the test changes while it runs.
struct MovingLimit(Arc<AtomicU32>);

impl Script for MovingLimit {
    fn at_yield_point(&mut self, _site: u32, steps: u32) -> Option<AbortClass> {
        (steps >= self.0.load(Ordering::Relaxed)).then_some(AbortClass::Persistent)
    }

    fn at_commit(&mut self, _site: u32, _steps: u32) -> Option<AbortClass> {
        None
    }
}

#[test]
fn no_adjustment_after_a_quiet_profiling_period() {
    let limit = Arc::new(AtomicU32::new(20));
    let gil = GlobalLock::with_backend(
        &Stm::default(),
        GilConfig::default(),
        Backend::fake(MovingLimit(limit.clone())),
    );
    let mut me = gil.register().unwrap();
    let _idle = gil.register().unwrap();
    run(&mut me, OVERFLOWING, 20_000);
    assert_eq!(gil.length(OVERFLOWING), 18);
    let before = gil.stats().by_site[&OVERFLOWING];
    limit.store(5, Ordering::Relaxed);
    run(&mut me, OVERFLOWING, 1_800);
    let after = gil.stats().by_site[&OVERFLOWING];
    assert_eq!(
        gil.length(OVERFLOWING),
        18,
        "the period is over: not watched"
    );
    assert_eq!(
        after.aborts_of(AbortClass::Persistent) - before.aborts_of(AbortClass::Persistent),
        100,
        "every one of the 100 new transactions aborts and falls back"
    );
}

#[test]
fn fixed_lengths_do_not_adapt() {
    for (length, aborting) in [(1, false), (16, false), (256, true)] {
        let gil = overflowing_lock(20, LengthPolicy::Fixed(length));
        let mut me = gil.register().unwrap();
        let _idle = gil.register().unwrap();
        run(&mut me, OVERFLOWING, 4_096);
        let site = gil.stats().by_site[&OVERFLOWING];
        assert_eq!(site.length, length);
        assert_eq!(
            site.transactions,
            4_096u64.div_ceil(u64::from(length)),
            "{site}"
        );
        assert_eq!(site.fallbacks() == site.transactions, aborting, "{site}");
    }
}
