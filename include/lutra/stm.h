/*
 * lutra/stm.h -- Lutra's STM for C, with tinySTM's core API.
 *
 * A C program written for tinySTM's stm.h builds against Lutra by changing the
 * include path (-I<prefix>/include/lutra, or #include <lutra/stm.h> with
 * -I<prefix>/include) and the link flag (-llutra, or `pkg-config --cflags --libs
 * lutra`). The names, types and meaning follow tinySTM 1.0.5 (implicit
 * transaction: the current thread's); the functions not listed here (callbacks,
 * specifics, unit loads, the *_tx variants) are not provided.
 *
 * Usage, as with tinySTM:
 *
 *   stm_init();                          once, before anything else
 *   stm_init_thread();                   in each thread that runs transactions
 *   { stm_tx_attr_t a = {{.id = 1, .read_only = 0}};
 *     sigjmp_buf *e = stm_start(a);
 *     if (e != NULL) sigsetjmp(*e, 0);   an abort comes back here
 *     x = stm_load(&shared);
 *     stm_store(&shared, x + 1);
 *     stm_commit(); }
 *   stm_exit_thread();                   in each such thread, at its end
 *   stm_exit();                          once, after every thread
 *
 * or, without sigsetjmp, stm_atomically(fn, arg) (Lutra extension, below).
 *
 * THREADS AND TASKS. Everywhere below, "thread" means the calling task when the
 * caller runs in a task of Lutra's scheduler (lutra/sched.h: sched_start), and the
 * OS thread otherwise. Each task registers with stm_init_thread, has its own
 * handle, transactions, jump buffer, statistics and last error, exactly as a
 * thread does, however many tasks share a worker thread.
 *
 * CONFLICTS ARE PER 32-BYTE GRANULE. As in tinySTM (its default LOCK_SHIFT_EXTRA=2),
 * one ownership record guards each aligned 32-byte granule (four words on 64-bit
 * targets): every access of this header, wrappers.h, stm_free / stm_free2 and the
 * libitm ABI (-fgnu-tm) maps an address to its granule's record. Neighbouring words
 * of one granule therefore conflict with each other: a transaction that read one of
 * them is invalidated when another commits a write to any of them, even to a
 * different word. Data that threads write independently and often (per-thread
 * counters, say) belongs in different granules (align it to 32 bytes, or to a cache
 * line). Lutra's Rust TVars and Lua shared tables keep one record per word; a word
 * is accessed through one of the two only, never both.
 *
 * ABORTS. When a transaction aborts inside a function of this library, Lutra rolls
 * it back, waits as the contention manager says, begins a new attempt and
 * siglongjmps to the buffer stm_start returned: sigsetjmp returns the abort code
 * (STM_ABORT_* | STM_PATH_INSTRUMENTED) and the code after it runs again, inside
 * the new attempt (stm_start is not called again). Hence, as in tinySTM:
 *  - call sigsetjmp right after stm_start, in a function that stays live until the
 *    transaction ends, and let only C frames that need no clean-up lie between it
 *    and the library calls (no C++ objects with destructors);
 *  - local variables written after sigsetjmp and read after a restart must be
 *    written again first (or be volatile);
 *  - work outside the library (I/O, malloc) is not undone: use stm_malloc and
 *    stm_free, or make the transaction irrevocable first.
 *
 * NESTING is flat: stm_start inside a transaction returns NULL (do not sigsetjmp),
 * stm_commit closes the level, an abort restarts the outermost transaction.
 *
 * FORK. After fork(), the child has a fresh engine of the same configuration:
 * the forking thread is registered in it if it was (with no transaction, even
 * if fork() was called inside one), the parent's other threads are not, and
 * transactions, new threads, stm_exit work as in a new process. The parent goes
 * on unchanged. Memory is the parent's as it was: transactions of other threads
 * that were running are not in it (their writes were buffered), except one caught
 * writing back its commit, or running solo, whose writes the child sees as they
 * were. The scheduler of sched.h is not carried over (its workers are threads
 * of the parent): in the child, the sched.h calls that need it (sched_start,
 * sched_wait, sched_barrier_*, sched_shutdown, and sched_init again) return
 * LUTRA_ENOINIT with a message saying so.
 *
 * LEAVING BY A JUMP. A longjmp or siglongjmp (also _longjmp, and __longjmp_chk
 * under _FORTIFY_SOURCE) out of a running transaction -- to a point outside the
 * function that called sigsetjmp after stm_start, or outside stm_atomically --
 * abandons it: the library (liblutra.so and liblutra.a interpose these
 * functions on x86-64 with the GNU C library) rolls it back before the jump, as
 * an abort that is not retried: nothing it wrote stays, stm_active() is 0 and
 * stm_aborted() 1, and other threads and later transactions of the thread go on
 * as if it had never begun. A jump that stays inside the transaction leaves it
 * running.
 *
 * SIGNAL HANDLERS. A handler that interrupted a transaction of its own thread
 * cannot run or join a transaction (the interrupted one may be in the middle of
 * a library call): there stm_atomically returns LUTRA_EINTX, stm_start returns
 * NULL, and every access, stm_commit and stm_malloc / stm_free fail with the
 * last error LUTRA_EINTX ("called in a signal handler that interrupted a
 * transaction of this thread ..."); the interrupted transaction goes on
 * untouched. A handler that interrupted no transaction runs transactions as any
 * code does. This covers handlers installed with sigaction or signal (the library
 * interposes both and reports the program's handler back) on plain threads.
 *
 * MISUSE never has undefined behaviour that could have been checked: a function
 * called when it may not be (on a thread without stm_init_thread, outside a
 * transaction, with a NULL argument) does nothing, returns 0 / NULL / a negative
 * LUTRA_E* code as documented, and records the calling thread's last error
 * (lutra_last_error, lutra_last_error_code). Addresses the library cannot check
 * (dangling, too short) remain the caller's responsibility.
 *
 * NO ENGINE IS FATAL: a transactional call (stm_start, stm_commit, stm_abort,
 * stm_set_irrevocable, stm_atomically, every load and store, stm_free) while no
 * engine runs -- stm_init never called, failed, or undone by stm_exit -- prints
 * "lutra: <function>: the STM is not started ..." to stderr and aborts the process
 * (SIGABRT): a program never runs on with transactions that do nothing. So does
 * stm_init with a bad LUTRA_STM_* variable. The other functions (stm_init_thread,
 * stm_get_parameter, stm_quiesce, stm_exit, ...) report LUTRA_ENOINIT.
 *
 * SHARING RULES (what C callers may assume):
 *  - Transactions are opaque: an attempt never sees an inconsistent state, not
 *    even one that later aborts; committed transactions are serializable.
 *  - A location (and the whole machine word around it) that transactions access
 *    must not be written outside transactions while transactions may access it.
 *  - Publication is safe: data initialized outside transactions and then made
 *    reachable by a committed transaction is seen initialized by transactions.
 *  - Privatization needs a barrier: after a committed transaction makes data
 *    unreachable from shared memory, call stm_quiesce() before reading, writing or
 *    free()ing it without transactions (an attempt that started earlier may still
 *    read it, and a transaction serialized before may still be writing it back).
 *  - stm_free inside a transaction needs no barrier: the block is freed once no
 *    transaction can still read it.
 *
 * Build with a POSIX feature level that declares sigjmp_buf (the default for GCC
 * and Clang; with -std=c11 define _POSIX_C_SOURCE=200809L).
 */

