/*
 * sched_bank.c -- Lutra's scheduler from C (lutra/sched.h): tinySTM's bank run
 * by many tasks on a few workers, written as a threads + tinySTM program whose
 * pthread_create was replaced by sched_start. Built as a tinySTM program
 * (-I include/lutra, "stm.h", "sched.h"). Checks:
 *  - the misuse codes of the sched_ functions: before sched_init, outside tasks,
 *    inside transactions, from tasks;
 *  - each task is a thread for stm.h: its own handle, statistics, last error;
 *  - placement: task k runs on worker k mod workers and never leaves it;
 *  - barriers between phases (one serial task per round), resizing, a plain
 *    thread as a party;
 *  - sched_setid / sched_switch / sched_yield between transactions;
 *  - per-task jump buffers: an irrevocable transaction on worker 0 holds back the
 *    commits of worker 1's tasks, so that many of them are suspended inside
 *    their transactions at once and later restart, each jumping back to its own
 *    sigsetjmp (a jump buffer per worker thread would send them into each other's
 *    frames);
 *  - conservation: audits in read-only transactions, the final total; a few
 *    migratable tasks on top;
 *  - every task unregistered once sched_wait returns (stm_exit succeeds), and the
 *    scheduler restarts after sched_shutdown.
 *
 * Environment: LUTRA_STM_DESIGN, LUTRA_STM_CM (read by stm_init), SCHED_TASKS
 * (64), SCHED_WORKERS (2), BANK_ACCOUNTS (16), BANK_OPS (per task, 300).
 */

#include <pthread.h> /* finds Lutra's sched.h for <sched.h>: must still build */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "sched.h"
#include "stm.h"
#include "tx_macros.h"


#define INITIAL_BALANCE 1000
#define MAX_WORKERS 64
#define ID_TRANSFER 1
#define ID_AUDIT 2
#define ID_MISUSE 3
#define ID_HOLD 4
#define ID_GATE 5

typedef struct account {
  long number;
  long balance;
} account_t;

typedef struct task_data {
  long index;
  unsigned int seed;
  int64_t id;
  int worker;
  int moved;
  int serial;
  int holder;
  int updater;
  struct stm_tx *handle;
  unsigned long transactions;
  unsigned long transfers;
  unsigned long audits;
  unsigned long bad_audits;
  unsigned long commits;
  unsigned long restarts;
} task_data_t;

static account_t *accounts;
static long nb_accounts;
static long expected_total;
static long ops;
static int nb_workers;

/* The gate phase (see the header). */
static stm_word_t hot;
static int holding;
static int released;
static int opened;
static int open_now[MAX_WORKERS];
static int open_max[MAX_WORKERS];

static void transfer(long src, long dst, long amount) {
  long balance;
  START(ID_TRANSFER, RW);
  balance = (long)LOAD(&accounts[src].balance);
  STORE(&accounts[src].balance, balance - amount);
  balance = (long)LOAD(&accounts[dst].balance);
  STORE(&accounts[dst].balance, balance + amount);
  COMMIT;
}

static long total(void) {
  long sum = 0;
  START(ID_AUDIT, RO);
  sum = 0;
  for (long i = 0; i < nb_accounts; i++)
    sum += (long)LOAD(&accounts[i].balance);
  COMMIT;
  return sum;
}

/* The worker must not change for a task of sched_start. */
static void check_worker(task_data_t *td) {
  if (sched_worker() != td->worker)
    td->moved++;
}

/* Waits at the barrier; returns whether this task was the serial one. */
static int round_end(task_data_t *td) {
  int rc = sched_barrier_wait();
  CHECK(rc == 0 || rc == SCHED_BARRIER_SERIAL, "sched_barrier_wait: %d", rc);
  check_worker(td);
  if (rc != SCHED_BARRIER_SERIAL)
    return 0;
  td->serial++;
  return 1;
}

/* What a task may not do inside a transaction, or at all. */
static void *nothing(void *arg) { return arg; }

static void misuse_in_task(task_data_t *td) {
  START(ID_MISUSE, RW);
  CHECK(sched_yield() == LUTRA_EINTX, "sched_yield in a transaction");
  CHECK(sched_barrier_wait() == LUTRA_EINTX, "barrier in a transaction");
  CHECK(sched_start(nothing, NULL) == LUTRA_EINTX, "start in a transaction");
  CHECK(sched_switch(ID_TRANSFER) == LUTRA_EINTX, "switch in a transaction");
  CHECK(sched_setid(ID_MISUSE) == LUTRA_OK, "setid in a transaction");
  COMMIT;
  td->transactions++;
  CHECK(sched_wait() == LUTRA_EINTASK, "sched_wait from a task");
  CHECK(sched_shutdown() == LUTRA_EINTASK, "sched_shutdown from a task");
  CHECK(sched_init(1) == LUTRA_EINTASK, "sched_init from a task");
}

