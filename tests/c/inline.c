/*
 * inline.c -- stm.h's inline accesses (LUTRA_INLINE), built against liblutra.a
 * (inline) and against liblutra.so (inline-shared): a thread alone with the
 * engine runs its transactions solo, reading and writing memory inline with an
 * undo log in the thread's window; everything else goes to the library.
 *
 *  - the window is open exactly inside a solo transaction: closed on an
 *    unregistered thread, outside transactions, and while two threads are
 *    registered (instrumented transactions);
 *  - an explicit abort puts back every word written inline, also past the
 *    window's first capacity (the library grows it), newest first (a word written
 *    twice gets its value from before the transaction);
 *  - a misaligned store goes to the library, which refuses it (LUTRA_EINVAL);
 *  - an attempt that aborts and is retried: its inline writes are put back
 *    before the next attempt runs, and the next transaction is solo again;
 *  - the window is the thread's own: the main thread unregisters (its window
 *    closes, with the state's window moved back into the engine) and a second
 *    thread, alone with the engine, runs solo transactions in its window, whose
 *    aborts put back its words, while the main thread's window stays closed;
 *    the main thread registers again and its window opens in solo transactions;
 *  - a thread that ends inside a solo transaction: its state is dropped with
 *    the window moved back into the engine, and the rollback puts its words
 *    back;
 *  - a task of the scheduler, even alone with the engine, has its window closed
 *    (the worker's is never placed): its accesses go to the library, and an
 *    abort puts its words back;
 *  - a bank, in rounds: one or two helper threads register, then they and the
 *    main thread transfer side by side (every transaction instrumented: windows
 *    closed) while the helpers audit; the helpers leave and the main thread
 *    transfers alone (every transaction solo: window open). The total never
 *    changes.
 *
 * Environment: INLINE_ROUNDS (bank rounds, default 200).
 */

#define LUTRA_INLINE
#include <lutra/sched.h>
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

#ifndef LUTRA_UNDO_WINDOW
#error "stm.h offers no inline accesses with this compiler"
#endif

static int window_open(void) { return LUTRA_UNDO_WINDOW.next != NULL; }

static void *window_of_unregistered(void *arg) {
  (void)arg;
  CHECK(!window_open(), "an unregistered thread's window is open");
  return NULL;
}

/* Writes count words (half of them twice), then aborts without retry: every
 * word comes back. solo: whether the transaction runs solo (its window open). */
