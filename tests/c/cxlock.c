/*
 * cxlock.c -- cooperative locks from C (<lutra/cxlock.h>): misuse codes; I/O in
 * an optimistic section re-runs it exclusively exactly once; cx_exclusive runs
 * once; nesting flattens, and an exclusion need at any depth (also inside a plain
 * stm_start transaction) restarts the outermost transaction exclusively; then a
 * bank under cx_optimistic / cx_exclusive on many threads, one section in twenty
 * writing a line to a file, whose lines must each appear exactly once.
 *
 * Environment: LUTRA_STM_DESIGN, LUTRA_STM_CM (read by stm_init), CX_THREADS,
 * CX_OPS (per thread).
 */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include <lutra/cxlock.h>

#define ACCOUNTS 16
#define INITIAL 1000

static cx_lock_t lock = CX_LOCK_INITIALIZER;
static cx_lock_t inner_lock = CX_LOCK_INITIALIZER;
static stm_word_t accounts[ACCOUNTS];
static stm_word_t counter;

/* ---- one thread ------------------------------------------------------------- */

typedef struct trace {
  int runs;
  int modes[4];
  int held[4];
  int io;
} trace_t;

static void note(trace_t *t) {
  if (t->runs < 4) {
    t->modes[t->runs] = cx_mode();
    t->held[t->runs] = cx_held(&lock);
  }
  t->runs++;
}

static int add_then_io(void *arg) {
  trace_t *t = arg;
  note(t);
  stm_store(&counter, stm_load(&counter) + 1);
  CHECK(cx_need_exclusive() == CX_EXCLUSIVE, "need_exclusive returns in exclusive mode");
  t->io++;
  return 0;
}

static int add_only(void *arg) {
  note(arg);
  stm_store(&counter, stm_load(&counter) + 1);
  return 0;
}

static int inner_exclusive(void *arg) {
  (void)arg;
  stm_store(&counter, stm_load(&counter) + 1);
  return 0;
}

static int outer_then_inner_exclusive(void *arg) {
  note(arg);
  return cx_exclusive(&inner_lock, inner_exclusive, NULL);
}

static int outer_then_inner_optimistic(void *arg) {
  note(arg);
  int rc = cx_optimistic(&inner_lock, add_only, arg);
  CHECK(cx_mode() == CX_OPTIMISTIC, "nested section kept the mode");
  return rc;
}

static int give_up(void *arg) {
  (void)arg;
  stm_store(&counter, 12345);
  return 7;
}

