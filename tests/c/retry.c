/*
 * retry.c -- stm_retry in tinySTM-style transactions (stm_start + sigsetjmp):
 * a bounded buffer of 4 words between producers and consumers, no lock, no
 * condition variable. Also: the misuse cases return with the last error set
 * (outside a transaction; in an irrevocable one, which goes on; in one that read
 * nothing, which ends). At 2, 8 and 64 threads (half producers, half consumers),
 * every item arrives once; under both designs (the Makefile's loop). The first
 * take of each run is made by a consumer registered alone with the engine, whose
 * transaction runs solo: its retry must still wait (see attempt.rs).
 */

#include <pthread.h>
#include <stdint.h>

#include <lutra/stm.h>

#include "check.h"

#define CAPACITY 4
#define ITEMS 2000 /* per producer */

static stm_word_t buffer[CAPACITY];
static stm_word_t first, count;
static stm_word_t consumed_sum;

static stm_word_t take(void) {
  stm_word_t item = 0;
  stm_tx_attr_t attr = {{.id = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  stm_word_t n = stm_load(&count);
  if (n == 0) stm_retry();
  stm_word_t at = stm_load(&first);
  item = stm_load(&buffer[at]);
  stm_store(&first, (at + 1) % CAPACITY);
  stm_store(&count, n - 1);
  stm_commit();
  return item;
}

static void put(stm_word_t item) {
  stm_tx_attr_t attr = {{.id = 2}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  stm_word_t n = stm_load(&count);
  if (n == CAPACITY) stm_retry();
  stm_word_t at = stm_load(&first);
  stm_store(&buffer[(at + n) % CAPACITY], item);
  stm_store(&count, n + 1);
  stm_commit();
}

static int pairs;

static void *worker(void *arg) {
  intptr_t id = (intptr_t)arg;
  stm_init_thread();
  if (id < pairs) {
    for (stm_word_t i = 1; i <= ITEMS; i++) put(i);
  } else {
    stm_word_t sum = 0;
    for (int i = 0; i < ITEMS; i++) sum += take();
    __atomic_fetch_add(&consumed_sum, sum, __ATOMIC_RELAXED);
  }
  stm_exit_thread();
  return NULL;
}

static int solo_taken;

/* A consumer alone with the engine: its first attempt is solo. */
static void *lone_consumer(void *arg) {
  (void)arg;
  stm_init_thread();
  solo_taken = take() == 7;
  stm_exit_thread();
  return NULL;
}

static void misuse(void) {
  stm_init_thread();
  stm_retry();
  CHECK(lutra_last_error_code() == LUTRA_ENOTX, "stm_retry outside a transaction");

  stm_tx_attr_t attr = {{.id = 3}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  stm_set_irrevocable(1);
  lutra_clear_error();
  stm_retry();
  CHECK(lutra_last_error_code() == LUTRA_EINVAL, "stm_retry in an irrevocable transaction");
  CHECK(stm_active() == 1, "the irrevocable transaction goes on");
  stm_commit();

  env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  lutra_clear_error();
  stm_retry();
  CHECK(lutra_last_error_code() == LUTRA_EINVAL, "stm_retry in a transaction that read nothing");
  CHECK(stm_active() == 0 && stm_aborted() == 1, "that transaction is over");
  stm_exit_thread();
}

int main(void) {
  stm_init();
  misuse();

  /* The lone consumer registers alone (the main thread left), so its first attempt
   * runs solo; whatever the interleaving, the main thread's registration waits for
   * any solo attempt to end, and the item it puts wakes the consumer's retry. */
  pthread_t lone;
  pthread_create(&lone, NULL, lone_consumer, NULL);
  stm_init_thread();
  put(7);
  stm_exit_thread();
  pthread_join(lone, NULL);
  CHECK(solo_taken, "the lone consumer took the item");

  int runs[] = {2, 8, 64};
  for (int r = 0; r < 3; r++) {
    pairs = runs[r] / 2;
    consumed_sum = 0;
    pthread_t threads[64];
    for (intptr_t i = 0; i < 2 * pairs; i++) pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2 * pairs; i++) pthread_join(threads[i], NULL);
    stm_word_t expected = (stm_word_t)pairs * ITEMS * (ITEMS + 1) / 2;
    CHECK(consumed_sum == expected, "%d threads: consumed %lu, expected %lu", runs[r],
          (unsigned long)consumed_sum, (unsigned long)expected);
    CHECK(count == 0, "%d threads: %lu items left", runs[r], (unsigned long)count);
  }
  stm_exit();
  return check_summary();
}