static void abort_puts_back(long count, int solo) {
  long half = count / 2;
  for (long i = 0; i < count; i++)
    words[i] = (stm_word_t)i;
  stm_tx_attr_t attr = {{.id = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  if (!stm_aborted()) {
    CHECK(window_open() == solo, "a transaction's window is %s",
          solo ? "closed" : "open");
    /* The upper half written twice, then the lower half once (the newest
     * entries are for words written once). */
    for (long i = half; i < count; i++)
      stm_store(&words[i], (stm_word_t)(i + 1000000));
    for (long i = half; i < count; i++)
      stm_store(&words[i], stm_load(&words[i]) + 1);
    for (long i = 0; i < half; i++)
      stm_store(&words[i], (stm_word_t)(i + 2000000));
    /* Solo, the stores are in memory; instrumented, in the write set. */
    CHECK(stm_load(&words[count - 1]) == (stm_word_t)(count - 1 + 1000001) &&
              stm_load(&words[half - 1]) == (stm_word_t)(half - 1 + 2000000),
          "a store is not seen by the transaction");
    CHECK(!solo || (words[count - 1] == (stm_word_t)(count - 1 + 1000001) &&
                    words[half - 1] == (stm_word_t)(half - 1 + 2000000)),
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
  lutra_clear_error();
  stm_store(odd, (stm_word_t)0x1122334455667788ULL);
  int code = lutra_last_error_code();
  stm_commit();
  int untouched = 1;
  for (size_t i = 0; i < sizeof bytes; i++) untouched &= bytes[i] == 0;
  /* The inline store leaves a misaligned address to the library, which refuses
   * it as stm_store does: nothing written, neighbours included. */
  CHECK(code == LUTRA_EINVAL, "misaligned store refused: %d", code);
  CHECK(untouched, "misaligned store wrote nothing");
}

/* One transfer; returns whether its window was open (it ran solo). */
static int transfer_runs_solo(unsigned *seed) {
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

/* Writes words[0..4) inline, aborts the first attempt (retried), and checks in
 * the second that the first one's writes were put back; then commits. */
static void retried_attempt(void) {
  for (long i = 0; i < 4; i++)
    words[i] = (stm_word_t)i;
  volatile int attempts = 0;
  stm_word_t seen[4];
  stm_tx_attr_t attr = {{.id = 5}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  attempts++;
  for (long i = 0; i < 4; i++)
    seen[i] = stm_load(&words[i]);
  for (long i = 0; i < 4; i++)
    stm_store(&words[i], seen[i] + 100);
  if (attempts == 1) {
    CHECK(window_open(), "the first attempt's window is closed");
    stm_abort(0);
  }
  stm_commit();
  CHECK(attempts == 2, "%d attempts instead of 2", attempts);
  for (long i = 0; i < 4; i++)
    CHECK(seen[i] == (stm_word_t)i && words[i] == (stm_word_t)(i + 100),
          "word %ld: saw %lu, holds %lu after a retried attempt", i,
          (unsigned long)seen[i], (unsigned long)words[i]);
  CHECK(!window_open(), "the window stays open after a retried transaction");
  unsigned seed = 1;
  for (long i = 0; i < ACCOUNTS; i++)
    accounts[i] = BALANCE;
  CHECK(transfer_runs_solo(&seed), "the transaction after a retry is not solo");
}

/* A second thread alone with the engine: solo in its own window. */
static void *second_thread(void *arg) {
  (void)arg;
  CHECK(!window_open(), "an unregistered second thread's window is open");
  stm_init_thread();
  CHECK(!window_open(), "the second thread's window is open outside a transaction");
  abort_puts_back(10, 1);
  abort_puts_back(WORDS, 1);
  unsigned seed = 2;
  long solo = 0;
  for (int i = 0; i < 100; i++)
    solo += transfer_runs_solo(&seed);
  CHECK(solo == 100, "%ld of 100 transfers of the second thread ran solo", solo);
  CHECK(audit() == ACCOUNTS * BALANCE, "the second thread changed the total");
  stm_exit_thread();
  CHECK(!window_open(), "the second thread's window stays open once it left");
  return NULL;
}

static void window_per_thread(void) {
  stm_exit_thread();
  CHECK(!window_open(), "the window stays open after stm_exit_thread");
  pthread_t thread;
  pthread_create(&thread, NULL, second_thread, NULL);
  pthread_join(thread, NULL);
  CHECK(!window_open(), "the unregistered main thread's window opened");
  stm_init_thread();
  abort_puts_back(10, 1);
  unsigned seed = 3;
  CHECK(transfer_runs_solo(&seed), "the re-registered main thread is not solo");
}

/* Registers, writes words[0..WORDS) inline in a solo transaction (past the
 * window's first capacity) and returns inside it. */
static void *ends_inside(void *arg) {
  (void)arg;
  stm_init_thread();
  stm_tx_attr_t attr = {{.id = 7}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  CHECK(window_open(), "the ending thread's transaction is not solo");
  for (long i = 0; i < WORDS; i++)
    stm_store(&words[i], (stm_word_t)(i + 3000000));
  return NULL;
}

static void thread_ends_inside(void) {
  stm_exit_thread();
  for (long i = 0; i < WORDS; i++)
    words[i] = (stm_word_t)i;
  pthread_t thread;
  pthread_create(&thread, NULL, ends_inside, NULL);
  pthread_join(thread, NULL);
  long wrong = 0;
  for (long i = 0; i < WORDS; i++)
    wrong += words[i] != (stm_word_t)i;
  CHECK(wrong == 0, "%ld of %d words not put back when a thread ended inside",
        wrong, WORDS);
  stm_init_thread();
}

/* A task, alone with the engine: its window stays closed, its accesses go to
 * the library, its abort puts its words back. */
static void *task(void *arg) {
  (void)arg;
  stm_init_thread();
  abort_puts_back(10, 0);
  unsigned seed = 4;
  CHECK(!transfer_runs_solo(&seed), "a task's transfer had its window open");
  stm_exit_thread();
  return NULL;
}

static void window_of_a_task(void) {
  stm_exit_thread();
  CHECK(sched_init(1) >= 1, "sched_init");
  CHECK(sched_start(task, NULL) > 0, "sched_start");
  CHECK(sched_wait() == LUTRA_OK, "sched_wait");
  CHECK(sched_shutdown() == LUTRA_OK, "sched_shutdown");
  long total = 0;
  for (long i = 0; i < ACCOUNTS; i++)
    total += (long)accounts[i];
  CHECK(total == ACCOUNTS * BALANCE, "a task changed the total");
  stm_init_thread();
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
    solo += transfer_runs_solo(&seed);
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
      solo += transfer_runs_solo(&seed);
    wait_until_at_least(&helper_transfers, 50);
    __atomic_store_n(&helpers_stop, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < helpers; t++)
      pthread_join(threads[t], NULL);
    CHECK(solo == 0, "round %ld: %ld transfers ran solo beside helpers", round, solo);
    /* Alone again: solo. */
    solo = 0;
    for (int i = 0; i < 100; i++)
      solo += transfer_runs_solo(&seed);
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
  abort_puts_back(10, 1);
  abort_puts_back(WORDS, 1); /* past the window's first capacity */
  misaligned_store();
  retried_attempt();
  window_per_thread();
  thread_ends_inside();
  window_of_a_task();
  bank(env_long("INLINE_ROUNDS", 200));
  stm_exit_thread();
  stm_exit();
  return check_summary();
}