#ifndef LUTRA_STM_H
#define LUTRA_STM_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The tinySTM API level implemented. */
#define STM_VERSION "1.0.5"
#define STM_VERSION_NB 105
/* Lutra's own version. */
#define LUTRA_VERSION "0.1.0"

#if defined(__GNUC__)
# define LUTRA_EXTENSION __extension__
#else
# define LUTRA_EXTENSION
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ *
 * Types
 * ------------------------------------------------------------------------ */

/* A machine word: the unit of stm_load / stm_store. */
typedef uintptr_t stm_word_t;

/* A thread's transaction handle (opaque). */
struct stm_tx;

/*
 * Attributes of a transaction, passed by value to stm_start. As in tinySTM, a
 * union of bit-fields and an integer holding them all, so that both
 * `stm_tx_attr_t a = {{.id = 3, .read_only = 1}};` and `a.attrs = 0;` work.
 */
typedef union stm_tx_attr {
  LUTRA_EXTENSION struct {
    /* The application's id for this transaction site (Lutra groups statistics
     * and scheduling by it). */
    unsigned int id : 16;
    /* A hint: the transaction only reads. As in tinySTM, its first attempt keeps
     * no read set (a long reader writes no entry per read), so a location
     * committed after its start aborts it (STM_ABORT_VAL_READ); unlike tinySTM,
     * the next attempt keeps a read set, so it can extend its snapshot and
     * finish beside writers. A write (or stm_retry, stm_set_irrevocable) is
     * allowed: it restarts the transaction (STM_ABORT_OTHER) before any effect,
     * and the new attempt runs as any other. */
    unsigned int read_only : 1;
    /* Accepted for compatibility; Lutra's reads are invisible. */
    unsigned int visible_reads : 1;
    /* On abort, end the transaction instead of restarting it: the aborting call
     * returns (loads return 0) and stm_aborted() returns 1. */
    unsigned int no_retry : 1;
    /* Accepted for compatibility; ignored. */
    unsigned int no_extend : 1;
  };
  /* Every attribute at once; 0 is the default. */
  int32_t attrs;
} stm_tx_attr_t;

