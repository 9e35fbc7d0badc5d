/*
 * lutra/sched.h -- Lutra's scheduler for C: many tasks on a few pinned worker
 * threads, with the threading and scheduling interface of LUTS (Nicacio,
 * Baldassin, Araujo: "LUTS: a Lightweight User-Level Transactional Scheduler",
 * 2010): luts_init, luts_start, luts_barrier_wait, luts_yield, luts_setid,
 * luts_switch, luts_shutdown become the sched_* functions below.
 *
 * Usage, with stm.h (included by this header):
 *
 *   stm_init();                        the STM, once
 *   sched_init(0);                     one worker per core
 *   sched_barrier_init(ntasks);        if the tasks use sched_barrier_wait
 *   for (i = 0; i < ntasks; i++)
 *     sched_start(work, &data[i]);     instead of pthread_create
 *   sched_wait();                      instead of joining them
 *   sched_shutdown();
 *   stm_exit();
 *
 *   void *work(void *arg) {            unchanged thread code
 *     stm_init_thread();
 *     ... transactions, sched_barrier_wait(), sched_yield() ...
 *     stm_exit_thread();
 *     return NULL;
 *   }
 *
 * A C program written for threads and tinySTM becomes a many-task program by
 * replacing its thread creation: run 64 tasks on 8 cores, and only 8 run at once.
 *
 * TASKS ARE THREADS FOR STM.H. Inside a task, stm.h's "thread" is the task: the
 * task calls stm_init_thread, gets its own handle, runs its own transactions with
 * its own jump buffer, and has its own statistics and last error
 * (lutra_last_error), however many tasks share its worker. A task that returns
 * without stm_exit_thread is unregistered then, as a thread that exits.
 *
 * WORKERS AND PINNING. sched_init(n) starts n worker threads (LUTS's
 * system-level threads), each pinned to a core, never more than the cores.
 * sched_start places each task on a worker chosen round robin (task k on worker
 * k mod n) and the task never leaves it: C compilers cache the addresses of
 * __thread variables and of errno within a function, and those addresses belong
 * to the worker thread. sched_start_migratable lets a task move to any free worker
 * whenever it is suspended, for code that keeps no such address.
 *
 * SCHEDULING is cooperative, as in LUTS: a task runs until it returns, or until
 * it calls sched_yield, sched_switch or sched_barrier_wait, or the STM suspends it
 * while it waits (a conflict, a contention manager's delay). Long computations
 * without such calls keep their worker to themselves, and a blocking call (a
 * mutex, I/O, sleep) blocks every task of the worker.
 *
 * INSIDE A TRANSACTION, nothing that starts, waits for or suspends tasks may be
 * called (it returns LUTRA_EINTX): an abort would repeat it, and a wait could hold
 * back the transactions it waits for. The STM itself may still suspend a task in
 * the middle of its transaction (waits), which is safe: its state is its own.
 *
 * MISUSE never has undefined behaviour that could have been checked: the
 * functions return a negative LUTRA_E* code (stm.h) and record the caller's last
 * error. Status codes are int; task ids are int64_t (> 0).
 *
 * THE NAME sched_yield belongs to the C library (POSIX). Lutra exports
 * lutra_sched_yield and this header defines sched_yield() as a macro for it,
 * which outside tasks yields the thread as POSIX's does (#undef sched_yield for
 * the C library's). Since programs built with -I<prefix>/include/lutra (as
 * tinySTM programs are) find this file for <sched.h>, it first includes the C
 * library's <sched.h> (#include_next), so that <pthread.h> and the like still
 * get what they need.
 */

/*
 * The C library's <sched.h> first, for programs that find this file in its place
 * (see THE NAME above), and so that its declaration of sched_yield precedes the
 * macro below. #include_next is a GCC extension (also Clang's), hence the
 * system-header mark: no pedantic warning about it.
 */
#if defined(__GNUC__)
#pragma GCC system_header
#include_next <sched.h>
#endif

#ifndef LUTRA_SCHED_H
#define LUTRA_SCHED_H

#include <stdint.h>

#include "stm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The function a task runs, as pthread_create's (its result is discarded). */
typedef void *(*sched_fn_t)(void *arg);

/* What sched_barrier_wait returns to the last task of a round to arrive. */
#define SCHED_BARRIER_SERIAL 1

/*
 * Starts the scheduler: workers worker threads (0: one per core), each pinned to
 * a core; more than the cores are clamped to the cores. The stack of each task
 * is LUTRA_SCHED_STACK_KB KiB (environment variable; default 256; from 16). Call
 * from a plain thread (the program's main thread), before sched_start. Returns
 * the number of workers started (at least 1), or LUTRA_EINVAL (workers < 0, a
 * bad LUTRA_SCHED_STACK_KB), LUTRA_EALREADY (running: sched_shutdown first),
 * LUTRA_EINTASK (called from a task), LUTRA_EINTX.
 */
int sched_init(int workers);

