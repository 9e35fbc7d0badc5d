/*
 * workload.h -- what every workload of the C benchmark offers the harness
 * (harness.c): build the shared state sequentially, run one operation (one or a
 * few transactions) from a thread, and check the state once every thread is done.
 */
#ifndef CBENCH_WORKLOAD_H
#define CBENCH_WORKLOAD_H

#include <stdint.h>

/* A thread's random numbers (xorshift64*): cheap, and the same in every build. */
struct rng {
  uint64_t state;
  /* Where results go, so that no build can drop an operation as unused. */
  long sink;
};

static inline uint64_t rng_next(struct rng *r) {
  uint64_t x = r->state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* A number in [0, n). */
static inline long rng_below(struct rng *r, long n) {
  return (long)((rng_next(r) >> 11) % (uint64_t)n);
}

struct workload {
  /* As given on the command line. */
  const char *name;
  /* Builds the shared state (before any thread starts, without transactions). */
  void *(*setup)(struct rng *r);
  /* One operation of a thread: one transaction, chosen and run. */
  void (*op)(void *shared, struct rng *r);
  /* After every thread ended: 0 if the state is consistent, else prints why. */
  int (*check)(void *shared);
};

extern const struct workload bank64, bank4096;
extern const struct workload list10, list50;
extern const struct workload rbtree10, rbtree50;
extern const struct workload hash10, hash50;
extern const struct workload vacation;

#endif /* CBENCH_WORKLOAD_H */
