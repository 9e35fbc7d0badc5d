/*
 * config.c -- Lutra's configuration and statistics reach a -fgnu-tm program
 * (Lutra only): the design and contention manager chosen by LUTRA_STM_DESIGN and
 * LUTRA_STM_CM are the ones stm_get_parameter reports, and with LUTRA_STM_STATS=1
 * stm_get_stats counts the program's __transaction_atomic blocks: per thread
 * (commits, explicit aborts from __transaction_cancel) and for all threads.
 *
 * Usage: config THREADS; run with LUTRA_STM_DESIGN, LUTRA_STM_CM and
 * LUTRA_STM_STATS=1 set.
 */

#include <string.h>

#include <lutra/stm.h>

#include "harness.h"

#define ROUNDS 1000 /* transactions per thread */
#define CANCELS 10  /* of which cancelled, on the main thread */

static long counter;

static void *increment(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    __transaction_atomic { counter++; }
  }
  unsigned long commits = 0;
  CHECK(stm_get_stats("nb_commits", &commits) == 1, "nb_commits on a worker thread");
  CHECK(commits == ROUNDS, "a worker thread counted %lu commits, ran %d", commits, ROUNDS);
  return NULL;
}

static void expect_parameter(const char *name, const char *variable) {
  const char *wanted = getenv(variable);
  const char *value = NULL;
  CHECK(wanted != NULL, "%s must be set", variable);
  CHECK(stm_get_parameter(name, &value) == 1, "stm_get_parameter(\"%s\")", name);
  CHECK(value != NULL && wanted != NULL && strcmp(value, wanted) == 0,
        "%s is \"%s\", %s asked \"%s\"", name, value ? value : "(null)", variable,
        wanted ? wanted : "(null)");
}

int main(int argc, char **argv) {
  int threads = thread_count(argc, argv);

  /* The first transaction starts the engine and registers the thread. */
  for (int i = 0; i < ROUNDS; i++) {
    __transaction_atomic {
      counter++;
      if (i < CANCELS) __transaction_cancel;
    }
  }
  expect_parameter("design", "LUTRA_STM_DESIGN");
  expect_parameter("contention_manager", "LUTRA_STM_CM");

  unsigned long commits = 0, explicit_aborts = 0, aborts = 0;
  CHECK(stm_get_stats("nb_commits", &commits) == 1, "nb_commits");
  CHECK(stm_get_stats("nb_aborts_explicit", &explicit_aborts) == 1, "nb_aborts_explicit");
  CHECK(stm_get_stats("nb_aborts", &aborts) == 1, "nb_aborts");
  CHECK(commits == ROUNDS - CANCELS, "main thread: %lu commits, expected %d", commits,
        ROUNDS - CANCELS);
  CHECK(explicit_aborts == CANCELS, "main thread: %lu cancels counted, expected %d",
        explicit_aborts, CANCELS);
  CHECK(aborts >= explicit_aborts, "nb_aborts %lu below the cancels", aborts);

  run_threads(threads, increment);
  long expected = (long)(threads + 1) * ROUNDS - CANCELS;
  CHECK(counter == expected, "counter %ld, expected %ld", counter, expected);
  unsigned long global_commits = 0;
  CHECK(stm_get_stats("global_nb_commits", &global_commits) == 1, "global_nb_commits");
  CHECK(global_commits == (unsigned long)expected,
        "global_nb_commits %lu, the program committed %ld", global_commits, expected);
  printf("config: design and manager as asked; %lu commits counted, %lu cancels\n",
         global_commits, explicit_aborts);
  return check_summary();
}
