/*
 * bank.c -- tinySTM's bank test against Lutra: threads move money between
 * accounts while others audit the total inside read-only transactions. The total
 * never changes, so an audit that sees another total, or a final total that
 * differs, fails the test. Written as a tinySTM program: it includes "stm.h" and
 * builds with -I include/lutra.
 *
 * Environment: LUTRA_STM_DESIGN, LUTRA_STM_CM (read by stm_init), BANK_THREADS,
 * BANK_ACCOUNTS, BANK_OPS (per thread), BANK_AUDIT_PCT.
 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mod_stats.h"
#include "stm.h"
#include "tx_macros.h"


#define INITIAL_BALANCE 1000

typedef struct account {
  long number;
  long balance;
} account_t;

typedef struct bank {
  account_t *accounts;
  long size;
} bank_t;

typedef struct thread_data {
  bank_t *bank;
  unsigned int seed;
  long ops;
  int audit_pct;
  long expected_total;
  unsigned long transfers;
  unsigned long audits;
  unsigned long bad_audits;
  unsigned long nb_commits;
  unsigned long nb_aborts;
  unsigned long max_retries;
  pthread_barrier_t *barrier;
} thread_data_t;

static void transfer(account_t *src, account_t *dst, long amount) {
  long balance;
  START(1, RW);
  balance = (long)LOAD(&src->balance);
  STORE(&src->balance, balance - amount);
  balance = (long)LOAD(&dst->balance);
  STORE(&dst->balance, balance + amount);
  COMMIT;
}

/* The sum of every balance, read in one read-only transaction. */
static long total(bank_t *bank) {
  long sum = 0;
  START(2, RO);
  sum = 0;
  for (long i = 0; i < bank->size; i++)
    sum += (long)LOAD(&bank->accounts[i].balance);
  COMMIT;
  return sum;
}

static void *worker(void *arg) {
  thread_data_t *td = arg;
  bank_t *bank = td->bank;
  stm_init_thread();
  pthread_barrier_wait(td->barrier);
  for (long op = 0; op < td->ops; op++) {
    if ((int)(rand_r(&td->seed) % 100) < td->audit_pct) {
      if (total(bank) != td->expected_total)
        td->bad_audits++;
      td->audits++;
    } else {
      long src = rand_r(&td->seed) % bank->size;
      long dst = rand_r(&td->seed) % bank->size;
      if (dst == src)
        dst = (src + 1) % bank->size;
      transfer(&bank->accounts[src], &bank->accounts[dst],
               1 + rand_r(&td->seed) % 10);
      td->transfers++;
    }
  }
  stm_get_stats("nb_commits", &td->nb_commits);
  stm_get_stats("nb_aborts", &td->nb_aborts);
  stm_get_stats("max_retries", &td->max_retries);
  if (getenv("BANK_VERBOSE") != NULL) {
    static const char *const reasons[] = {
        "nb_aborts_locked_read", "nb_aborts_locked_write",
        "nb_aborts_validate_read", "nb_aborts_validate_write",
        "nb_aborts_validate_commit", "nb_aborts_killed",
        "nb_aborts_irrevocable", "nb_aborts_other"};
    char line[512];
    int used = snprintf(line, sizeof line, "thread:");
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
      unsigned long count = 0;
      stm_get_stats(reasons[i], &count);
      used += snprintf(line + used, sizeof line - used, " %s=%lu",
                       reasons[i] + 10, count);
    }
    printf("%s\n", line);
  }
  stm_exit_thread();
  return NULL;
}