/* The last error belongs to the task: other tasks of the worker set theirs
 * while this one yields. */
static void last_error_in_task(task_data_t *td) {
  char name[32];
  const char *value = NULL;
  snprintf(name, sizeof name, "nothing-%ld", td->index);
  CHECK(stm_get_parameter(name, &value) == 0, "unknown parameter");
  sched_yield();
  CHECK(strstr(lutra_last_error(), name) != NULL,
        "task %ld's last error is \"%s\"", td->index, lutra_last_error());
}

static void bank_phase(task_data_t *td) {
  for (long op = 0; op < ops; op++) {
    if (op % 8 == 7) {
      CHECK(sched_yield() == LUTRA_OK, "sched_yield");
      check_worker(td);
    }
    if (rand_r(&td->seed) % 100 < 10) {
      sched_setid(ID_AUDIT);
      if (op % 4 == 1)
        sched_switch(ID_AUDIT);
      if (total() != expected_total)
        td->bad_audits++;
      td->audits++;
    } else {
      long src = rand_r(&td->seed) % nb_accounts;
      long dst = rand_r(&td->seed) % nb_accounts;
      if (dst == src)
        dst = (src + 1) % nb_accounts;
      sched_setid(ID_TRANSFER);
      if (op % 4 == 3)
        sched_switch(ID_TRANSFER);
      transfer(src, dst, 1 + rand_r(&td->seed) % 10);
      td->transfers++;
    }
    td->transactions++;
  }
  check_worker(td);
}

static void raise_max(int *max, int value) {
  int seen = __atomic_load_n(max, __ATOMIC_RELAXED);
  while (value > seen &&
         !__atomic_compare_exchange_n(max, &seen, value, 0, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
}

/* Task 0: an irrevocable transaction that keeps the commit gate closed until
 * main releases it (no updater can commit meanwhile). */
static void hold_gate(task_data_t *td) {
  long value;
  START(ID_HOLD, RW);
  value = (long)LOAD(&hot);
  stm_set_irrevocable(1);
  __atomic_store_n(&holding, 1, __ATOMIC_SEQ_CST);
  while (!__atomic_load_n(&released, __ATOMIC_ACQUIRE)) {
    struct timespec pause = {0, 200000};
    nanosleep(&pause, NULL);
  }
  STORE(&hot, value + 1);
  COMMIT;
  td->transactions++;
}

/* Worker 1's tasks: increment hot while the gate is closed. Each commit fails,
 * the task waits (suspended inside its transaction) and the next one starts its
 * own; all restart, each from its own sigsetjmp. */
static void update_through_gate(task_data_t *td) {
  volatile int first = 1;
  long value;
  while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE))
    sched_yield();
  START(ID_GATE, RW);
  if (first) {
    first = 0;
    raise_max(&open_max[td->worker],
              __atomic_add_fetch(&open_now[td->worker], 1, __ATOMIC_SEQ_CST));
    __atomic_add_fetch(&opened, 1, __ATOMIC_SEQ_CST);
  } else {
    td->restarts++;
  }
  CHECK(sched_self() == td->id, "task %ld runs as task %lld after a restart",
        td->index, (long long)sched_self());
  value = (long)LOAD(&hot);
  STORE(&hot, value + 1);
  COMMIT;
  __atomic_sub_fetch(&open_now[td->worker], 1, __ATOMIC_SEQ_CST);
  td->transactions++;
}

static void *work(void *arg) {
  task_data_t *td = arg;
  td->handle = stm_init_thread();
  td->id = sched_self();
  td->worker = sched_worker();
  misuse_in_task(td);
  round_end(td); /* every task is registered */
  last_error_in_task(td);
  bank_phase(td);
  if (round_end(td)) {
    long sum = 0; /* no transaction writes the accounts any more */
    for (long i = 0; i < nb_accounts; i++)
      sum += accounts[i].balance;
    CHECK(sum == expected_total, "total after the bank phase: %ld", sum);
  }
  if (td->holder)
    hold_gate(td);
  else if (td->updater)
    update_through_gate(td);
  round_end(td);
  stm_get_stats("nb_commits", &td->commits);
  if (td->index % 2 == 0)
    stm_exit_thread(); /* the others are unregistered when they return */
  return NULL;
}

