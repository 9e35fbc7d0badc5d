//! The last reference to a runtime may be dropped by one of its own tasks (a Lua
//! program's runtime is shared by its processes): the drop must not join the worker
//! thread it runs on ("failed to join thread: Resource deadlock
//! avoided"). The order of the drops is fixed by a channel, not left to timing.

use lutra_sched::Runtime;
use std::sync::{Arc, mpsc};

#[test]
fn a_task_can_drop_the_last_reference_to_its_runtime() {
    for workers in [1, 2] {
        let runtime = Arc::new(Runtime::builder().workers(workers).build());
        let held = runtime.clone();
        let (go, wait) = mpsc::channel::<()>();
        let task = runtime.spawn(move || {
            wait.recv().expect("the test thread sends once");
            drop(held);
        });
        drop(runtime);
        go.send(()).expect("the task waits for it");
        assert!(
            task.join().is_ok(),
            "dropping the runtime on its own worker failed ({workers} workers)"
        );
    }
}
