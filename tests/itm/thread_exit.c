/*
 * thread_exit.c -- transactions in a thread's exit: each thread sets a
 * pthread_key_create key whose destructor runs __transaction_atomic blocks, which
 * the C library calls after the thread's function returned (and after its other
 * thread-local data was destroyed). GCC's libitm runs them; on Lutra they stopped
 * the program ("this thread is not registered"). The counter must account for
 * every destructor's transactions, and the threads that ran transactions before
 * exiting as well as those that ran none.
 */

#include "harness.h"

#define PER_DESTRUCTOR 10

static pthread_key_t key;
static long counter;
static long in_body;

static void at_exit(void *value) {
  long step = (long)(intptr_t)value;
  for (int i = 0; i < PER_DESTRUCTOR; i++) {
    __transaction_atomic { counter += step; }
  }
}

static void *body(void *arg) {
  intptr_t index = (intptr_t)arg;
  /* Half the threads run a transaction first (registered before exiting), half
   * meet the engine for the first time in their destructor. */
  if (index % 2 == 0) {
    __transaction_atomic { in_body++; }
  }
  pthread_setspecific(key, (void *)(intptr_t)(index + 1));
  return NULL;
}

int main(int argc, char **argv) {
  int threads = thread_count(argc, argv);
  pthread_key_create(&key, at_exit);
  /* Threads that exit one by one (no barrier: each exits as soon as it is done). */
  for (int round = 0; round < 4; round++) {
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    for (intptr_t i = 0; i < threads; i++) pthread_create(&ids[i], NULL, body, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    free(ids);
  }
  long expected = 4L * PER_DESTRUCTOR * ((long)threads * (threads + 1) / 2);
  CHECK(counter == expected, "destructors' transactions: %ld, expected %ld", counter, expected);
  CHECK(in_body == 4L * ((threads + 1) / 2), "bodies' transactions: %ld", in_body);
  printf("counter %ld, bodies %ld\n", counter, in_body);
  return check_summary();
}
