/*
 * harness.h -- shared by the -fgnu-tm test programs: threads, a seeded random
 * number generator, and the library line. Each program takes its thread count as
 * its only argument, prints deterministic results on standard output (the same
 * under GCC's libitm and under Lutra: the runner compares them) and the name of the
 * TM library it runs on on standard error (the runner checks it is the one it
 * asked for).
 */

#ifndef LUTRA_ITM_HARNESS_H
#define LUTRA_ITM_HARNESS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../c/check.h"

const char *_ITM_libraryVersion(void);

/* The thread count from argv[1] (1 to 1024). */
static inline int thread_count(int argc, char **argv) {
  long threads = argc > 1 ? strtol(argv[1], NULL, 10) : 2;
  if (threads < 1 || threads > 1024) {
    fprintf(stderr, "usage: %s THREADS (1 to 1024)\n", argv[0]);
    exit(64);
  }
  fprintf(stderr, "library: %s\n", _ITM_libraryVersion());
  return (int)threads;
}

/* One thread of run_threads: its body, its argument, and the barrier that all the
 * threads reach before any exits. */
struct harness_thread {
  void *(*body)(void *);
  intptr_t index;
  pthread_barrier_t *done;
};

static inline void *harness_thread_main(void *raw) {
  struct harness_thread *thread = raw;
  void *result = thread->body((void *)thread->index);
  pthread_barrier_wait(thread->done);
  return result;
}

/* Runs body(0) .. body(threads - 1) on as many threads and waits for them. No thread
 * exits before every body has returned: GCC's libitm changes its default method when
 * the number of threads that ran transactions goes from 2 to 1 (a thread's exit), and
 * a transaction that begins at that moment may be made irrevocable although it
 * contains a __transaction_cancel, which then abort()s the program (libitm's
 * decide_begin_dispatch falls back to serialirr on that race whatever the
 * transaction's properties). With 64 threads, the first ones finished and exited
 * while later ones started, and safe_fn died this way about once in 20 runs. */
static inline void run_threads(int threads, void *(*body)(void *)) {
  pthread_t *ids = calloc((size_t)threads, sizeof *ids);
  struct harness_thread *args = calloc((size_t)threads, sizeof *args);
  pthread_barrier_t done;
  if (ids == NULL || args == NULL) {
    perror("calloc");
    exit(1);
  }
  if (pthread_barrier_init(&done, NULL, (unsigned)threads) != 0) {
    perror("pthread_barrier_init");
    exit(1);
  }
  for (intptr_t i = 0; i < threads; i++) {
    args[i] = (struct harness_thread){body, i, &done};
    if (pthread_create(&ids[i], NULL, harness_thread_main, &args[i]) != 0) {
      perror("pthread_create");
      exit(1);
    }
  }
  for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
  pthread_barrier_destroy(&done);
  free(args);
  free(ids);
}

/* xorshift64*: a per-thread pseudo-random sequence. */
static inline uint64_t next_random(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

#endif /* LUTRA_ITM_HARNESS_H */
