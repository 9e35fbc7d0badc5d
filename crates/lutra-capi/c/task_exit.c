/*
 * task_exit.c -- pthread_exit inside a task of the scheduler (sched.h) ends the
 * task, not the worker thread that runs it: the task's function runs under a
 * sigsetjmp taken here (lutra_shim_run_task), and src/task_exit.rs, which
 * interposes pthread_exit, jumps back to it (lutra_shim_task_exit) when the
 * caller is such a task. Elsewhere pthread_exit is the C library's.
 *
 * Invariants:
 *  - The exit point lies in lutra_shim_run_task's frame, live while the task's
 *    function runs; it is published in the task's own slot (never in C
 *    thread-local storage, which the tasks of a worker share) and withdrawn
 *    before the frame returns.
 *  - Between pthread_exit and the exit point lie the task's C frames and one
 *    Rust trampoline that owns nothing.
 */

#include <setjmp.h>
#include <stddef.h>

/* The task's function. */
typedef void *(*lutra_task_fn)(void *arg);

void lutra_shim_run_task(lutra_task_fn fn, void *arg, sigjmp_buf **exit_slot);
_Noreturn void lutra_shim_task_exit(sigjmp_buf *exit_point);

/* Runs fn(arg), publishing the exit point in *exit_slot meanwhile; returns
 * when fn returns or when the task calls pthread_exit. */
void lutra_shim_run_task(lutra_task_fn fn, void *arg, sigjmp_buf **exit_slot) {
  sigjmp_buf exit_point;
  /* fn, arg and exit_slot are not modified after sigsetjmp. */
  if (sigsetjmp(exit_point, 0) == 0) {
    *exit_slot = &exit_point;
    (void)fn(arg);
  }
  *exit_slot = NULL;
}

_Noreturn void lutra_shim_task_exit(sigjmp_buf *exit_point) {
  siglongjmp(*exit_point, 1);
}
