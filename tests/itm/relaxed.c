/*
 * relaxed.c -- __transaction_relaxed blocks that do I/O (fprintf to a shared
 * file, an unsafe call: the transaction turns serial and irrevocable) and update a
 * shared counter, beside __transaction_atomic updaters of the same counter. Every
 * relaxed block prints the counter value it saw and then increments it: since they
 * run serially, the printed values are distinct, and the counter ends exact.
 */

#include <string.h>

#include "harness.h"

#define ROUNDS 4000 /* in all */

static long counter;
static long atomic_adds;
static FILE *log_file;
static int threads;

static void *worker(void *arg) {
  for (long i = 0; i < ROUNDS / threads; i++) {
    if ((intptr_t)arg % 2 == 0 || i % 2 == 0) {
      __transaction_relaxed {
        fprintf(log_file, "%ld\n", counter);
        counter++;
      }
    } else {
      __transaction_atomic { counter += 1000000; }
      __atomic_fetch_add(&atomic_adds, 1, __ATOMIC_RELAXED);
    }
  }
  return NULL;
}

static int compare_longs(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  threads = thread_count(argc, argv);
  log_file = tmpfile();
  if (log_file == NULL) {
    perror("tmpfile");
    return 1;
  }
  run_threads(threads, worker);
  long relaxed = (ROUNDS / threads) * threads - atomic_adds;
  CHECK(counter == relaxed + atomic_adds * 1000000, "counter %ld", counter);
  rewind(log_file);
  long *seen = calloc((size_t)relaxed + 1, sizeof *seen), lines = 0, value;
  while (fscanf(log_file, "%ld", &value) == 1 && lines <= relaxed) seen[lines++] = value;
  CHECK(lines == relaxed, "%ld lines for %ld relaxed transactions", lines, relaxed);
  qsort(seen, (size_t)lines, sizeof *seen, compare_longs);
  long repeats = 0;
  for (long i = 1; i < lines; i++) repeats += seen[i] == seen[i - 1];
  CHECK(repeats == 0, "%ld relaxed transactions saw the same counter", repeats);
  printf("relaxed: counter exact: %s, one line per relaxed transaction: %s, all distinct: %s\n",
         counter == relaxed + atomic_adds * 1000000 ? "yes" : "no", lines == relaxed ? "yes" : "no",
         repeats == 0 ? "yes" : "no");
  free(seen);
  return check_summary();
}