/*
 * Starts a task running fn(arg), pinned to the next worker in round robin, and
 * returns its id (> 0). The task starts registered with nothing: it calls
 * stm_init_thread as a thread would. pthread_exit(value) in the task (in fn or
 * any C function it calls) ends the task as if fn had returned: the worker
 * thread goes on, a transaction left open is rolled back, the task counts as
 * finished for sched_wait; cleanup handlers it pushed (pthread_cleanup_push) do
 * not run, and value is discarded as fn's result is (liblutra.so, and programs
 * linked with liblutra.a, interpose pthread_exit for this; Lutra's libitm.so.1
 * does not, and outside tasks it is the C library's).
 * If the task overflows its stack (LUTRA_SCHED_STACK_KB), a line on standard
 * error names it and it ends there; the other tasks go on and sched_wait
 * returns (inside a transaction an overflow aborts the process instead).
 * Any thread or task may start tasks. Errors: LUTRA_ENOINIT (no
 * sched_init), LUTRA_EINVAL (fn is NULL), LUTRA_EINTX (inside a transaction: an
 * abort would start it again), LUTRA_ENOMEM (no memory for its stack).
 */
int64_t sched_start(sched_fn_t fn, void *arg);

/*
 * As sched_start, but the task may resume on another worker after each
 * suspension (sched_yield, sched_switch, sched_barrier_wait, the STM's waits):
 * fn and what it calls must not use thread-local data (__thread variables,
 * errno) across such a call.
 */
int64_t sched_start_migratable(sched_fn_t fn, void *arg);

/*
 * Sizes the barrier of sched_barrier_wait: a round opens when parties callers
 * (tasks, or plain threads) wait on it, as LUTS's barrier counts luts_init's
 * threads. Call before they wait (before starting the tasks), or between rounds
 * to change the size. Returns LUTRA_OK, LUTRA_EINVAL (parties is 0), LUTRA_EBUSY
 * (callers wait in the current round), LUTRA_ENOINIT, LUTRA_EINTX.
 */
int sched_barrier_init(unsigned int parties);

/*
 * Waits until the barrier's parties have all called it in this round (LUTS's
 * luts_barrier_wait); a waiting task lets its worker run other tasks. Returns
 * SCHED_BARRIER_SERIAL (1) to the last to arrive, 0 to the others, or
 * LUTRA_EINVAL (sched_barrier_init not called), LUTRA_EINTX, LUTRA_ENOINIT.
 */
int sched_barrier_wait(void);

/*
 * Puts the calling task at the back of the run queue and lets its worker run
 * another (LUTS's luts_yield); outside tasks, yields the thread. Returns
 * LUTRA_OK, or LUTRA_EINTX (inside a transaction). Called as sched_yield().
 */
int lutra_sched_yield(void);
#ifndef sched_yield
#define sched_yield() lutra_sched_yield()
#endif

/*
 * Announces the transaction the calling task is about to run (LUTS's
 * luts_setid; 0 means none), for sched_switch and the scheduler's policies. A
 * stm_start with a non-zero id attribute announces that id as well. Allowed
 * inside transactions. Returns LUTRA_OK, or LUTRA_ENOTASK.
 */
int sched_setid(uint64_t id);

/*
 * LUTS's luts_switch: if a task that may run on the caller's worker announced a
 * transaction id other than id, it runs now and the caller goes to the back of
 * the run queue; otherwise the caller goes on at once. Typically called before
 * stm_start, with the id of the transaction about to start, when it is likely
 * to conflict. Outside tasks, yields the thread. Returns LUTRA_OK, or
 * LUTRA_EINTX.
 */
int sched_switch(uint64_t id);

/* The calling task's id (as sched_start returned it), or LUTRA_ENOTASK. */
int64_t sched_self(void);

/* The index (from 0) of the worker running the calling task, or LUTRA_ENOTASK.
 * Constant for a task of sched_start. */
int sched_worker(void);

/*
 * Waits until every task started so far, and every task those start, has
 * finished; the workers keep running and more tasks may be started afterwards.
 * Once it returns, no task is registered with the STM any more (stm_exit may
 * follow). Returns LUTRA_OK, or LUTRA_EINTASK (called from a task, which would
 * wait for itself), LUTRA_EINTX, LUTRA_ENOINIT.
 *
 * In the child of a fork() made while the scheduler ran, its workers do not
 * exist: sched_start, sched_wait, the barrier, sched_shutdown and sched_init
 * return LUTRA_ENOINIT there ("... fork()ed from one whose scheduler ran ...").
 *
 * A task that ended by overflowing its stack (reported on standard error when it
 * happened) counts as finished: sched_wait returns once the others have.
 *
 * A deadlock is reported, not waited for: when every unfinished task waits at
 * the barrier of sched_barrier_wait in a round that needs more parties than are
 * waiting (sched_barrier_init was given more parties than there are tasks to
 * arrive), nothing can complete the round, since tasks cannot arrive and the
 * caller of sched_wait cannot either. sched_wait then prints a report on
 * standard error (the parties, how many wait) and returns LUTRA_EDEADLK; the
 * waiting tasks stay parked. Plain threads that take part in the barrier must
 * not be counted on to arrive once every task waits there.
 */
int sched_wait(void);

/*
 * Waits for every task as sched_wait does, then stops and joins the workers and
 * forgets the barrier (LUTS's luts_shutdown); sched_init may start the scheduler
 * again. Returns LUTRA_OK, or LUTRA_EINTASK, LUTRA_EINTX, LUTRA_ENOINIT.
 */
int sched_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif /* LUTRA_SCHED_H */

