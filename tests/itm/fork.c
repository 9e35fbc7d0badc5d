/*
 * fork.c -- fork() in a -fgnu-tm program while another thread is inside a
 * __transaction_atomic that has written (Lutra only: GCC's libitm writes in
 * place, so its child would see the half-done transaction). The other thread
 * stops in the middle of its transaction at a transaction_pure handshake; the
 * main thread forks; the child runs transactions on the same data from two
 * threads and exits 0 (it waited forever for the missing thread before). The
 * parent's transaction then commits. A watchdog (alarm) in the child turns a hang
 * into a failure.
 */

#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static long x, y;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int inside, forked;

/* Called inside the transaction, uninstrumented: tells main, waits for the fork. */
__attribute__((transaction_pure)) static void handshake(void) {
  pthread_mutex_lock(&lock);
  inside = 1;
  pthread_cond_broadcast(&cond);
  while (!forked) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
}

static void *holder(void *arg) {
  (void)arg;
  int first = 1;
  __transaction_atomic {
    x += 100;
    if (first) {
      first = 0;
      handshake();
    }
    y += 100;
  }
  return NULL;
}

static void *adder(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++) {
    __transaction_atomic {
      x++;
      y++;
    }
  }
  return NULL;
}

static int in_child(void) {
  alarm(60);
  pthread_t other;
  pthread_create(&other, NULL, adder, NULL);
  adder(NULL);
  pthread_join(other, NULL);
  if (x != 2000 || y != 2000) {
    fprintf(stderr, "child: x %ld, y %ld\n", x, y);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  (void)thread_count(argc, argv);
  __transaction_atomic { x = 0; } /* the main thread is registered too */
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
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ran its transactions (status %#x%s)",
        status, WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? ": it hung" : "");
  CHECK(x == 100 && y == 100, "the parent's transaction committed: %ld, %ld", x, y);
  return check_summary();
}