/* Abort codes: what sigsetjmp returns when a transaction restarts (with
 * STM_PATH_INSTRUMENTED set), and what the jump-free accessors return. */
enum {
  /* Set in every value sigsetjmp returns on a restart. */
  STM_PATH_INSTRUMENTED = 0x01,
  /* Never set by Lutra (no uninstrumented path). */
  STM_PATH_UNINSTRUMENTED = 0x02,
  /* The program called stm_abort (its reason bits are kept). */
  STM_ABORT_EXPLICIT = (1 << 5),
  /* stm_abort reason: end the transaction, do not restart it. */
  STM_ABORT_NO_RETRY = (1 << 5) | (0x01 << 8),
  /* An abort the program did not ask for; bits 8..11 tell why. */
  STM_ABORT_IMPLICIT = (1 << 6),
  /* Not produced by Lutra (reads are invisible). */
  STM_ABORT_RR_CONFLICT = (1 << 6) | (0x01 << 8),
  /* Not produced by Lutra (reads are invisible). */
  STM_ABORT_RW_CONFLICT = (1 << 6) | (0x02 << 8),
  /* A read met a location locked by a writer. */
  STM_ABORT_WR_CONFLICT = (1 << 6) | (0x03 << 8),
  /* A write met a location locked by another writer. */
  STM_ABORT_WW_CONFLICT = (1 << 6) | (0x04 << 8),
  /* A read found the snapshot could not be extended. */
  STM_ABORT_VAL_READ = (1 << 6) | (0x05 << 8),
  /* A write found the snapshot could not be extended. */
  STM_ABORT_VAL_WRITE = (1 << 6) | (0x06 << 8),
  /* The commit found something read had changed. */
  STM_ABORT_VALIDATE = (1 << 6) | (0x07 << 8),
  /* Gave way to an irrevocable transaction, or must restart irrevocable. */
  STM_ABORT_IRREVOCABLE = (1 << 6) | (0x09 << 8),
  /* Killed by another transaction's contention manager. */
  STM_ABORT_KILLED = (1 << 6) | (0x0A << 8),
  /* Not produced by Lutra. */
  STM_ABORT_SIGNAL = (1 << 6) | (0x0B << 8),
  /* The read or write set reached its size limit. */
  STM_ABORT_EXTEND_WS = (1 << 6) | (0x0C << 8),
  /* Any other reason. */
  STM_ABORT_OTHER = (1 << 6) | (0x0F << 8),
  /* Lutra: the transaction called stm_retry and runs again after a change. */
  LUTRA_ABORT_RETRY = (1 << 6) | (0x0E << 8)
};

