/*
 * retry_alone.c -- stm_retry() in a transaction begun by a thread alone with the
 * engine (Lutra only). Lutra runs such a transaction (it has both paths and no
 * __transaction_cancel) uninstrumented and serial, as GCC's libitm does, unless
 * the program can call stm_retry: this one can (its dynamic symbols name
 * stm_retry), so its transactions run instrumented, and a retry after a write
 * rolls the write back. Run uninstrumented, the retry would stop the process: an
 * uninstrumented attempt cannot be rolled back.
 *
 * The main thread is alone with the engine: a helper thread exists but has run
 * no transaction. The main thread's transaction writes `written`, finds `ready`
 * clear, lets the helper go (a transaction_pure call) and retries; the helper
 * then sets `ready` in a transaction of its own, which wakes the main thread, and
 * its next run commits. Ordered by the helper's handshake and the retry's wait:
 * no sleep.
 */

#include <sched.h>

#include <lutra/stm.h>

#include "harness.h"

static long ready, written;
static int go, runs;

/* Lets the helper begin its transaction (and count the main thread's runs). */
__attribute__((transaction_pure)) static void let_helper_go(void) {
  __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
}

__attribute__((transaction_pure)) static void count_run(void) {
  __atomic_fetch_add(&runs, 1, __ATOMIC_RELAXED);
}

static void *helper(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) sched_yield();
  __transaction_atomic { ready = 1; }
  return NULL;
}

int main(int argc, char **argv) {
  thread_count(argc, argv);
  pthread_t thread;
  if (pthread_create(&thread, NULL, helper, NULL) != 0) {
    perror("pthread_create");
    return 1;
  }
  __transaction_atomic {
    count_run();
    written += 1;
    if (!ready) {
      let_helper_go();
      stm_retry();
    }
  }
  pthread_join(thread, NULL);
  int total_runs = __atomic_load_n(&runs, __ATOMIC_RELAXED);
  CHECK(written == 1, "written is %ld: a retried run's write was kept", written);
  CHECK(total_runs >= 2, "the transaction ran %d times: it never retried", total_runs);
  printf("retry_alone: a lone thread's retry rolled its write back: %s\n",
         written == 1 && total_runs >= 2 ? "yes" : "no");
  return check_summary();
}