static void single_thread(void) {
  CHECK(cx_mode() == CX_NONE, "no mode outside transactions");
  CHECK(cx_need_exclusive() == LUTRA_ENOTX, "need_exclusive outside: %d", lutra_last_error_code());
  CHECK(cx_optimistic(NULL, add_only, NULL) == LUTRA_EINVAL, "NULL lock");
  CHECK(cx_exclusive(&lock, NULL, NULL) == LUTRA_EINVAL, "NULL fn");
  CHECK(cx_held(NULL) == LUTRA_EINVAL, "cx_held(NULL)");

  trace_t t = {0};
  CHECK(cx_optimistic(&lock, add_then_io, &t) == 0, "optimistic section with I/O");
  CHECK(t.runs == 2 && t.io == 1, "re-ran once, I/O once: runs %d io %d", t.runs, t.io);
  CHECK(t.modes[0] == CX_OPTIMISTIC && t.modes[1] == CX_EXCLUSIVE, "modes %d %d",
        t.modes[0], t.modes[1]);
  CHECK(t.held[0] == 0 && t.held[1] == 1, "door closed only when exclusive");
  CHECK(cx_held(&lock) == 0, "door open after the section");
  CHECK(counter == 1, "one increment, got %lu", (unsigned long)counter);

  memset(&t, 0, sizeof t);
  CHECK(cx_exclusive(&lock, add_then_io, &t) == 0, "exclusive section");
  CHECK(t.runs == 1 && t.io == 1 && t.modes[0] == CX_EXCLUSIVE, "ran once, exclusively");

  memset(&t, 0, sizeof t);
  CHECK(cx_optimistic(&lock, outer_then_inner_exclusive, &t) == 0, "nested exclusive");
  CHECK(t.runs == 2 && t.modes[1] == CX_EXCLUSIVE && t.held[1] == 1,
        "outer reverted to exclusion: runs %d", t.runs);

  memset(&t, 0, sizeof t);
  CHECK(cx_optimistic(&lock, outer_then_inner_optimistic, &t) == 0, "nested optimistic");
  CHECK(t.runs == 2 && t.modes[0] == CX_OPTIMISTIC, "outer and inner ran once each");
  CHECK(counter == 4, "counter %lu", (unsigned long)counter);

  CHECK(cx_optimistic(&lock, give_up, NULL) == 7, "fn's value comes back");
  CHECK(counter == 4, "and its writes were rolled back");

  /* A plain tinySTM transaction around a section: the need restarts it
   * irrevocable, once; it does not loop as a naked xbegin would. */
  volatile int runs = 0;
  stm_tx_attr_t attr = {{.id = 9}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  runs++;
  CHECK(cx_optimistic(&lock, add_then_io, &t) == 0, "section inside stm_start");
  stm_commit();
  CHECK(runs == 2, "plain transaction restarted once, ran %d times", runs);
  CHECK(counter == 5, "counter %lu", (unsigned long)counter);
  counter = 0;
}

/* ---- many threads ----------------------------------------------------------- */

typedef struct worker {
  unsigned int seed;
  long ops;
  FILE *log;
  int id;
  long bad_audits;
  /* The current operation (read again by each run of the section). */
  int from, to, io;
  long amount, op;
} worker_t;

static int transfer(void *arg) {
  worker_t *w = arg;
  stm_store(&accounts[w->from], stm_load(&accounts[w->from]) - (stm_word_t)w->amount);
  if (w->io) {
    cx_need_exclusive();
    fprintf(w->log, "%d %ld\n", w->id, w->op);
  }
  stm_store(&accounts[w->to], stm_load(&accounts[w->to]) + (stm_word_t)w->amount);
  return 0;
}

static int audit(void *arg) {
  long *total = arg;
  *total = 0;
  for (int i = 0; i < ACCOUNTS; i++)
    *total += (long)stm_load(&accounts[i]);
  return 0;
}

static void *work(void *arg) {
  worker_t *w = arg;
  stm_init_thread();
  for (w->op = 0; w->op < w->ops; w->op++) {
    int kind = rand_r(&w->seed) % 100;
    w->from = rand_r(&w->seed) % ACCOUNTS;
    w->to = rand_r(&w->seed) % ACCOUNTS;
    w->amount = 1 + rand_r(&w->seed) % 50;
    w->io = kind < 5;
    if (kind < 80) {
      CHECK(cx_optimistic(&lock, transfer, w) == 0, "transfer");
    } else if (kind < 85) {
      CHECK(cx_exclusive(&lock, transfer, w) == 0, "exclusive transfer");
    } else {
      long total = 0;
      CHECK(cx_optimistic(&lock, audit, &total) == 0, "audit");
      if (total != (long)ACCOUNTS * INITIAL)
        w->bad_audits++;
    }
  }
  stm_exit_thread();
  return NULL;
}

static void many_threads(void) {
  long threads = env_long("CX_THREADS", 8), ops = env_long("CX_OPS", 2000);
  for (int i = 0; i < ACCOUNTS; i++)
    accounts[i] = INITIAL;
  FILE *log = tmpfile();
  CHECK(log != NULL, "tmpfile");
  if (log == NULL)
    return;
  pthread_t tid[threads];
  worker_t workers[threads];
  long expected_lines = 0;
  for (long i = 0; i < threads; i++) {
    workers[i] = (worker_t){.seed = (unsigned int)i + 1, .ops = ops, .log = log, .id = (int)i};
    pthread_create(&tid[i], NULL, work, &workers[i]);
  }
  for (long i = 0; i < threads; i++)
    pthread_join(tid[i], NULL);
  for (long i = 0; i < threads; i++)
    CHECK(workers[i].bad_audits == 0, "thread %ld saw a wrong total", i);
  /* Replay each thread's choices: the lines it must have written, once each. */
  char *seen = calloc((size_t)(threads * ops), 1);
  for (long i = 0; i < threads; i++) {
    unsigned int seed = (unsigned int)i + 1;
    for (long op = 0; op < ops; op++) {
      int kind = rand_r(&seed) % 100;
      for (int skip = 0; skip < 3; skip++)
        (void)rand_r(&seed);
      if (kind < 5)
        expected_lines++;
    }
  }
  rewind(log);
  long lines = 0, duplicates = 0;
  int id;
  long op;
  while (fscanf(log, "%d %ld", &id, &op) == 2) {
    lines++;
    if (seen[id * ops + op]++)
      duplicates++;
  }
  fclose(log);
  free(seen);
  CHECK(lines == expected_lines, "I/O lines %ld, expected %ld", lines, expected_lines);
  CHECK(duplicates == 0, "%ld I/O lines repeated", duplicates);
  long total = 0;
  for (int i = 0; i < ACCOUNTS; i++)
    total += (long)accounts[i];
  CHECK(total == (long)ACCOUNTS * INITIAL, "final total %ld", total);
  CHECK(cx_held(&lock) == 0, "door open at the end");
}

int main(void) {
  stm_init();
  stm_init_thread();
  single_thread();
  many_threads();
  stm_exit_thread();
  stm_exit();
  return check_summary();
}