/* Main releases the gate once every updater has opened its transaction. */
static void release_gate(int updaters) {
  struct timespec pause = {0, 1000000};
  int waited = 0;
  while (__atomic_load_n(&opened, __ATOMIC_SEQ_CST) < updaters &&
         waited++ < 10000)
    nanosleep(&pause, NULL);
  int seen = __atomic_load_n(&opened, __ATOMIC_SEQ_CST);
  CHECK(seen == updaters, "%d of %d updaters opened a transaction", seen,
        updaters);
  nanosleep(&pause, NULL);
  __atomic_store_n(&released, 1, __ATOMIC_RELEASE);
}

/* Migratable tasks: transfers with yields; the total must hold. */
static void *roam(void *arg) {
  unsigned int seed = (unsigned int)(uintptr_t)arg;
  stm_init_thread();
  for (int op = 0; op < 50; op++) {
    long src = rand_r(&seed) % nb_accounts;
    transfer(src, (src + 1) % nb_accounts, 1);
    sched_yield();
  }
  stm_exit_thread();
  return NULL;
}

/* A task that waits at a barrier of 2, for main to observe and join. */
static void *wait_at_barrier(void *arg) {
  *(int *)arg = sched_barrier_wait();
  return NULL;
}

static void misuse_before_init(void) {
  CHECK(sched_start(work, NULL) == LUTRA_ENOINIT, "start before init");
  CHECK(sched_barrier_init(4) == LUTRA_ENOINIT, "barrier_init before init");
  CHECK(sched_barrier_wait() == LUTRA_ENOINIT, "barrier_wait before init");
  CHECK(sched_wait() == LUTRA_ENOINIT, "wait before init");
  CHECK(sched_shutdown() == LUTRA_ENOINIT, "shutdown before init");
  CHECK(strstr(lutra_last_error(), "sched_init") != NULL, "message: %s",
        lutra_last_error());
  CHECK(sched_setid(1) == LUTRA_ENOTASK, "setid outside tasks");
  CHECK(sched_self() == LUTRA_ENOTASK, "self outside tasks");
  CHECK(sched_worker() == LUTRA_ENOTASK, "worker outside tasks");
  CHECK(sched_yield() == LUTRA_OK, "yield outside tasks yields the thread");
  CHECK(sched_switch(1) == LUTRA_OK, "switch outside tasks yields the thread");
  CHECK(sched_init(-1) == LUTRA_EINVAL, "negative workers");
}

static void misuse_after_init(void) {
  CHECK(sched_init(2) == LUTRA_EALREADY, "init twice");
  CHECK(sched_start(NULL, NULL) == LUTRA_EINVAL, "NULL fn");
  CHECK(sched_barrier_wait() == LUTRA_EINVAL, "barrier without a size");
  CHECK(sched_barrier_init(0) == LUTRA_EINVAL, "barrier of 0");
  stm_init_thread();
  START(ID_MISUSE, RW);
  CHECK(sched_start(work, NULL) == LUTRA_EINTX, "start in a transaction");
  CHECK(sched_wait() == LUTRA_EINTX, "wait in a transaction");
  CHECK(sched_barrier_init(2) == LUTRA_EINTX, "barrier_init in a transaction");
  COMMIT;
  stm_exit_thread();
}

/* Resizing is refused while a task waits; main then completes the round. */
static void barrier_resize(void) {
  int result = -100;
  struct timespec pause = {0, 1000000};
  CHECK(sched_barrier_init(2) == LUTRA_OK, "resize between rounds");
  CHECK(sched_start(wait_at_barrier, &result) > 0, "start the waiter");
  int busy = 0;
  for (int i = 0; i < 10000 && !busy; i++) {
    busy = sched_barrier_init(2) == LUTRA_EBUSY; /* same size: no change */
    if (!busy)
      nanosleep(&pause, NULL);
  }
  CHECK(busy, "resizing while a task waits: LUTRA_EBUSY");
  int mine = sched_barrier_wait();
  CHECK(sched_wait() == LUTRA_OK, "sched_wait");
  CHECK((mine == SCHED_BARRIER_SERIAL) + (result == SCHED_BARRIER_SERIAL) == 1 &&
            mine >= 0 && result >= 0,
        "one serial caller: main %d, task %d", mine, result);
}

