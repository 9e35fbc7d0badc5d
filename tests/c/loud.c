/*
 * loud.c -- bad configuration and an unstarted engine are loud: each case runs in
 * a child process, which must die by SIGABRT with a message on standard error
 * naming what is wrong; a control case with a good configuration must exit 0 (so
 * that the harness cannot pass by killing every child).
 *
 *  - stm_init with an unknown LUTRA_STM_DESIGN, LUTRA_STM_CM or LUTRA_STM_STATS:
 *    the message names the variable, the value and the valid values;
 *  - a transactional call (stm_start, stm_load, stm_store, stm_commit,
 *    stm_atomically) with no engine: never started, failed, or after stm_exit.
 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lutra/stm.h>

#include "check.h"

static stm_word_t word;

static int add_one(void *arg) {
  stm_store((stm_word_t *)arg, stm_load((stm_word_t *)arg) + 1);
  return 0;
}

static void init_with(const char *design, const char *cm, const char *stats) {
  unsetenv("LUTRA_STM_DESIGN");
  unsetenv("LUTRA_STM_CM");
  unsetenv("LUTRA_STM_STATS");
  if (design != NULL)
    setenv("LUTRA_STM_DESIGN", design, 1);
  if (cm != NULL)
    setenv("LUTRA_STM_CM", cm, 1);
  if (stats != NULL)
    setenv("LUTRA_STM_STATS", stats, 1);
  stm_init();
}

/* The cases, each run by a child: a bad configuration, or a call without engine. */
static void bad_design(void) { init_with("write-through", NULL, NULL); }
static void bad_manager(void) { init_with(NULL, "polite", NULL); }
static void bad_stats(void) { init_with(NULL, NULL, "maybe"); }
static void start_without_init(void) {
  stm_tx_attr_t attr = {{.id = 0}};
  (void)stm_start(attr);
}
static void load_without_init(void) { (void)stm_load(&word); }
static void atomically_without_init(void) { (void)stm_atomically(add_one, &word); }
static void commit_without_init(void) { (void)stm_commit(); }
static void store_after_exit(void) {
  init_with(NULL, NULL, NULL);
  stm_init_thread();
  stm_atomically(add_one, &word);
  stm_exit_thread();
  stm_exit();
  stm_store(&word, 2);
}
static void good_configuration(void) {
  init_with("wb-etl", "timestamp", "0");
  stm_init_thread();
  if (stm_atomically(add_one, &word) != 0 || word != 1)
    exit(3);
  stm_exit_thread();
  stm_exit();
}

/* Runs body in a child with stderr captured; returns its wait status and writes
 * what it printed to out. */
static int run_child(void (*body)(void), char *out, size_t size) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    perror("pipe");
    exit(2);
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    dup2(pipe_fds[1], 2);
    body();
    _exit(0);
  }
  close(pipe_fds[1]);
  size_t used = 0;
  ssize_t got;
  while (used + 1 < size && (got = read(pipe_fds[0], out + used, size - 1 - used)) > 0)
    used += (size_t)got;
  out[used] = '\0';
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

/* Checks that body dies by SIGABRT and prints every one of the NULL-terminated
 * words. */
static void expect_death(const char *name, void (*body)(void), const char *const *words) {
  char out[4096];
  int status = run_child(body, out, sizeof out);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
        "%s: the process is aborted (status %#x)", name, status);
  for (const char *const *w = words; *w != NULL; w++)
    CHECK(strstr(out, *w) != NULL, "%s: the message names \"%s\": %s", name, *w, out);
}

int main(void) {
  expect_death("bad design", bad_design,
               (const char *const[]){"LUTRA_STM_DESIGN", "write-through",
                                     "wb-ctl, wb-etl", NULL});
  expect_death("bad manager", bad_manager,
               (const char *const[]){"LUTRA_STM_CM", "polite", "backoff",
                                     "size_matters", NULL});
  expect_death("bad stats", bad_stats,
               (const char *const[]){"LUTRA_STM_STATS", "maybe", "0, 1", NULL});
  expect_death("stm_start without stm_init", start_without_init,
               (const char *const[]){"stm_start", "not started", NULL});
  expect_death("stm_load without stm_init", load_without_init,
               (const char *const[]){"stm_load", "not started", NULL});
  expect_death("stm_commit without stm_init", commit_without_init,
               (const char *const[]){"stm_commit", "not started", NULL});
  expect_death("stm_atomically without stm_init", atomically_without_init,
               (const char *const[]){"not started", NULL});
  expect_death("stm_store after stm_exit", store_after_exit,
               (const char *const[]){"stm_store", "not started", NULL});
  char out[4096];
  int status = run_child(good_configuration, out, sizeof out);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "a good configuration runs (status %#x): %s", status, out);
  return check_summary();
}
