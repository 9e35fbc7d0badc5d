/*
 * inline.c -- stm.h's inline accesses (LUTRA_INLINE, liblutra.a): a thread alone
 * with the engine runs its transactions solo, reading and writing memory inline
 * with an undo log in the thread's window; everything else goes to the library.
 *
 *  - the window is open exactly inside a solo transaction: closed on an
 *    unregistered thread, outside transactions, and while two threads are
 *    registered (instrumented transactions);
 *  - an explicit abort puts back every word written inline, also past the
 *    window's first capacity (the library grows it), newest first (a word written
 *    twice gets its value from before the transaction);
 *  - a misaligned store goes to the library and lands whole;
 *  - a bank, in rounds: one or two helper threads register, then they and the
 *    main thread transfer side by side (every transaction instrumented: windows
 *    closed) while the helpers audit; the helpers leave and the main thread
 *    transfers alone (every transaction solo: window open). The total never
 *    changes.
 *
 * Environment: INLINE_ROUNDS (bank rounds, default 200).
 */

#define LUTRA_INLINE
#include <lutra/stm.h>

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define WORDS 5000
#define ACCOUNTS 64
#define BALANCE 100

static stm_word_t words[WORDS];
static stm_word_t accounts[ACCOUNTS];

static int window_open(void) { return lutra_thread_undo_window.next != NULL; }

static void *window_of_unregistered(void *arg) {
  (void)arg;
  CHECK(!window_open(), "an unregistered thread's window is open");
  return NULL;
}

/* Writes count words (half of them twice), then aborts without retry: every
 * word comes back. */
static void abort_puts_back(long count) {
  long half = count / 2;
  for (long i = 0; i < count; i++)
    words[i] = (stm_word_t)i;
  stm_tx_attr_t attr = {{.id = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  if (!stm_aborted()) {
    CHECK(window_open(), "a solo transaction's window is closed");
    /* The upper half written twice, then the lower half once (the newest
     * entries are for words written once). */
    for (long i = half; i < count; i++)
      stm_store(&words[i], (stm_word_t)(i + 1000000));
    for (long i = half; i < count; i++)
      stm_store(&words[i], stm_load(&words[i]) + 1);
    for (long i = 0; i < half; i++)
      stm_store(&words[i], (stm_word_t)(i + 2000000));
    CHECK(words[count - 1] == (stm_word_t)(count - 1 + 1000001) &&
              words[half - 1] == (stm_word_t)(half - 1 + 2000000),
          "an inline store did not reach memory");
    stm_abort(STM_ABORT_NO_RETRY);
  }
  CHECK(stm_aborted(), "the transaction was not aborted");
  long wrong = 0;
  for (long i = 0; i < count; i++)
    wrong += words[i] != (stm_word_t)i;
  CHECK(wrong == 0, "%ld of %ld words not put back", wrong, count);
  CHECK(!window_open(), "the window stays open after the transaction");
}

static void misaligned_store(void) {
  static unsigned char bytes[32] __attribute__((aligned(16)));
  memset(bytes, 0, sizeof bytes);
  stm_word_t *odd = (stm_word_t *)(void *)(bytes + 3);
  stm_tx_attr_t attr = {{.id = 2}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  stm_store(odd, (stm_word_t)0x1122334455667788ULL);
  stm_commit();
  stm_word_t seen;
  memcpy(&seen, bytes + 3, sizeof seen);
  CHECK(seen == (stm_word_t)0x1122334455667788ULL, "misaligned store: %lx",
        (unsigned long)seen);
  CHECK(bytes[2] == 0 && bytes[11] == 0, "misaligned store spilled over");
}

/* One transfer; returns whether its window was open (it ran solo). */
static int transfer(unsigned *seed) {
  long from = rand_r(seed) % ACCOUNTS, to = rand_r(seed) % ACCOUNTS;
  int solo;
  stm_tx_attr_t attr = {{.id = 3}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  solo = window_open();
  stm_store(&accounts[from], stm_load(&accounts[from]) - 1);
  stm_store(&accounts[to], stm_load(&accounts[to]) + 1);
  stm_commit();
  return solo;
}

static long audit(void) {
  long total;
  stm_tx_attr_t attr = {{.id = 4, .read_only = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  total = 0;
  for (long i = 0; i < ACCOUNTS; i++)
    total += (long)stm_load(&accounts[i]);
  stm_commit();
  return total;
}

static int helpers_stop;
static int helpers_registered;
static long helper_transfers;

static void *helper(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  stm_init_thread();
  __atomic_fetch_add(&helpers_registered, 1, __ATOMIC_ACQ_REL);
  /* Registered beside the main thread: every transaction is instrumented. */
  long bad = 0, solo = 0;
  while (!__atomic_load_n(&helpers_stop, __ATOMIC_ACQUIRE)) {
    solo += transfer(&seed);
    bad += audit() != ACCOUNTS * BALANCE;
    __atomic_fetch_add(&helper_transfers, 1, __ATOMIC_RELAXED);
  }
  CHECK(solo == 0, "%ld transfers of a helper ran solo beside the main thread", solo);
  CHECK(bad == 0, "%ld audits saw another total", bad);
  stm_exit_thread();
  return NULL;
}

static void wait_until_at_least(long *counter, long value) {
  while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < value)
    sched_yield();
}

/* Rounds of: helpers register; main and helpers transfer side by side (all
 * instrumented), helpers audit; helpers leave; main transfers alone (solo). */
static void bank(long rounds) {
  for (long i = 0; i < ACCOUNTS; i++)
    accounts[i] = BALANCE;
  unsigned seed = 7;
  for (long round = 0; round < rounds; round++) {
    pthread_t threads[2];
    int helpers = 1 + (int)(round % 2);
    long solo = 0;
    __atomic_store_n(&helpers_stop, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&helpers_registered, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&helper_transfers, 0, __ATOMIC_RELEASE);
    for (int t = 0; t < helpers; t++)
      pthread_create(&threads[t], NULL, helper, (void *)(uintptr_t)(round * 2 + t));
    while (__atomic_load_n(&helpers_registered, __ATOMIC_ACQUIRE) < helpers)
      sched_yield();
    for (int i = 0; i < 100; i++)
      solo += transfer(&seed);
    wait_until_at_least(&helper_transfers, 50);
    __atomic_store_n(&helpers_stop, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < helpers; t++)
      pthread_join(threads[t], NULL);
    CHECK(solo == 0, "round %ld: %ld transfers ran solo beside helpers", round, solo);
    /* Alone again: solo. */
    solo = 0;
    for (int i = 0; i < 100; i++)
      solo += transfer(&seed);
    CHECK(solo == 100, "round %ld: %ld of 100 transfers alone ran solo", round, solo);
    CHECK(audit() == ACCOUNTS * BALANCE, "round %ld: total changed", round);
  }
}

int main(void) {
  pthread_t thread;
  pthread_create(&thread, NULL, window_of_unregistered, NULL);
  pthread_join(thread, NULL);
  stm_init();
  stm_init_thread();
  CHECK(!window_open(), "the window is open outside a transaction");
  abort_puts_back(10);
  abort_puts_back(WORDS); /* past the window's first capacity */
  misaligned_store();
  bank(env_long("INLINE_ROUNDS", 200));
  stm_exit_thread();
  stm_exit();
  return check_summary();
}
