/*
 * longjmp.c -- the Rust frames that a restart's siglongjmp crosses own nothing.
 *
 * An abort inside stm_load, stm_store, stm_commit or stm_abort rolls back and
 * jumps from Rust code straight to the program's sigsetjmp: every Rust frame in
 * between is abandoned without running a destructor. If one of them ever owned
 * heap memory (a Vec, a String, a Box) or held a lock, each restart would leak it
 * (or the next call would deadlock). This program drives tens of thousands of
 * restarts through every jumping call, each one forced (no luck needed), and
 * checks that the heap in use does not grow:
 *
 *  - stm_abort: an explicit restart;
 *  - stm_load: a read that meets a newer version and fails to extend the
 *    snapshot (another thread committed over a word already read);
 *  - stm_store / stm_commit: a commit whose validation fails (same setup, the
 *    last read before the commit not changed);
 *
 * in both designs (LUTRA_STM_DESIGN), with statistics on. A helper thread makes
 * the conflicting commits, in lock step with the main thread (spin flags outside
 * the engine), so every round restarts exactly once.
 */

#include <lutra/stm.h>

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "check.h"

#define ROUNDS 20000

static stm_word_t x, y, z;
static int turn; /* 0: main reads; 1: helper commits; 2: main goes on */
static int helper_registered;

static void await_turn(int value) {
  while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != value)
    sched_yield();
}

/* The helper: each time the main thread has read x, commit a new x and z. */
static void *helper(void *arg) {
  long rounds = (long)(intptr_t)arg;
  stm_init_thread();
  __atomic_store_n(&helper_registered, 1, __ATOMIC_RELEASE);
  for (long round = 0; round < rounds; round++) {
    await_turn(1);
    stm_tx_attr_t attr = {{.id = 2}};
    sigjmp_buf *env = stm_start(attr);
    if (env != NULL)
      sigsetjmp(*env, 0);
    stm_store(&x, stm_load(&x) + 1);
    stm_store(&z, stm_load(&z) + 1);
    stm_commit();
    __atomic_store_n(&turn, 2, __ATOMIC_RELEASE);
  }
  stm_exit_thread();
  return NULL;
}

/* One round: read x, let the helper commit over it, then restart from the call
 * named by `where` ('l': stm_load of z; 'c': stm_commit). Returns the restarts. */
static long conflict_round(char where) {
  volatile long attempts = 0;
  stm_tx_attr_t attr = {{.id = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  attempts++;
  stm_word_t seen = stm_load(&x);
  if (attempts == 1) {
    __atomic_store_n(&turn, 1, __ATOMIC_RELEASE);
    await_turn(2);
  }
  if (where == 'l')
    seen += stm_load(&z); /* newer than the snapshot, and x changed: restart */
  stm_store(&y, seen);
  stm_commit(); /* 'c': x changed since it was read: restart */
  __atomic_store_n(&turn, 0, __ATOMIC_RELEASE);
  return attempts - 1;
}

static long explicit_round(void) {
  volatile long attempts = 0;
  stm_tx_attr_t attr = {{.id = 3}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  attempts++;
  stm_store(&y, stm_load(&y) + 1);
  if (attempts == 1)
    stm_abort(0);
  stm_commit();
  return attempts - 1;
}

static size_t heap_in_use(void) { return mallinfo2().uordblks; }

/* Runs `rounds` rounds of `kind` ('e' explicit, 'l' load, 'c' commit) after a
 * warm-up, and checks the restarts and the heap. */
static void run(char kind, long rounds) {
  pthread_t thread;
  int conflicts = kind != 'e';
  for (int phase = 0; phase < 2; phase++) {
    long n = phase == 0 ? rounds / 10 : rounds, restarts = 0;
    size_t before = heap_in_use();
    __atomic_store_n(&turn, 0, __ATOMIC_RELEASE);
    if (conflicts) {
      /* Registered before the main thread's first transaction: a thread that
       * registers while another runs a solo transaction waits for it to end. */
      __atomic_store_n(&helper_registered, 0, __ATOMIC_RELEASE);
      pthread_create(&thread, NULL, helper, (void *)(intptr_t)n);
      while (!__atomic_load_n(&helper_registered, __ATOMIC_ACQUIRE))
        sched_yield();
    }
    for (long round = 0; round < n; round++)
      restarts += conflicts ? conflict_round(kind) : explicit_round();
    if (conflicts)
      pthread_join(thread, NULL);
    size_t after = heap_in_use();
    if (phase == 0)
      continue; /* warm-up: sets and caches reach their size */
    CHECK(restarts == n, "%c: %ld restarts in %ld rounds", kind, restarts, n);
    /* A leak of even 16 bytes per restart would be 320 KB. */
    CHECK(after <= before + 64 * 1024, "%c: the heap grew by %zu bytes over %ld restarts",
          kind, after - before, restarts);
  }
}

int main(void) {
  stm_init();
  if (stm_init_thread() == NULL) {
    fprintf(stderr, "longjmp: the thread could not register\n");
    return 1;
  }
  run('e', ROUNDS);
  run('l', ROUNDS);
  run('c', ROUNDS);
  stm_exit_thread();
  stm_exit();
  return check_summary();
}
