/*
 * sched_pthread_exit.c -- pthread_exit inside a task of the scheduler ends the
 * task as if its function had returned (it stopped the process with "FATAL:
 * exception not rethrown" before): the code after the call never runs, the worker
 * goes on running the other tasks, a transaction left open by the task is rolled
 * back, and sched_wait returns. pthread_exit on a plain thread is still the C
 * library's (the thread ends, pthread_join gets its value).
 */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <lutra/sched.h>
#include <lutra/stm.h>

#include "check.h"

#define TASKS 16

static int exited, after_exit, plain;
static stm_word_t shared;

static __attribute__((noinline)) void leave(void) { pthread_exit((void *)1); }

static void *task(void *arg) {
  long i = (long)arg;
  sched_yield();
  __atomic_fetch_add(&exited, 1, __ATOMIC_RELAXED);
  if (i % 2 == 0) {
    leave(); /* from a callee */
  } else {
    /* Inside a transaction: it is rolled back when the task ends. */
    stm_init_thread();
    stm_tx_attr_t attr = {{.id = 1}};
    sigjmp_buf *env = stm_start(attr);
    if (env != NULL) sigsetjmp(*env, 0);
    stm_store(&shared, stm_load(&shared) + 1);
    pthread_exit(NULL);
  }
  __atomic_fetch_add(&after_exit, 1, __ATOMIC_RELAXED);
  return NULL;
}

static void *plain_thread(void *arg) {
  (void)arg;
  plain = 1;
  pthread_exit((void *)42);
  plain = 2;
  return NULL;
}

int main(void) {
  alarm(120);
  stm_init();
  CHECK(sched_init(2) >= 1, "workers");
  for (long i = 0; i < TASKS; i++) CHECK(sched_start(task, (void *)i) > 0, "task %ld", i);
  CHECK(sched_wait() == LUTRA_OK, "sched_wait returns (%s)", lutra_last_error());
  CHECK(exited == TASKS, "every task ran up to pthread_exit: %d", exited);
  CHECK(after_exit == 0, "no task ran past pthread_exit: %d", after_exit);
  CHECK(shared == 0, "the transactions left open were rolled back: %lu", (unsigned long)shared);
  /* The workers go on. */
  for (long i = 0; i < TASKS; i++) sched_start(task, (void *)i);
  CHECK(sched_wait() == LUTRA_OK, "a second round");
  CHECK(exited == 2 * TASKS && after_exit == 0, "the second round: %d, %d", exited, after_exit);
  CHECK(sched_shutdown() == LUTRA_OK, "sched_shutdown");
  stm_exit();
  CHECK(lutra_last_error_code() == LUTRA_OK, "stm_exit: no task is still registered (%s)",
        lutra_last_error());

  pthread_t thread;
  void *value = NULL;
  pthread_create(&thread, NULL, plain_thread, NULL);
  pthread_join(thread, &value);
  CHECK(value == (void *)42 && plain == 1, "a plain thread's pthread_exit is the C library's");
  return check_summary();
}
