/*
 * harness.c -- runs one workload of the C benchmark for a fixed time on N threads
 * and prints one result line for the driver (cargo run -p lutra-bench --bin
 * cbench):
 *
 *   result system=<seq|lutra|libitm|floor> workload=<w> threads=<n> ops=<count>
 *          seconds=<elapsed> aborts=<count or -1 when unknown> check=ok
 *
 * Usage: cbench-<system> <workload> <threads> <milliseconds>
 *
 * Protocol: the main thread builds the shared state, starts the threads, which
 * register (TM_THREAD_ENTER) and wait at a barrier; the clock starts when all are
 * there; after the given time the main thread raises `stop`; each thread finishes
 * its batch, counts its operations and aborts, and leaves; the state is checked.
 * The exit status is 0 only if the check passed.
 *
 * The sequential build (TM_SEQ) on more than one thread gives each thread its own
 * copy of the state (nothing shared, no synchronization): the ceiling of what this
 * machine can do with that many threads. Every copy is checked.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tm.h"
#include "workload.h"

static const struct workload *const workloads[] = {
    &bank64, &bank4096, &list10, &list50, &rbtree10,
    &rbtree50, &hash10, &hash50, &vacation,
};

#if defined(TM_FLOOR)
/* The floor's undo window (tm.h): pairs of {address, old word}, reused from the
 * start whenever it fills (the floor has no commit to empty it). */
#define FLOOR_PAIRS 1024
__thread struct tm_floor_window tm_floor_window
    __attribute__((tls_model("initial-exec")));
static __thread intptr_t floor_log[2 * FLOOR_PAIRS];

static void floor_open(void) {
  tm_floor_window.next = floor_log;
  tm_floor_window.end = floor_log + 2 * FLOOR_PAIRS;
}

intptr_t tm_floor_load_slow(volatile intptr_t *addr) {
  floor_open();
  return *addr;
}

void tm_floor_store_slow(volatile intptr_t *addr, intptr_t value) {
  floor_open();
  *addr = value;
}
#endif

/* Operations between two looks at `stop`. */
#define BATCH 32

static atomic_int stop;
static pthread_barrier_t ready;

struct worker {
  pthread_t thread;
  const struct workload *workload;
  void *shared;
  uint64_t seed;
  long ops;
  long aborts;
};

static void *run_worker(void *arg) {
  struct worker *w = arg;
  struct rng rng = {w->seed, 0};
  TM_THREAD_ENTER();
  pthread_barrier_wait(&ready);
  long ops = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    for (int i = 0; i < BATCH; i++)
      w->workload->op(w->shared, &rng);
    ops += BATCH;
  }
  w->ops = ops;
  w->aborts = tm_thread_aborts();
  TM_THREAD_EXIT();
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s <workload> <threads> <milliseconds>\n", argv[0]);
    return 2;
  }
  const struct workload *workload = NULL;
  for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++)
    if (strcmp(workloads[i]->name, argv[1]) == 0)
      workload = workloads[i];
  int threads = atoi(argv[2]);
  long millis = atol(argv[3]);
  if (workload == NULL || threads < 1 || millis < 1) {
    fprintf(stderr, "%s: unknown workload or bad number\n", argv[0]);
    return 2;
  }
#if defined(TM_FLOOR)
  if (threads != 1) {
    fprintf(stderr, "%s: the floor runs on one thread only\n", argv[0]);
    return 2;
  }
#endif
  TM_STARTUP();
  struct rng rng = {0x9E3779B97F4A7C15ULL, 0};
  struct worker *workers = calloc((size_t)threads, sizeof *workers);
  void *shared = workload->setup(&rng);
#if defined(TM_SEQ)
  for (int i = 0; i < threads; i++)
    workers[i].shared = i == 0 ? shared : workload->setup(&rng);
#else
  for (int i = 0; i < threads; i++)
    workers[i].shared = shared;
#endif
  pthread_barrier_init(&ready, NULL, (unsigned)threads + 1);
  for (int i = 0; i < threads; i++) {
    workers[i].workload = workload;
    workers[i].seed = 0x2545F4914F6CDD1DULL * (uint64_t)(i + 1) + 1;
    pthread_create(&workers[i].thread, NULL, run_worker, &workers[i]);
  }
  pthread_barrier_wait(&ready);
  double start = now();
  struct timespec pause = {millis / 1000, (millis % 1000) * 1000000L};
  nanosleep(&pause, NULL);
  atomic_store(&stop, 1);
  long ops = 0, aborts = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(workers[i].thread, NULL);
    ops += workers[i].ops;
    aborts = workers[i].aborts < 0 || aborts < 0 ? -1 : aborts + workers[i].aborts;
  }
  double seconds = now() - start;
  int bad = 0;
  for (int i = 0; i < threads; i++)
    if (i == 0 || workers[i].shared != shared)
      bad |= workload->check(workers[i].shared);
  TM_SHUTDOWN();
  printf("result system=%s workload=%s threads=%d ops=%ld seconds=%.6f aborts=%ld check=%s\n",
         TM_NAME, workload->name, threads, ops, seconds, aborts, bad ? "FAILED" : "ok");
  free(workers);
  return bad ? 1 : 0;
}