int main(void) {
  long nb_tasks = env_long("SCHED_TASKS", 64);
  nb_accounts = env_long("BANK_ACCOUNTS", 16);
  ops = env_long("BANK_OPS", 300);
  expected_total = nb_accounts * INITIAL_BALANCE;
  accounts = calloc(nb_accounts, sizeof(account_t));
  for (long i = 0; i < nb_accounts; i++)
    accounts[i] = (account_t){i, INITIAL_BALANCE};

  stm_init();
  misuse_before_init();
  nb_workers = sched_init((int)env_long("SCHED_WORKERS", 2));
  CHECK(nb_workers >= 1 && nb_workers <= MAX_WORKERS, "sched_init: %d",
        nb_workers);
  if (nb_workers < 1)
    return check_summary();
  misuse_after_init();
  CHECK(sched_barrier_init((unsigned)nb_tasks) == LUTRA_OK, "barrier_init");

  task_data_t *data = calloc(nb_tasks, sizeof(task_data_t));
  int updaters = 0;
  for (long t = 0; t < nb_tasks; t++) {
    data[t] = (task_data_t){.index = t, .seed = (unsigned)(t + 1) * 7919u};
    if (nb_workers >= 2) {
      data[t].holder = t == 0;
      data[t].updater = t % nb_workers == 1;
      updaters += data[t].updater;
    }
  }
  for (long t = 0; t < nb_tasks; t++) {
    int64_t id = sched_start(work, &data[t]);
    CHECK(id > 0, "sched_start: %lld", (long long)id);
  }
  if (nb_workers >= 2)
    release_gate(updaters);
  else
    printf("one worker: gate phase skipped\n");
  CHECK(sched_wait() == LUTRA_OK, "sched_wait");

  unsigned long transfers = 0, audits = 0, bad = 0, restarted = 0;
  int serial = 0;
  for (long t = 0; t < nb_tasks; t++) {
    task_data_t *td = &data[t];
    transfers += td->transfers;
    audits += td->audits;
    bad += td->bad_audits;
    serial += td->serial;
    restarted += td->restarts > 0;
    CHECK(td->handle != NULL, "task %ld registered", t);
    CHECK(td->id > 0, "task %ld id %lld", t, (long long)td->id);
    CHECK(td->worker == t % nb_workers, "task %ld on worker %d", t, td->worker);
    CHECK(td->moved == 0, "task %ld moved %d times", t, td->moved);
    CHECK(td->commits == td->transactions,
          "task %ld counted %lu commits for %lu transactions", t, td->commits,
          td->transactions);
    for (long u = 0; u < t; u++) {
      CHECK(data[u].handle != td->handle, "tasks %ld and %ld share a handle", u,
            t);
      CHECK(data[u].id != td->id, "tasks %ld and %ld share an id", u, t);
    }
  }
  CHECK(bad == 0, "%lu of %lu audits saw a wrong total", bad, audits);
  CHECK(transfers + audits == (unsigned long)(nb_tasks * ops),
        "%lu operations", transfers + audits);
  CHECK(serial == 3, "%d serial arrivals for 3 rounds", serial);
  if (nb_workers >= 2) {
    CHECK(hot == (stm_word_t)updaters + 1, "hot %lu, expected %d",
          (unsigned long)hot, updaters + 1);
    CHECK(open_max[1] >= 2,
          "at most %d transactions open at once on worker 1", open_max[1]);
    CHECK(restarted + 1 >= (unsigned long)updaters,
          "%lu of %d updaters restarted", restarted, updaters);
  }

  barrier_resize();
  for (int t = 0; t < 8; t++)
    CHECK(sched_start_migratable(roam, (void *)(uintptr_t)(t + 1)) > 0,
          "sched_start_migratable");
  CHECK(sched_wait() == LUTRA_OK, "sched_wait");

  long sum = 0;
  for (long i = 0; i < nb_accounts; i++)
    sum += accounts[i].balance;
  CHECK(sum == expected_total, "final total %ld, expected %ld", sum,
        expected_total);
  stm_init_thread();
  CHECK(total() == expected_total, "transactional final total");
  stm_exit_thread();

  CHECK(sched_shutdown() == LUTRA_OK, "sched_shutdown: %s", lutra_last_error());
  CHECK(sched_start(work, NULL) == LUTRA_ENOINIT, "start after shutdown");
  lutra_clear_error();
  stm_exit();
  CHECK(lutra_last_error_code() == LUTRA_OK, "stm_exit: %s", lutra_last_error());
  CHECK(sched_init(1) == 1, "sched_init after sched_shutdown");
  CHECK(sched_shutdown() == LUTRA_OK, "second shutdown");

  printf("sched_bank: %ld tasks on %d workers, %lu transfers, %lu audits, "
         "%d gate updaters (%lu restarted, at most %d open at once)\n",
         nb_tasks, nb_workers, transfers, audits, updaters, restarted,
         nb_workers >= 2 ? open_max[1] : 0);
  free(data);
  free(accounts);
  return check_summary();
}
