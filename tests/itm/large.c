/*
 * large.c -- a transaction with more reads than Lutra's set limit (2^24 entries):
 * each thread sums a table of 4,096 words 4,097 times (16,781,312 reads) inside one
 * __transaction_atomic. Run against Lutra with LUTRA_STM_SOLO=0 (instrumented even
 * on one thread), at 1 and 2 threads. It used to restart forever without a word; a
 * word read again needs no new read-set entry now, and the transaction commits with
 * the right sum. Lutra only (GCC's libitm has no such limit).
 */

#include "harness.h"

#define WORDS 4096
#define PASSES 4097

static uintptr_t table[WORDS];

static void *sum_table(void *arg) {
  (void)arg;
  uintptr_t sum = 0;
  __transaction_atomic {
    sum = 0;
    for (int pass = 0; pass < PASSES; pass++)
      for (int at = 0; at < WORDS; at++) sum += table[at];
  }
  CHECK(sum == (uintptr_t)PASSES * (WORDS * (WORDS - 1) / 2), "sum %lu", (unsigned long)sum);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = thread_count(argc, argv);
  for (int at = 0; at < WORDS; at++) table[at] = (uintptr_t)at;
  run_threads(threads, sum_table);
  return check_summary();
}