/* ------------------------------------------------------------------------ *
 * Library and threads
 * ------------------------------------------------------------------------ */

/*
 * Creates the engine. Design from the environment variable LUTRA_STM_DESIGN
 * ("wb-ctl", the default: write-back, commit-time locking; or "wb-etl":
 * encounter-time locking), contention manager from LUTRA_STM_CM ("suicide",
 * "backoff" (default), "aggressive", "timestamp", "size_matters", "priority"),
 * the engine's own statistics from LUTRA_STM_STATS ("0" or unset: off, "1": on;
 * they cost about twice an empty transaction, and stm_get_stats counts
 * without them), solo transactions from LUTRA_STM_SOLO ("1", the default: while a
 * thread is the only one registered, its transactions run uninstrumented --
 * plain loads, direct stores with an undo log -- as libitm's serial mode does,
 * and a thread that registers meanwhile waits for the running one to end; "0":
 * always instrumented), and the most threads registered at once from
 * LUTRA_STM_MAX_THREADS (1 to 1048576, default 8192; each costs a few hundred
 * bytes at stm_init). Call once, before anything else; a second call does
 * nothing.
 * A bad variable ABORTS THE PROCESS (SIGABRT) after a message on stderr naming
 * the variable, its value and the valid values, e.g.
 *   lutra: stm_init: LUTRA_STM_DESIGN="wb" names no design; valid: wb-ctl, wb-etl; ...
 * (tinySTM's stm_init returns nothing, so a failure could not be seen). To handle
 * the error instead, call lutra_stm_init_with(NULL, NULL), which reads the same
 * variables and returns LUTRA_EINVAL.
 */
void stm_init(void);

/*
 * Drops the engine. Call once, after every other thread called
 * stm_exit_thread; a registered calling thread is unregistered first. On misuse
 * the engine keeps running and the last error says why: LUTRA_EINTX (inside a
 * transaction), LUTRA_EBUSY (threads still registered), LUTRA_ENOINIT. After it,
 * stm_init may start a new engine.
 */
void stm_exit(void);

/*
 * Registers the calling thread; required before it runs transactions. Returns
 * its handle (the same on later calls), or NULL with the last error set:
 * LUTRA_ENOINIT (no stm_init), LUTRA_ENOMEM (too many threads: more than
 * LUTRA_STM_MAX_THREADS, default 8192, registered at once; the message names the
 * variable, which stm_init reads, up to 1048576). It may be called from a
 * pthread_key_create destructor, as the thread exits; the registration then
 * ends with the thread's key destructors.
 */
struct stm_tx *stm_init_thread(void);

/*
 * Unregisters the calling thread (one that ends without it is unregistered at
 * its exit). On misuse nothing happens and the last error is set: LUTRA_EINTX
 * (inside a transaction), LUTRA_ENOTHREAD.
 */
void stm_exit_thread(void);

/* The calling thread's handle, or NULL if it is not registered. Any time. */
struct stm_tx *stm_current_tx(void);

/* ------------------------------------------------------------------------ *
 * Transactions (a registered thread)
 * ------------------------------------------------------------------------ */

/*
 * Starts a transaction with attributes attr and returns the jump buffer the
 * caller must sigsetjmp on at once. Inside a transaction: returns NULL and joins
 * it (flat nesting; do not sigsetjmp). On misuse (unregistered thread) also NULL,
 * with the last error set; stm_active() tells the cases apart.
 */
sigjmp_buf *stm_start(stm_tx_attr_t attr);

/*
 * Commits the transaction (or closes a nested level) and returns 1. If the
 * commit fails, the transaction restarts from its sigsetjmp and this call does
 * not return; with no_retry it ends and 0 is returned. Misuse (no transaction,
 * unregistered thread): returns 0, last error set.
 */
int stm_commit(void);

/*
 * Aborts the transaction: it restarts from its sigsetjmp, which returns
 * (abort_reason & ~3) | STM_ABORT_EXPLICIT | STM_PATH_INSTRUMENTED. With
 * STM_ABORT_NO_RETRY in abort_reason (or the no_retry attribute) it ends instead
 * and this call returns; stm_aborted() then returns 1. Misuse (no transaction):
 * returns, last error set.
 */
