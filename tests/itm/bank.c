/*
 * bank.c -- transfers between 64 accounts and audits of them all (1 operation in
 * 16), written with __transaction_atomic. Audits run inside the transaction: an
 * audit that sees a total other than the constant one counts as a failure.
 * Conservation is checked at the end.
 */

#include "harness.h"

#define ACCOUNTS 64
#define INITIAL 1000
#define OPERATIONS 160000 /* in all, split among the threads */

static long accounts[ACCOUNTS];
static int threads;
static long bad_audits;

static void *worker(void *arg) {
  uint64_t seed = 0x9E3779B97F4A7C15ULL * ((uint64_t)(intptr_t)arg + 1);
  long operations = OPERATIONS / threads;
  for (long i = 0; i < operations; i++) {
    uint64_t r = next_random(&seed);
    if (r % 16 == 0) {
      long total = 0;
      __transaction_atomic {
        total = 0;
        for (int a = 0; a < ACCOUNTS; a++) total += accounts[a];
      }
      if (total != (long)ACCOUNTS * INITIAL) __atomic_fetch_add(&bad_audits, 1, __ATOMIC_RELAXED);
    } else {
      int from = (int)((r >> 8) % ACCOUNTS), to = (int)((r >> 20) % ACCOUNTS);
      long amount = (long)((r >> 32) % 50);
      __transaction_atomic {
        accounts[from] -= amount;
        accounts[to] += amount;
      }
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  threads = thread_count(argc, argv);
  for (int a = 0; a < ACCOUNTS; a++) accounts[a] = INITIAL;
  run_threads(threads, worker);
  long total = 0;
  for (int a = 0; a < ACCOUNTS; a++) total += accounts[a];
  CHECK(total == (long)ACCOUNTS * INITIAL, "total %ld", total);
  CHECK(bad_audits == 0, "%ld audits saw another total", bad_audits);
  printf("bank: total %ld, audits that saw another total: %ld\n", total, bad_audits);
  return check_summary();
}
