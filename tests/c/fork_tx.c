/*
 * fork_tx.c -- fork() while another registered thread is in the middle of a
 * transaction (it has read and written; under wb-etl it holds the ownership
 * record of what it wrote), driven by a handshake: the child runs transactions on
 * that very data, from the forking thread and from a thread of its own, and exits
 * 0; it used to wait forever (wait_before_restart) for the thread that does not
 * exist in it. The parent's transaction then commits as usual. A watchdog
 * (alarm) in the child turns a hang into a failure.
 */

#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lutra/sched.h>
#include <lutra/stm.h>

#include "check.h"

static stm_word_t x, y;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int inside, forked;

/* Inside a transaction from "inside" to "forked". */
static void *holder(void *arg) {
  (void)arg;
  stm_init_thread();
  stm_tx_attr_t attr = {{.id = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  stm_store(&x, stm_load(&x) + 100);
  stm_store(&y, stm_load(&y) + 100);
  pthread_mutex_lock(&lock);
  inside = 1;
  pthread_cond_broadcast(&cond);
  while (!forked) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  stm_commit();
  stm_exit_thread();
  return NULL;
}

static int add(void *arg) {
  stm_word_t n = (stm_word_t)(intptr_t)arg;
  stm_store(&x, stm_load(&x) + n);
  stm_store(&y, stm_load(&y) + n);
  return 0;
}

static void *task(void *arg) { return arg; }

static void *child_thread(void *arg) {
  (void)arg;
  int ok = stm_init_thread() != NULL;
  for (int i = 0; i < 1000; i++) ok &= stm_atomically(add, (void *)1) == 0;
  stm_exit_thread();
  return (void *)(intptr_t)ok;
}

/* The child: transactions on x and y from two threads; exit status 0 if all is
 * well. */
static int in_child(void) {
  alarm(60);
  int ok = 1;
  for (int i = 0; i < 1000; i++) ok &= stm_atomically(add, (void *)1) == 0;
  pthread_t other;
  void *other_ok = NULL;
  pthread_create(&other, NULL, child_thread, NULL);
  pthread_join(other, &other_ok);
  ok &= other_ok != NULL;
  ok &= x == 2000 && y == 2000;
  if (!ok) fprintf(stderr, "child: x %lu, y %lu\n", (unsigned long)x, (unsigned long)y);
  int64_t started = sched_start(task, NULL);
  int waited = sched_wait(), again = sched_init(1);
  if (started != LUTRA_ENOINIT || waited != LUTRA_ENOINIT || again != LUTRA_ENOINIT) {
    fprintf(stderr, "child: sched_start %ld, sched_wait %d, sched_init %d (%s)\n", (long)started,
            waited, again, lutra_last_error());
    ok = 0;
  }
  stm_exit_thread();
  lutra_clear_error();
  stm_exit();
  ok &= lutra_last_error_code() == LUTRA_OK;
  return ok ? 0 : 1;
}

int main(void) {
  stm_init();
  stm_init_thread();
  CHECK(sched_init(1) >= 1, "the parent's scheduler");
  for (int round = 0; round < 3; round++) {
    inside = forked = 0;
    x = y = 0;
    pthread_t thread;
    pthread_create(&thread, NULL, holder, NULL);
    pthread_mutex_lock(&lock);
    while (!inside) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    pid_t pid = fork();
    if (pid == 0) _exit(in_child());
    pthread_mutex_lock(&lock);
    forked = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "round %d: the child ran its transactions and exited 0 (status %#x%s)", round, status,
          WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? ": it hung" : "");
    CHECK(x == 100 && y == 100, "round %d: the parent's transaction committed: %lu, %lu", round,
          (unsigned long)x, (unsigned long)y);
  }
  CHECK(sched_start(task, NULL) > 0 && sched_wait() == LUTRA_OK, "the parent's scheduler runs");
  CHECK(sched_shutdown() == LUTRA_OK, "sched_shutdown");
  stm_exit_thread();
  stm_exit();
  return check_summary();
}