void stm_abort(int abort_reason);

/* GCC's attribute that lets a function be called inside __transaction_atomic
 * without instrumentation (other compilers have no TM extension). */
#if defined(__GNUC__) && !defined(__clang__)
#define LUTRA_TRANSACTION_PURE __attribute__((transaction_pure))
#else
#define LUTRA_TRANSACTION_PURE
#endif

/*
 * Lutra: blocking retry (neither tinySTM nor libitm has it). Abandons the
 * transaction, waits (the thread sleeps, or the scheduler's task is suspended:
 * no CPU is spent) until another transaction's commit changes a location this
 * one read, then runs it again: execution goes back to its sigsetjmp, or to the
 * start of the __transaction_atomic block that called it (with -fgnu-tm,
 * through Lutra's libitm.so.1). Does not return.
 *
 *   __transaction_atomic {
 *     if (count == 0) stm_retry();   // wait for a producer
 *     item = items[--count];
 *   }
 *
 * Misuse returns with the last error set: LUTRA_ENOTX outside a transaction
 * (also on a thread that is not registered, and in a -fgnu-tm program before
 * its first __transaction_atomic, when no engine runs yet);
 * LUTRA_EINVAL in an irrevocable transaction (which goes on) or in one that read
 * nothing (nothing could wake it: it is over, as after a no_retry abort). Inside
 * __transaction_atomic, misuse stops the process with a message instead.
 */
void stm_retry(void) LUTRA_TRANSACTION_PURE;

/*
 * Transactional load of the word at addr. On a conflict the transaction restarts
 * (no return), or, with no_retry, ends and 0 is returned. Misuse (no
 * transaction, unregistered thread, NULL): returns 0, last error set. An addr
 * not aligned to a word (sizeof(stm_word_t)) is refused the same way:
 * LUTRA_EINVAL, returns 0, the transaction goes on. For values at any address,
 * use the typed accessors of wrappers.h (stm_load_u32, ..., stm_load_bytes),
 * which read exactly the bytes of the value.
 */
stm_word_t stm_load(volatile stm_word_t *addr);

/* Transactional store of value to the word at addr. Aborts and misuse as
 * stm_load: misuse writes nothing, and a misaligned addr (LUTRA_EINVAL, as
 * stm_store2) writes nothing either -- never a part of the neighbouring word. */
void stm_store(volatile stm_word_t *addr, stm_word_t value);

/* Transactional store of the bits of value selected by mask to the aligned word
 * at addr (LUTRA_EINVAL if misaligned). Aborts and misuse as stm_store. */
void stm_store2(volatile stm_word_t *addr, stm_word_t value, stm_word_t mask);

/* 1 if the calling thread runs a transaction, else 0 (also when unregistered). */
int stm_active(void);

/* 1 if the thread's last transaction ended by an abort that was not retried and
 * no transaction has started since, else 0. Any time. */
int stm_aborted(void);

/* 1 if the thread runs a transaction that is irrevocable, else 0. Any time. */
int stm_irrevocable(void);

/*
 * Makes the transaction irrevocable (it will not abort; one at a time; other
 * updaters cannot commit until it ends) and returns 1. If something it read has
 * changed, it restarts from its sigsetjmp (no return), irrevocable from the start.
 * Outside a transaction: the thread's next transaction starts irrevocable, returns
 * 1. serial is accepted for compatibility (Lutra's mode is always serial with
 * respect to updaters). Misuse (unregistered thread): returns 0, last error set.
 */
int stm_set_irrevocable(int serial);

/* The thread's jump buffer, or NULL inside a transaction (and, with the last
 * error set, on an unregistered thread). For programs that sigsetjmp before
 * stm_start. */
sigjmp_buf *stm_get_env(void);

/* The attributes the thread's current (or last) transaction started with; all 0
 * on an unregistered thread (last error set). */
stm_tx_attr_t stm_get_attributes(void);

/* ------------------------------------------------------------------------ *
 * Parameters and statistics
 * ------------------------------------------------------------------------ */

