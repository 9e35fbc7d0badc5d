use lutra_stm::{Config, DesignKind, Stm, TVar, cm};
use std::sync::Arc;
fn main() {
    for design in DesignKind::ALL {
        for m in cm::NAMES {
            let stm = Stm::new(
                Config::default()
                    .with_design(design)
                    .with_shared_manager(cm::by_name(m).unwrap()),
            );
            let accts: Arc<Vec<TVar<i64>>> = Arc::new((0..64).map(|_| TVar::new(1000)).collect());
            let t0 = std::time::Instant::now();
            let hs: Vec<_> = (0..64)
                .map(|t| {
                    let (stm, a) = (stm.clone(), accts.clone());
                    std::thread::spawn(move || {
                        for i in 0..2000u64 {
                            if i % 10 == 0 {
                                let total = stm.atomically(|tx| {
                                    let mut s = 0;
                                    for v in a.iter() {
                                        s += tx.read(v)?;
                                    }
                                    Ok(s)
                                });
                                assert_eq!(total, 64000);
                            } else {
                                let x = fastrand::usize(0..64);
                                let y = fastrand::usize(0..64);
                                stm.atomically(|tx| {
                                    tx.modify(&a[x], |b| b - 1)?;
                                    tx.modify(&a[y], |b| b + 1)
                                });
                            }
                        }
                        let _ = t;
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            let s = stm.stats();
            println!(
                "{:7} {:13} {:?} {}",
                design.name(),
                m,
                t0.elapsed(),
                s.total
            );
        }
    }
}
