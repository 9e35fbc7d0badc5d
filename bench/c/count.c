/*
 * count.c -- instructions per transactional operation, counted by callgrind
 * (valgrind --tool=callgrind --collect-atstart=no). Built from the same macros as
 * the benchmark (tm.h), for Lutra, libitm and the sequential build.
 *
 * Each operation is measured twice, with n and 2n repetitions, with collection
 * switched on around the measured code only and one callgrind dump per
 * measurement ("<op> <reps>"); the driver (cbench --count) reads the dumps and
 * prints (cost(2n) - cost(n)) / n, so setup and every constant cost cancel. The
 * sequential build gives the cost of the loop itself, without a transaction.
 *
 * Operations:
 *   read        one read-only transaction of n reads of distinct words
 *   read_after_write  the same after one write in the transaction
 *   write       one transaction of n writes to distinct words (with its share
 *               of the commit: lock, write back, release)
 *   empty       n empty update transactions (GCC drops an empty
 *               __transaction_atomic: 0 for libitm)
 *   tx_1read    n transactions of one read each
 *   tx_1write   n transactions of one write each (measured before any large
 *               transaction ran on the thread)
 *   tx_1write_after_large  the same after transactions of n and 2n writes
 *   read_call, write_call  (not libitm) n reads or writes inside a transaction,
 *               collection on inside it: the call alone, no commit share
 *
 * Usage: count <n>   (n <= 2048); run it under callgrind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "tm.h"

#define WORDS 4096

static intptr_t words[WORDS];
static intptr_t sink;

static void dump(const char *op, long reps) {
  char label[64];
  snprintf(label, sizeof label, "%s %ld", op, reps);
  CALLGRIND_DUMP_STATS_AT(label);
}

static void read_tx(long n, int write_first) {
  intptr_t s;
  TM_BEGIN();
  s = 0;
  if (write_first)
    TM_WRITE(words[WORDS - 1], n);
  for (long i = 0; i < n; i++)
    s += TM_READ(words[i]);
  TM_END();
  sink += s;
}

static void write_tx(long n) {
  TM_BEGIN();
  for (long i = 0; i < n; i++)
    TM_WRITE(words[i], i);
  TM_END();
}

/* One transaction per call (a restart jumps back into this frame only). */
static __attribute__((noinline)) void empty_tx(void) {
  TM_BEGIN();
  TM_END();
}

static __attribute__((noinline)) intptr_t one_read_tx(long i) {
  intptr_t value;
  TM_BEGIN();
  value = TM_READ(words[i & 63]);
  TM_END();
  return value;
}

static __attribute__((noinline)) void one_write_tx(long i) {
  TM_BEGIN();
  TM_WRITE(words[i & 63], i);
  TM_END();
}

static void empty_txs(long n) {
  for (long i = 0; i < n; i++)
    empty_tx();
}

static void one_read_txs(long n) {
  intptr_t s = 0;
  for (long i = 0; i < n; i++)
    s += one_read_tx(i);
  sink += s;
}

static void one_write_txs(long n) {
  for (long i = 0; i < n; i++)
    one_write_tx(i);
}

#if !defined(TM_ITM)
/* Collection on inside the transaction: the accesses alone. */
static void read_calls(long n) {
  intptr_t s;
  TM_BEGIN();
  s = 0;
  CALLGRIND_TOGGLE_COLLECT;
  for (long i = 0; i < n; i++)
    s += TM_READ(words[i]);
  CALLGRIND_TOGGLE_COLLECT;
  TM_END();
  sink += s;
}

static void write_calls(long n) {
  TM_BEGIN();
  CALLGRIND_TOGGLE_COLLECT;
  for (long i = 0; i < n; i++)
    TM_WRITE(words[i], i);
  CALLGRIND_TOGGLE_COLLECT;
  TM_END();
}
#endif

/* Runs op(reps) with collection on around it. */
#define MEASURE(name, call)        \
  do {                             \
    CALLGRIND_TOGGLE_COLLECT;      \
    call;                          \
    CALLGRIND_TOGGLE_COLLECT;      \
    dump(name, reps);              \
  } while (0)

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  if (n <= 0 || 2 * n > WORDS / 2) {
    fprintf(stderr, "count: n must be in 1..%d\n", WORDS / 4);
    return 2;
  }
  TM_STARTUP();
  TM_THREAD_ENTER();
  /* Small transactions first, warmed up by themselves: no set has grown yet. */
  empty_txs(2 * n);
  one_read_txs(2 * n);
  one_write_txs(2 * n);
  CALLGRIND_ZERO_STATS;
  for (long reps = n; reps <= 2 * n; reps += n) {
    MEASURE("empty", empty_txs(reps));
    MEASURE("tx_1read", one_read_txs(reps));
    MEASURE("tx_1write", one_write_txs(reps));
  }
  /* Then large ones: every set reaches its largest size once, outside
   * collection. */
  read_tx(2 * n, 1);
  write_tx(2 * n);
  CALLGRIND_ZERO_STATS;
  for (long reps = n; reps <= 2 * n; reps += n) {
    MEASURE("read", read_tx(reps, 0));
    MEASURE("read_after_write", read_tx(reps, 1));
    MEASURE("write", write_tx(reps));
    /* After a transaction of 2n writes: does a small one pay for the large? */
    MEASURE("tx_1write_after_large", one_write_txs(reps));
#if !defined(TM_ITM)
    read_calls(reps);
    dump("read_call", reps);
    write_calls(reps);
    dump("write_call", reps);
#endif
  }
  TM_THREAD_EXIT();
  TM_SHUTDOWN();
  printf("count %s n=%ld sink=%ld\n", TM_NAME, n, (long)sink);
  return 0;
}