/*
 * Writes parameter name to *(const char **)val and returns 1: "design" ("wb-ctl",
 * "wb-etl"), "contention_manager" ("suicide", "backoff", "aggressive",
 * "timestamp", "size_matters", "priority"), "version". The strings are static.
 * Returns 0 (last error set) for an unknown name, NULL arguments, no engine.
 */
int stm_get_parameter(const char *name, void *val);

/* Nothing can be changed while the engine runs: returns 0, last error
 * LUTRA_EINVAL. Choose the design and manager at stm_init. */
int stm_set_parameter(const char *name, void *val);

/*
 * Writes statistic name to val and returns 1. Global (any thread, needs
 * stm_init): "global_nb_commits", "global_nb_aborts", "global_max_retries" as
 * unsigned long. Of the calling thread (registered) since stm_init_thread, as
 * unsigned long: "nb_commits", "nb_aborts", "max_retries" (most aborts before
 * one commit), "nb_aborts_locked_read", "nb_aborts_locked_write",
 * "nb_aborts_validate_read", "nb_aborts_validate_write",
 * "nb_aborts_validate_commit", "nb_aborts_killed", "nb_aborts_irrevocable",
 * "nb_aborts_extend_ws", "nb_aborts_explicit", "nb_aborts_other"; and
 * "read_only" as unsigned int (the current or last transaction's attribute).
 * Returns 0 (last error set) for an unknown name, NULL arguments, no engine, or
 * an unregistered thread asking a per-thread name.
 */
int stm_get_stats(const char *name, void *val);

/* The global version clock (number of update commits), or 0 without engine. */
stm_word_t stm_get_clock(void);

/* ------------------------------------------------------------------------ *
 * Lutra extensions
 * ------------------------------------------------------------------------ */

/* Status codes: 0 is success, negatives are errors. */
#define LUTRA_OK 0
#define LUTRA_ENOINIT (-1)   /* stm_init has not been called (or stm_exit has) */
#define LUTRA_ENOTHREAD (-2) /* the thread has not called stm_init_thread */
#define LUTRA_ENOTX (-3)     /* no transaction is active on the thread */
#define LUTRA_EINTX (-4)     /* not allowed inside a transaction */
#define LUTRA_EINVAL (-5)    /* invalid argument (NULL, unknown name, misaligned) */
#define LUTRA_EALREADY (-6)  /* already initialized */
#define LUTRA_EBUSY (-7)     /* threads are still registered */
#define LUTRA_ENOMEM (-8)    /* out of memory, or too many threads */
#define LUTRA_EABORTED (-9)  /* the transaction aborted and was not retried */
#define LUTRA_EPANIC (-10)   /* internal error; the thread's transaction state was
                                discarded (call stm_init_thread again) */
#define LUTRA_ENOTASK (-11)  /* needs a task of the scheduler (lutra/sched.h) */
#define LUTRA_EINTASK (-12)  /* for plain threads, not tasks (it would wait for
                                the caller) */
#define LUTRA_EDEADLK (-13)  /* sched_wait: every task waits at the barrier and
                                none is left to complete the round */

/*
 * stm_init with explicit choices: design "wb-ctl" or "wb-etl", cm one of the
 * contention managers listed at stm_init; NULL takes the environment variable,
 * then the default (LUTRA_STM_STATS is read as by stm_init). Returns LUTRA_OK,
 * LUTRA_EINVAL (unknown name or value; the last error names the argument or
 * variable, the value and the valid names) or LUTRA_EALREADY (the engine runs;
 * stm_exit first). Never aborts the process.
 */
int lutra_stm_init_with(const char *design, const char *cm);

/* The calling thread's last error, "function: what went wrong", or "" if none.
 * Never NULL; valid until the thread's next error. Any time, any thread. */
const char *lutra_last_error(void);

/* The code (LUTRA_E*) of the calling thread's last error, or LUTRA_OK. */
int lutra_last_error_code(void);

/* Forgets the calling thread's last error. */
void lutra_clear_error(void);

