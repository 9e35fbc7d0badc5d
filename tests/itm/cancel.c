/*
 * cancel.c -- __transaction_cancel. First, on one thread: a cancel after writes to
 * shared memory and to a local variable undoes both, and a cancel of the outer
 * transaction from a nested one ([[outer]]) undoes the whole. Then transfers that
 * cancel themselves when the source account cannot pay, on every thread: no
 * balance goes negative and the total is conserved.
 */

#include "harness.h"

#define ACCOUNTS 16
#define INITIAL 100
#define OPERATIONS 80000 /* in all */

static long accounts[ACCOUNTS];
static long x, y;
static int threads;
static long negative_seen;

__attribute__((transaction_may_cancel_outer, noinline)) static void cancel_everything(long value) {
  y = value;
  __transaction_cancel [[outer]];
}

static void *worker(void *arg) {
  uint64_t seed = 0xA0761D6478BD642FULL * ((uint64_t)(intptr_t)arg + 3);
  for (long i = 0; i < OPERATIONS / threads; i++) {
    uint64_t r = next_random(&seed);
    int from = (int)(r % ACCOUNTS), to = (int)((r >> 8) % ACCOUNTS);
    long amount = (long)((r >> 16) % 80);
    __transaction_atomic {
      if (accounts[from] < amount) __transaction_cancel;
      accounts[from] -= amount;
      accounts[to] += amount;
      if (accounts[from] < 0) negative_seen++;
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  threads = thread_count(argc, argv);
  long local = 1;
  __transaction_atomic {
    x = 10;
    local = 2;
    __transaction_cancel;
  }
  CHECK(x == 0, "a cancelled write to shared memory stayed: x = %ld", x);
  CHECK(local == 1, "a cancelled write to a local stayed: local = %ld", local);
  __transaction_atomic [[outer]] {
    x = 20;
    __transaction_atomic { cancel_everything(30); }
  }
  CHECK(x == 0 && y == 0, "an outer cancel left x = %ld, y = %ld", x, y);
  for (int a = 0; a < ACCOUNTS; a++) accounts[a] = INITIAL;
  run_threads(threads, worker);
  long total = 0, negative = 0;
  for (int a = 0; a < ACCOUNTS; a++) {
    total += accounts[a];
    negative += accounts[a] < 0;
  }
  CHECK(total == (long)ACCOUNTS * INITIAL, "total %ld", total);
  CHECK(negative == 0 && negative_seen == 0, "%ld negative balances", negative + negative_seen);
  printf("cancel: undone on one thread: %s; total %ld, negative balances %ld\n",
         x == 0 && y == 0 && local == 1 ? "yes" : "no", total, negative + negative_seen);
  return check_summary();
}
