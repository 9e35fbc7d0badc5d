/*
 * alone.c -- a thread alone with the engine, then joined by others while it runs
 * transactions. Alone, a transaction with both paths and no __transaction_cancel
 * runs uninstrumented and serial (irrevocable), under GCC's libitm and under
 * Lutra alike: the first one reports so (_ITM_inTransaction). Then the main
 * thread goes on transferring between two words whose sum is 0 and starts the
 * other threads one by one between its transactions, so that each registers
 * while the main thread's transactions run, the last ones of them uninstrumented;
 * every thread audits the sum inside each of its transactions and counts its
 * transactions in a shared word. Checks: no audit sees another sum, no
 * transaction is lost.
 */

#include "harness.h"

#define ROUNDS 3000 /* transactions per thread, and of the main thread per start */

typedef enum { OUTSIDE, NON_IRREVOCABLE, IRREVOCABLE } how_executing;
how_executing _ITM_inTransaction(void);

static long words[2], committed, unbalanced;
static how_executing first; /* a global: GCC drops a transaction that writes only locals */

__attribute__((transaction_pure)) static how_executing how(void) {
  return _ITM_inTransaction();
}

/* One transfer of `amount` with its audit. */
static void transfer(long amount) {
  __transaction_atomic {
    if (words[0] + words[1] != 0) unbalanced++;
    words[0] += amount;
    words[1] -= amount;
    committed++;
  }
}

static void *worker(void *arg) {
  long seed = (long)(intptr_t)arg;
  for (long i = 0; i < ROUNDS; i++) transfer((seed * 7 + i) % 13 - 6);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = thread_count(argc, argv);
  __transaction_atomic { first = how(); }
  printf("alone: a lone thread's transaction runs irrevocable: %s\n",
         first == IRREVOCABLE ? "yes" : "no");

  pthread_t *ids = calloc((size_t)threads, sizeof *ids);
  CHECK(ids != NULL, "calloc");
  for (long started = 1; started <= threads; started++) {
    for (long i = 0; i < ROUNDS; i++) transfer(i % 11 - 5);
    if (started < threads && pthread_create(&ids[started], NULL, worker, (void *)(intptr_t)started) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  for (int i = 1; i < threads; i++) pthread_join(ids[i], NULL);
  free(ids);
  long expected = (long)threads * ROUNDS + (long)(threads - 1) * ROUNDS;
  CHECK(unbalanced == 0, "%ld audits saw a sum other than 0", unbalanced);
  CHECK(words[0] + words[1] == 0, "the sum is %ld", words[0] + words[1]);
  CHECK(committed == expected, "%ld transactions counted, %ld expected", committed, expected);
  printf("alone: %d threads, %ld transactions, every audit balanced: %s\n", threads, committed,
         unbalanced == 0 && committed == expected ? "yes" : "no");
  return check_summary();
}
