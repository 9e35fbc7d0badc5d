/*
 * progress.c -- transactions that used to never finish, through <lutra/stm.h>:
 *
 * - large: two threads at once each run a read-only transaction of 16,781,312 reads
 *   (a table of 4,096 words read 4,097 times), more than the engine's set limit
 *   (2^24 entries). It used to restart forever without a word; a word read again
 *   needs no new read-set entry now, and each transaction commits once with the
 *   right sum.
 * - overtaken: a reader that is overtaken during every attempt (a handshake: it reads
 *   `first`, lets a writer thread commit `first` and `last`, waits for the commit,
 *   then reads `last`, newer than its snapshot) used to starve under every
 *   contention manager. Its attempt after 32 aborts in a row runs irrevocable and
 *   commits: exactly 33 attempts, the last irrevocable. The Makefile runs it under
 *   each design and manager.
 * - hinted: the same reader begun with the read-only attribute, overtaken during
 *   every attempt by a writer of `last` alone: its first attempt keeps no read set
 *   and aborts (it cannot extend its snapshot), its second keeps one, extends past
 *   the writer and commits: exactly 2 attempts. Then a read-only transaction that
 *   writes runs again (recorded) and writes once.
 */

#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>

#include <lutra/stm.h>

#include "check.h"

#define WORDS 4096
#define PASSES 4097
#define MIDDLE 100
#define BOUND 33 /* the engine's 32 aborts in a row, then the irrevocable attempt */

static stm_word_t table[WORDS];
static pthread_barrier_t both_registered;

static void *large_reader(void *arg) {
  (void)arg;
  stm_init_thread();
  pthread_barrier_wait(&both_registered);
  static __thread int attempts;
  static __thread stm_word_t sum;
  attempts = 0;
  stm_tx_attr_t attr = {{.id = 1, .read_only = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  attempts++;
  sum = 0;
  for (int pass = 0; pass < PASSES; pass++)
    for (int at = 0; at < WORDS; at++) sum += stm_load(&table[at]);
  stm_commit();
  CHECK(sum == (stm_word_t)PASSES * (WORDS * (WORDS - 1) / 2), "large: sum %lu",
        (unsigned long)sum);
  CHECK(attempts == 1, "large: %d attempts (1 expected)", attempts);
  stm_exit_thread();
  return NULL;
}

static void large(void) {
  for (int at = 0; at < WORDS; at++) table[at] = (stm_word_t)at;
  pthread_barrier_init(&both_registered, NULL, 2);
  pthread_t threads[2];
  for (int t = 0; t < 2; t++) pthread_create(&threads[t], NULL, large_reader, NULL);
  for (int t = 0; t < 2; t++) pthread_join(threads[t], NULL);
  pthread_barrier_destroy(&both_registered);
}

static stm_word_t first, middle[MIDDLE], last;
static sem_t go, committed;
static volatile int stop, only_last;

static void *writer(void *arg) {
  (void)arg;
  stm_init_thread();
  pthread_barrier_wait(&both_registered);
  for (;;) {
    sem_wait(&go);
    if (stop) break;
    stm_tx_attr_t attr = {{.id = 2}};
    sigjmp_buf *env = stm_start(attr);
    if (env != NULL) sigsetjmp(*env, 0);
    if (!only_last) stm_store(&first, stm_load(&first) + 1);
    stm_store(&last, stm_load(&last) + 1);
    stm_commit();
    sem_post(&committed);
  }
  stm_exit_thread();
  return NULL;
}

static void overtaken(void) {
  sem_init(&go, 0, 0);
  sem_init(&committed, 0, 0);
  for (int at = 0; at < MIDDLE; at++) middle[at] = 1;
  /* Both threads register before the reader begins: a thread alone with the engine
   * would run solo, and the writer's registration would wait for it. */
  pthread_barrier_init(&both_registered, NULL, 2);
  pthread_t writing;
  pthread_create(&writing, NULL, writer, NULL);
  stm_init_thread();
  pthread_barrier_wait(&both_registered);
  static int attempts, irrevocable;
  static stm_word_t total;
  stm_tx_attr_t attr = {{.id = 3}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  attempts++;
  irrevocable = stm_irrevocable();
  total = stm_load(&first);
  /* Past the bound (the old engine), stop overtaking so that the test ends. */
  if (!irrevocable && attempts <= BOUND) {
    sem_post(&go);
    sem_wait(&committed);
  }
  for (int at = 0; at < MIDDLE; at++) total += stm_load(&middle[at]);
  total += stm_load(&last);
  stm_commit();
  stm_exit_thread();
  stop = 1;
  sem_post(&go);
  pthread_join(writing, NULL);
  pthread_barrier_destroy(&both_registered);
  CHECK(attempts == BOUND, "overtaken: %d attempts (%d expected)", attempts, BOUND);
  CHECK(irrevocable, "overtaken: the last attempt was not irrevocable");
  CHECK(total == MIDDLE + 2 * (stm_word_t)(attempts - 1), "overtaken: total %lu",
        (unsigned long)total);
}

static void hinted(void) {
  sem_init(&go, 0, 0);
  sem_init(&committed, 0, 0);
  first = last = 0;
  stop = 0;
  only_last = 1;
  pthread_barrier_init(&both_registered, NULL, 2);
  pthread_t writing;
  pthread_create(&writing, NULL, writer, NULL);
  stm_init_thread();
  pthread_barrier_wait(&both_registered);
  static int attempts;
  static stm_word_t total;
  stm_tx_attr_t attr = {{.id = 4, .read_only = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  attempts++;
  total = stm_load(&first);
  if (attempts <= BOUND) {
    sem_post(&go);
    sem_wait(&committed);
  }
  total += stm_load(&last);
  stm_commit();
  CHECK(attempts == 2, "hinted: %d attempts (2 expected)", attempts);
  CHECK(total == (stm_word_t)attempts, "hinted: total %lu", (unsigned long)total);
  /* A write in a read-only transaction: run again recorded, written once. */
  static int runs;
  env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  runs++;
  stm_store(&first, stm_load(&first) + 5);
  stm_commit();
  CHECK(runs == 2, "hinted write: %d runs (2 expected)", runs);
  CHECK(first == 5, "hinted write: first %lu", (unsigned long)first);
  stm_exit_thread();
  stop = 1;
  sem_post(&go);
  pthread_join(writing, NULL);
  pthread_barrier_destroy(&both_registered);
}

int main(void) {
  stm_init();
  large();
  overtaken();
  hinted();
  stm_exit();
  return check_summary();
}