int main(void) {
  long nb_threads = env_long("BANK_THREADS", 4);
  long nb_accounts = env_long("BANK_ACCOUNTS", 32);
  long ops = env_long("BANK_OPS", 20000);
  int audit_pct = (int)env_long("BANK_AUDIT_PCT", 10);
  const char *design = NULL;
  const char *cm = NULL;

  stm_init();
  mod_stats_init();
  CHECK(stm_get_parameter("design", &design) == 1, "design: %s",
        lutra_last_error());
  CHECK(stm_get_parameter("contention_manager", &cm) == 1, "cm: %s",
        lutra_last_error());
  if (design == NULL || cm == NULL)
    return check_summary();
  const char *wanted_design = getenv("LUTRA_STM_DESIGN");
  const char *wanted_cm = getenv("LUTRA_STM_CM");
  CHECK(wanted_design == NULL || strcmp(wanted_design, design) == 0,
        "design %s, wanted %s", design, wanted_design);
  CHECK(wanted_cm == NULL || strcmp(wanted_cm, cm) == 0, "cm %s, wanted %s", cm,
        wanted_cm);

  bank_t bank = {calloc(nb_accounts, sizeof(account_t)), nb_accounts};
  for (long i = 0; i < nb_accounts; i++) {
    bank.accounts[i].number = i;
    bank.accounts[i].balance = INITIAL_BALANCE;
  }
  long expected = nb_accounts * INITIAL_BALANCE;

  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)nb_threads);
  thread_data_t *data = calloc(nb_threads, sizeof(thread_data_t));
  pthread_t *threads = calloc(nb_threads, sizeof(pthread_t));
  for (long t = 0; t < nb_threads; t++) {
    data[t] = (thread_data_t){.bank = &bank,
                              .seed = (unsigned)(t + 1) * 7919u,
                              .ops = ops,
                              .audit_pct = audit_pct,
                              .expected_total = expected,
                              .barrier = &barrier};
    pthread_create(&threads[t], NULL, worker, &data[t]);
  }
  unsigned long transfers = 0, audits = 0, bad = 0, commits = 0, aborts = 0;
  unsigned long max_retries = 0;
  for (long t = 0; t < nb_threads; t++) {
    pthread_join(threads[t], NULL);
    transfers += data[t].transfers;
    audits += data[t].audits;
    bad += data[t].bad_audits;
    commits += data[t].nb_commits;
    aborts += data[t].nb_aborts;
    if (data[t].max_retries > max_retries)
      max_retries = data[t].max_retries;
  }

  CHECK(bad == 0, "%lu of %lu audits saw a wrong total", bad, audits);
  CHECK(transfers + audits == (unsigned long)(nb_threads * ops),
        "%lu operations done", transfers + audits);
  CHECK(commits == transfers + audits, "threads counted %lu commits for %lu",
        commits, transfers + audits);

  long sum = 0;
  for (long i = 0; i < nb_accounts; i++)
    sum += bank.accounts[i].balance;
  CHECK(sum == expected, "final total %ld, expected %ld", sum, expected);

  stm_init_thread();
  CHECK(total(&bank) == expected, "transactional final total");
  stm_exit_thread();

  unsigned long global_commits = 0, global_aborts = 0, global_max = 0;
  CHECK(stm_get_global_stats("global_nb_commits", &global_commits) == 1,
        "global_nb_commits");
  CHECK(stm_get_global_stats("global_nb_aborts", &global_aborts) == 1,
        "global_nb_aborts");
  CHECK(stm_get_global_stats("global_max_retries", &global_max) == 1,
        "global_max_retries");
  CHECK(global_commits == commits + 1, "global commits %lu, threads %lu + 1",
        global_commits, commits);
  CHECK(global_aborts == aborts, "global aborts %lu, threads %lu", global_aborts,
        aborts);
  CHECK(global_max >= max_retries, "global max retries %lu < %lu", global_max,
        max_retries);

  printf("bank %s/%s: %ld threads, %lu transfers, %lu audits, %lu aborts, "
         "max retries %lu\n",
         design, cm, nb_threads, transfers, audits, global_aborts, global_max);
  stm_exit();
  CHECK(lutra_last_error_code() == LUTRA_OK, "stm_exit: %s", lutra_last_error());
  pthread_barrier_destroy(&barrier);
  free(threads);
  free(data);
  free(bank.accounts);
  return check_summary();
}