/*
 * Privatization barrier: waits until every transaction attempt running when it
 * was called has ended (see SHARING RULES above). Call it outside transactions.
 * Returns LUTRA_OK, LUTRA_EINTX (inside a transaction), LUTRA_ENOINIT. Needs no
 * registered thread.
 */
int stm_quiesce(void);

/* A transaction body for stm_atomically: return 0 to commit. */
typedef int (*stm_atomic_fn)(void *arg);

/*
 * Runs fn(arg) as a transaction of the calling (registered) thread until it
 * commits; the caller writes no sigsetjmp. Returns:
 *   0               committed;
 *   fn's value      fn returned non-zero: rolled back, not retried (use positive
 *                   values to tell them from the errors below);
 *   LUTRA_EABORTED  an abort that is not retried ended it (no_retry attribute,
 *                   STM_ABORT_NO_RETRY), whatever fn returned;
 *   LUTRA_E*        misuse (LUTRA_ENOTHREAD; LUTRA_EINVAL for a NULL fn, or an
 *                   fn that commits the transaction itself).
 * Inside fn, either use the accessors above (an abort jumps back into
 * stm_atomically, over fn's frames, which must be C frames needing no clean-up),
 * or the jump-free lutra_stm_load / lutra_stm_store below and return their
 * positive status at once: fn is then called again in a new attempt. Called
 * inside a transaction, fn joins it (flat nesting) and its value is returned as
 * is (a positive abort code if the attempt is doomed). fn may run many times.
 */
int stm_atomically(stm_atomic_fn fn, void *arg);

/* stm_atomically with the transaction's attributes. */
int stm_atomically_attr(stm_tx_attr_t attr, stm_atomic_fn fn, void *arg);

/*
 * Jump-free stm_load: reads the word at addr into *value. Returns LUTRA_OK; a
 * positive STM_ABORT_* code when the attempt is aborted (it stays aborted: every
 * later access returns the same code; return it from the stm_atomically body);
 * or a negative LUTRA_E* code on misuse (as stm_load; NULL value; LUTRA_EINVAL
 * for an addr not aligned to a word, *value untouched).
 */
int lutra_stm_load(volatile const stm_word_t *addr, stm_word_t *value);

/* Jump-free stm_store; returns as lutra_stm_load (a misaligned addr:
 * LUTRA_EINVAL, nothing written). */
int lutra_stm_store(volatile stm_word_t *addr, stm_word_t value);

/* Jump-free stm_store2; returns as lutra_stm_load. */
int lutra_stm_store2(volatile stm_word_t *addr, stm_word_t value, stm_word_t mask);

