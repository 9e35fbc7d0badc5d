/*
 * abandon.c -- a longjmp (or siglongjmp) out of a running transaction, to a point
 * outside the frame that began it, rolls the transaction back: its writes are
 * gone, stm_active() is 0 and stm_aborted() 1, another thread's stm_init_thread
 * does not wait for it (it held the solo gate forever before), and the thread's
 * later transactions commit (they joined the abandoned one and were lost with it
 * before). A jump that stays inside the transaction leaves it running. Run with
 * LUTRA_STM_SOLO unset (the thread is alone: solo) and =0 (instrumented).
 * A watchdog (alarm) turns a hang into a failure.
 */

#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <unistd.h>

#include <lutra/stm.h>

#include "check.h"

static stm_word_t x, y, z;
static jmp_buf escape;
static sigjmp_buf sig_escape;

static __attribute__((noinline)) void leave_by_longjmp(void) {
  stm_tx_attr_t attr = {{.id = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  stm_store(&x, stm_load(&x) + 1);
  longjmp(escape, 1);
}

static __attribute__((noinline)) void leave_by_siglongjmp(void) {
  stm_tx_attr_t attr = {{.id = 2}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  stm_store(&x, stm_load(&x) + 10);
  siglongjmp(sig_escape, 1);
}

static int add_to_y(void *arg) {
  stm_store(&y, stm_load(&y) + (stm_word_t)(intptr_t)arg);
  return 0;
}

/* A jump inside the transaction: from a callee back to a point after stm_start. */
static jmp_buf inner;
static __attribute__((noinline)) void jump_back(void) { longjmp(inner, 1); }

static void *late_thread(void *arg) {
  (void)arg;
  CHECK(stm_init_thread() != NULL, "another thread registers");
  CHECK(stm_atomically(add_to_y, (void *)100) == 0, "and runs a transaction");
  stm_exit_thread();
  return NULL;
}

int main(void) {
  alarm(120);
  stm_init();
  stm_init_thread();

  if (setjmp(escape) == 0) leave_by_longjmp();
  CHECK(!stm_active(), "longjmp: the transaction is over");
  CHECK(stm_aborted(), "longjmp: it ended by an abort");
  CHECK(x == 0, "longjmp: its write is rolled back: %lu", (unsigned long)x);

  if (sigsetjmp(sig_escape, 1) == 0) leave_by_siglongjmp();
  CHECK(!stm_active() && x == 0, "siglongjmp: over and rolled back: %lu", (unsigned long)x);

  /* Later transactions of this thread commit. */
  CHECK(stm_atomically(add_to_y, (void *)1) == 0, "a later stm_atomically commits");
  CHECK(y == 1, "its write landed: %lu", (unsigned long)y);
  {
    stm_tx_attr_t attr = {{.id = 3}};
    sigjmp_buf *env = stm_start(attr);
    CHECK(env != NULL, "a later stm_start begins an outermost transaction");
    if (env != NULL) sigsetjmp(*env, 0);
    stm_store(&z, 7);
    stm_commit();
  }
  CHECK(z == 7, "its write landed: %lu", (unsigned long)z);

  /* Abandoned again, then another thread registers (the solo gate is free). */
  if (setjmp(escape) == 0) leave_by_longjmp();
  pthread_t other;
  pthread_create(&other, NULL, late_thread, NULL);
  pthread_join(other, NULL);
  CHECK(y == 101, "the other thread's transaction committed: %lu", (unsigned long)y);

  /* A jump that stays inside the transaction leaves it running. */
  {
    volatile int jumped = 0;
    stm_tx_attr_t attr = {{.id = 4}};
    sigjmp_buf *env = stm_start(attr);
    if (env != NULL) sigsetjmp(*env, 0);
    stm_store(&z, 8);
    if (setjmp(inner) == 0) jump_back();
    jumped = 1;
    CHECK(stm_active(), "a jump inside the transaction leaves it running");
    stm_commit();
    CHECK(jumped && z == 8, "and it commits: %lu", (unsigned long)z);
  }
  stm_exit_thread();
  lutra_clear_error();
  stm_exit();
  CHECK(lutra_last_error_code() == LUTRA_OK, "stm_exit: %s", lutra_last_error());
  return check_summary();
}
