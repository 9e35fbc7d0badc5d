/*
 * lutra/cxlock.h -- cooperative transactional locks (TxLinux's cxspinlocks:
 * Rossbach et al., "TxLinux: Using and Managing Hardware Transactional Memory in
 * an Operating System", SOSP 2007, Section 4).
 *
 * A cx_lock_t protects one critical section sometimes by a transaction and
 * sometimes by mutual exclusion. cx_optimistic runs the section as a
 * transaction, with any number of other optimistic holders inside at once; if
 * the section needs exclusion (it is about to do I/O, or takes a lock with
 * cx_exclusive), it calls cx_need_exclusive and runs again from its start,
 * exclusively. cx_exclusive runs it exclusively at once. Inside a transaction both
 * join it (flat nesting); an exclusion need at any depth restarts the outermost
 * transaction.
 *
 * As with stm_atomically (lutra/stm.h), a critical section is a function,
 * int fn(void *arg), that accesses shared data with the stm_load / stm_store
 * family (or the jump-free lutra_stm_load / lutra_stm_store, returning their
 * positive status at once) and may run several times. An exclusive section runs
 * once (unless it calls stm_abort) and may do I/O.
 *
 *   static cx_lock_t lock = CX_LOCK_INITIALIZER;
 *   static int deposit(void *arg) {
 *     stm_store(&balance, stm_load(&balance) + *(long *)arg);
 *     if (audit_due) {
 *       cx_need_exclusive();            optimistic: restarts, runs again exclusively
 *       fprintf(log, "audit\n");        exclusive: runs exactly once
 *     }
 *     return 0;
 *   }
 *   ...
 *   cx_optimistic(&lock, deposit, &amount);     from a thread of stm_init_thread
 *
 * The paper's cx_end is the return of fn: the section (and, outermost, its
 * transaction) ends when fn returns.
 *
 * TABLE 2 of the paper: what happens when each lock function is called from a
 * non-transactional or a transactional thread.
 *
 *   caller         | spin_lock              | cx_exclusive           | cx_optimistic
 *   ---------------+------------------------+------------------------+--------------------
 *   non-           | region locked; always  | region locked; defers  | region transactional,
 *   transactional  | gets exclusive access, | to the contention      | many transactional
 *                  | kicks transactional    | manager to decide if   | threads inside; one
 *                  | threads out (they may  | it may preempt the     | that needs exclusion
 *                  | re-enter)              | transactional threads  | restarts and reverts
 *                  |                        | inside                 | to cx_exclusive
 *   transactional  | region transactional;  | reverts the outer      | as above, nested
 *                  | one thread at a time   | transaction to mutual  | (flattened into the
 *                  | (conflicts on the lock | exclusion              | outer transaction)
 *                  | variable); no good way |                        |
 *                  | to do I/O              |                        |
 *
 * In Lutra (software TM with invisible reads):
 *  - cx_exclusive from outside a transaction: an irrevocable transaction that
 *    closes the lock's door (optimistic entrants wait outside, polling without
 *    reading the lock transactionally) and writes the lock word: optimistic
 *    updaters inside cannot commit while it runs and restart after it; optimistic
 *    readers inside serialize before it. It always wins (the manager never sees
 *    invisible readers), as MetaTM favours the non-transactional side of an
 *    asymmetric conflict. Irrevocable transactions are one at a time per engine,
 *    and no updater of any lock commits while one runs.
 *  - cx_exclusive inside a transaction: if it is optimistic, the outermost
 *    transaction restarts irrevocable (exclusive); then the lock joins it.
 *  - cx_optimistic from outside: a transaction that first waits until no
 *    exclusive section holds the lock, then keeps the lock word in its read set;
 *    cx_need_exclusive restarts it exclusively, once.
 *  - cx_optimistic inside a transaction: the lock joins it, in its mode.
 *  - spin_lock inside a transaction has no counterpart.
 *
 * ABORTS AND JUMPS. As in stm_atomically: an abort inside fn jumps back into the
 * outermost cx_optimistic / cx_exclusive (or to the sigsetjmp of the stm_start
 * that began the transaction), over fn's frames, which must be C frames needing
 * no clean-up.
 *
 * Every function needs stm_init and, except cx_held and cx_mode, a thread
 * registered with stm_init_thread; on misuse it returns a negative LUTRA_E* code
 * and sets the thread's last error (lutra_last_error).
 */

#ifndef LUTRA_CXLOCK_H
#define LUTRA_CXLOCK_H

#include <stdint.h>

#include "stm.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A cooperative lock: two words, all zero when free (static storage, calloc and
 * CX_LOCK_INITIALIZER all give a free lock). `owner` is the door an exclusive
 * section closes, polled plainly; `generation` is the lock word transactional
 * holders keep in their read set. Do not access the fields; use a lock with one
 * engine only, and keep it alive while any section on it runs.
 */
typedef struct cx_lock {
  volatile uintptr_t owner;
  volatile stm_word_t generation;
} cx_lock_t;

#define CX_LOCK_INITIALIZER {0, 0}

/* A critical section: return 0 to commit, non-zero to roll back and stop. */
typedef int (*cx_fn)(void *arg);

/* Section modes (cx_mode). */
#define CX_NONE 0       /* outside any transaction */
#define CX_OPTIMISTIC 1 /* a transaction, beside other holders */
#define CX_EXCLUSIVE 2  /* alone: an irrevocable transaction */

/*
 * Runs fn(arg) as a critical section under lock, optimistically first (see
 * above). Call from a registered thread, inside or outside a transaction.
 * Returns, outermost: 0 once committed; fn's non-zero value (the section rolled
 * back, not retried: use positive values); LUTRA_EABORTED (an abort that is not
 * retried ended it); LUTRA_EINVAL (NULL lock or fn), LUTRA_ENOTHREAD. Inside a
 * transaction the lock joins it and fn's value is returned as is (or a positive
 * abort code if the attempt is doomed).
 */
int cx_optimistic(cx_lock_t *lock, cx_fn fn, void *arg);

/*
 * Runs fn(arg) holding lock exclusively: an irrevocable transaction, run once
 * (unless fn calls stm_abort), in which fn may do I/O. Inside an optimistic
 * transaction, the outermost transaction restarts exclusively first (this call
 * does not return; the outermost section runs again). Returns as cx_optimistic.
 */
int cx_exclusive(cx_lock_t *lock, cx_fn fn, void *arg);

/*
 * Inside a section, before doing what must not be repeated (I/O): in an
 * exclusive section returns CX_EXCLUSIVE at once; in an optimistic one rolls back
 * and restarts the outermost transaction exclusively (no return: the section runs
 * again from its start, where this call then returns CX_EXCLUSIVE). In a
 * transaction with the no_retry attribute, the transaction ends instead and its
 * positive abort code is returned. Misuse: LUTRA_ENOTX (no transaction),
 * LUTRA_ENOTHREAD.
 */
int cx_need_exclusive(void);

/* The calling thread's mode: CX_EXCLUSIVE in an irrevocable transaction,
 * CX_OPTIMISTIC in any other, CX_NONE outside (also unregistered). Any time. */
int cx_mode(void);

/* 1 if an exclusive section holds lock now, 0 if not (a snapshot that may change
 * at once); LUTRA_EINVAL for NULL. Any time, any thread, no registration. */
int cx_held(const cx_lock_t *lock);

#ifdef __cplusplus
}
#endif

#endif /* LUTRA_CXLOCK_H */
