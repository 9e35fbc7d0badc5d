/*
 * many_threads.c -- 5,000 threads alive at once, each having run transactions
 * (GCC's libitm runs them; Lutra stopped at about 4,500 with "raise
 * Config::max_descriptors", which a C program cannot do). Lutra's bound is
 * LUTRA_STM_MAX_THREADS (default 8192). Each thread increments a shared counter,
 * then waits at a barrier until every thread has, so that all are alive (and
 * registered) together. The argument is ignored.
 */

#include <limits.h>

#include "harness.h"

#define THREADS 5000
#define INCREMENTS 4

static long counter;
static pthread_barrier_t all_alive;

static void *body(void *arg) {
  (void)arg;
  for (int i = 0; i < INCREMENTS; i++) {
    __transaction_atomic { counter++; }
  }
  pthread_barrier_wait(&all_alive);
  return NULL;
}

int main(int argc, char **argv) {
  (void)thread_count(argc, argv);
  pthread_barrier_init(&all_alive, NULL, THREADS);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN > 65536 ? PTHREAD_STACK_MIN : 65536);
  pthread_t *ids = calloc(THREADS, sizeof *ids);
  int started = 0;
  for (int i = 0; i < THREADS; i++) {
    if (pthread_create(&ids[i], &attr, body, NULL) != 0) break;
    started++;
  }
  CHECK(started == THREADS, "threads started: %d", started);
  for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
  free(ids);
  CHECK(counter == (long)THREADS * INCREMENTS, "counter %ld", counter);
  printf("threads %d, counter %ld\n", started, counter);
  return check_summary();
}