/*
 * CALLS WITHOUT PLT. The accesses and transaction bounds are declared again,
 * called without a PLT stub where the compiler allows it (GCC on x86-64: `call
 * *stm_load@GOTPCREL(%rip)`, one indirect call instead of a call and a jump).
 * Linked with liblutra.a, the linker turns it into a direct call; with
 * liblutra.so, the functions are bound at start-up instead of at their first
 * call. Define LUTRA_NO_NOPLT before including this header to keep the PLT.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(LUTRA_NO_NOPLT)
sigjmp_buf *stm_start(stm_tx_attr_t attr) __attribute__((noplt));
int stm_commit(void) __attribute__((noplt));
stm_word_t stm_load(volatile stm_word_t *addr) __attribute__((noplt));
void stm_store(volatile stm_word_t *addr, stm_word_t value)
    __attribute__((noplt));
void stm_store2(volatile stm_word_t *addr, stm_word_t value, stm_word_t mask)
    __attribute__((noplt));
int lutra_stm_load(volatile const stm_word_t *addr, stm_word_t *value)
    __attribute__((noplt));
int lutra_stm_store(volatile stm_word_t *addr, stm_word_t value)
    __attribute__((noplt));
int lutra_stm_store2(volatile stm_word_t *addr, stm_word_t value,
                     stm_word_t mask) __attribute__((noplt));
#endif

/*
 * INLINE ACCESSES (opt-in). A transaction of a thread that is alone with the
 * engine runs solo (see LUTRA_STM_SOLO): its reads are plain loads and its writes
 * go to memory, their old words in an undo log. With LUTRA_INLINE defined before
 * this header is included, stm_load and stm_store do that inline when a solo
 * transaction runs on the calling thread, and call the library otherwise.
 *
 * The test is a read of the thread's undo window, a thread-local variable of the
 * library, found at lutra_thread_undo_window_offset (below) from the thread
 * pointer. It works the same in a program linked with liblutra.a, in one linked
 * with liblutra.so, and in a shared object loaded with dlopen (the variable is in
 * the library's static TLS, at one offset on every thread). On x86-64 (gcc -O2,
 * C) the inline load is
 *     mov    lutra_thread_undo_window_offset(%rip),%rdx   (hoisted out of loops,
 *                                                          shared by a function)
 *     cmpq   $0x0,%fs:(%rdx)    (the window's next != NULL)
 *     je     <call stm_load>
 *     mov    (addr),%rax
 * Compilers that cannot read the thread pointer (neither GCC's __seg_fs, in C on
 * x86-64, nor __builtin_thread_pointer) ignore LUTRA_INLINE: every access calls
 * the library.
 *
 * The window is open (next not NULL) only while a solo transaction of the
 * thread's registered state runs: it is closed on a thread that never registered
 * or has unregistered, on every worker of the scheduler (a task's transactions go
 * through the library), and outside solo transactions. The inline load does not
 * check its address (a NULL address faults, and a misaligned one reads the
 * machine word there, as in plain C: it writes nothing); the inline store leaves
 * misaligned addresses, and a full window, to the library, which refuses the
 * former (LUTRA_EINVAL, nothing written) as stm_store does.
 *
 * Which to link: liblutra.so (`pkg-config --cflags --libs lutra`) or liblutra.a
 * run the same code, and LUTRA_INLINE works with both; see docs/c-linking.md
 * ("Linking: shared or static") for the figures.
 */
struct lutra_undo_window {
  stm_word_t *next; /* where the next {address, old word} pair goes; NULL outside
                       solo transactions */
  stm_word_t *end;  /* one past the window's last pair; NULL outside solo
                       transactions */
};

/* The calling thread's undo window's offset from the thread pointer: set when
 * the library is loaded (before the program's constructors and main run), then
 * never changed. For the inline accesses only. */
extern const intptr_t lutra_thread_undo_window_offset;

#if defined(LUTRA_INLINE)
#if defined(__x86_64__) && defined(__SEG_FS) && !defined(__cplusplus) && \
    !defined(__STRICT_ANSI__)
#define LUTRA_UNDO_WINDOW \
  (*(__seg_fs struct lutra_undo_window *)(uintptr_t)lutra_thread_undo_window_offset)
#elif defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
#define LUTRA_UNDO_WINDOW                                            \
  (*(struct lutra_undo_window *)((char *)__builtin_thread_pointer() + \
                                 lutra_thread_undo_window_offset))
#endif
#endif
#endif /* LUTRA_INLINE */

#if defined(LUTRA_UNDO_WINDOW)
static inline stm_word_t lutra_inline_load(volatile stm_word_t *addr) {
  if (__builtin_expect(LUTRA_UNDO_WINDOW.next != NULL, 1))
    return *addr;
  return (stm_load)(addr);
}

static inline void lutra_inline_store(volatile stm_word_t *addr,
                                      stm_word_t value) {
  stm_word_t *entry = LUTRA_UNDO_WINDOW.next;
  if (__builtin_expect(entry != LUTRA_UNDO_WINDOW.end, 1) &&
      ((stm_word_t)addr & (sizeof(stm_word_t) - 1)) == 0) {
    entry[0] = (stm_word_t)addr;
    entry[1] = *addr;
    LUTRA_UNDO_WINDOW.next = entry + 2;
    *addr = value;
    return;
  }
  (stm_store)(addr, value);
}

#define stm_load(addr) lutra_inline_load(addr)
#define stm_store(addr, value) lutra_inline_store((addr), (value))
#endif /* LUTRA_UNDO_WINDOW */

#ifdef __cplusplus
}
#endif

#endif /* LUTRA_STM_H */
