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

/* Runs body(0) .. body(threads - 1) on as many threads and waits for them. */
static inline void run_threads(int threads, void *(*body)(void *)) {
  pthread_t *ids = calloc((size_t)threads, sizeof *ids);
  if (ids == NULL) {
    perror("calloc");
    exit(1);
  }
  for (intptr_t i = 0; i < threads; i++) {
    if (pthread_create(&ids[i], NULL, body, (void *)i) != 0) {
      perror("pthread_create");
      exit(1);
    }
  }
  for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
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
