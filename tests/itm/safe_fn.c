/*
 * safe_fn.c -- transaction_safe functions called directly and through function
 * pointers (a pointer typed transaction_safe: _ITM_getTMCloneSafe; a plain one:
 * _ITM_getTMCloneOrIrrevocable, which finds the clone registered by the C runtime
 * and so stays revocable), transactional malloc, memcpy and free of a scratch block,
 * and a user abort after an allocation. Each thread adds to shared counters; the
 * totals are exact at the end.
 */

#include <string.h>

#include "harness.h"

#define ROUNDS 20000 /* in all */
#define WIDTH 4

static long counters[WIDTH];
static long source[WIDTH] = {1, 2, 3, 4};
static long cancelled;
static int threads;

__attribute__((transaction_safe)) static void add_all(long *target, const long *values) {
  for (int i = 0; i < WIDTH; i++) target[i] += values[i];
}

__attribute__((transaction_safe)) static long sum_of(const long *values) {
  long sum = 0;
  for (int i = 0; i < WIDTH; i++) sum += values[i];
  return sum;
}

typedef void (*safe_adder)(long *, const long *) __attribute__((transaction_safe));
typedef long (*plain_summer)(const long *);

static safe_adder adder = add_all;
static plain_summer summer = (plain_summer)sum_of;

static void *worker(void *arg) {
  long local_cancels = 0;
  for (long i = 0; i < ROUNDS / threads; i++) {
    int stop = 0;
    __transaction_atomic {
      long *scratch = malloc(WIDTH * sizeof *scratch);
      memcpy(scratch, source, sizeof source);
      if (i % 10 == 9 && (intptr_t)arg % 2 == 0) {
        free(scratch);
        __transaction_cancel;
      }
      adder(counters, scratch);
      free(scratch);
    }
    __transaction_relaxed { stop = summer(counters) < 0; }
    if (i % 10 == 9 && (intptr_t)arg % 2 == 0) local_cancels++;
    if (stop) break;
  }
  __atomic_fetch_add(&cancelled, local_cancels, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv) {
  threads = thread_count(argc, argv);
  run_threads(threads, worker);
  long rounds = (ROUNDS / threads) * threads - cancelled;
  for (int i = 0; i < WIDTH; i++)
    CHECK(counters[i] == rounds * source[i], "counter %d is %ld, expected %ld", i, counters[i],
          rounds * source[i]);
  printf("safe_fn: %ld rounds committed, counters exact: %s\n", rounds,
         counters[WIDTH - 1] == rounds * source[WIDTH - 1] ? "yes" : "no");
  return check_summary();
}
