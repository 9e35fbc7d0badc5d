/*
 * retry.c -- a bounded buffer between producers and consumers with no lock and
 * no condition variable: a consumer that finds it empty, or a producer that finds
 * it full, calls stm_retry() inside __transaction_atomic and sleeps until another
 * transaction changes what it read (Lutra only: neither libitm nor tinySTM has
 * blocking retry).
 *
 * First a consumer waits alone: once the kernel reports its thread asleep, the
 * main thread lets it sleep 300 ms more before it produces; the consumer's CPU
 * time over the whole wait must stay near zero (under 10 ms) while the wall time
 * shows that it waited. Nothing depends on timing: the wait starts before the
 * producer does, whatever the machine's load.
 * Then THREADS / 2 producers and as many consumers move 1,200 items each; every
 * item arrives exactly once (the sums match).
 */

#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <lutra/stm.h>

#include "harness.h"

#define CAPACITY 4
#define ITEMS 1200 /* per producer */

static long buffer[CAPACITY];
static long first, count;
static long consumed_sum;

static long take(void) {
  long item;
  __transaction_atomic {
    if (count == 0) stm_retry();
    item = buffer[first];
    first = (first + 1) % CAPACITY;
    count--;
  }
  return item;
}

static void put(long item) {
  __transaction_atomic {
    if (count == CAPACITY) stm_retry();
    buffer[(first + count) % CAPACITY] = item;
    count++;
  }
}

static double seconds(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static double idle_cpu, idle_wall;
static pid_t idle_tid;
static int idle_ready;

/* Whether the kernel reports thread `tid` of this process asleep (state S). */
static int thread_sleeps(pid_t tid) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  FILE *file = fopen(path, "r");
  if (file == NULL) return 0;
  char *read = fgets(line, sizeof line, file);
  fclose(file);
  char *end = read != NULL ? strrchr(line, ')') : NULL;
  return end != NULL && end[1] == ' ' && end[2] == 'S';
}

/* Registers the calling thread with the engine (its first transaction), so that
 * what the idle consumer measures is the wait alone. */
static void first_transaction(void) {
  long seen;
  __transaction_atomic { seen = count; }
  (void)seen;
}

static void *idle_consumer(void *arg) {
  (void)arg;
  first_transaction();
  idle_tid = (pid_t)syscall(SYS_gettid);
  __atomic_store_n(&idle_ready, 1, __ATOMIC_RELEASE);
  double cpu = seconds(CLOCK_THREAD_CPUTIME_ID), wall = seconds(CLOCK_MONOTONIC);
  long item = take();
  idle_cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
  idle_wall = seconds(CLOCK_MONOTONIC) - wall;
  CHECK(item == 42, "the idle consumer took %ld", item);
  return NULL;
}

static int pairs;

static void *worker(void *arg) {
  intptr_t id = (intptr_t)arg;
  if (id < pairs) {
    for (long i = 1; i <= ITEMS; i++) put(i);
  } else {
    long sum = 0;
    for (long i = 0; i < ITEMS; i++) sum += take();
    __atomic_fetch_add(&consumed_sum, sum, __ATOMIC_RELAXED);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int threads = thread_count(argc, argv);
  pairs = threads < 2 ? 1 : threads / 2;

  first_transaction();
  pthread_t consumer;
  pthread_create(&consumer, NULL, idle_consumer, NULL);
  while (!__atomic_load_n(&idle_ready, __ATOMIC_ACQUIRE) || !thread_sleeps(idle_tid)) sched_yield();
  usleep(300 * 1000);
  put(42);
  pthread_join(consumer, NULL);
  CHECK(idle_wall >= 0.25, "the idle consumer did not wait: %.3f s", idle_wall);
  CHECK(idle_cpu < 0.01, "the idle consumer burnt %.1f ms of CPU while waiting", idle_cpu * 1e3);
  printf("retry: waited %.0f ms, CPU used meanwhile %.2f ms\n", idle_wall * 1e3, idle_cpu * 1e3);

  run_threads(2 * pairs, worker);
  long expected = (long)pairs * ITEMS * (ITEMS + 1) / 2;
  CHECK(consumed_sum == expected, "consumed %ld, expected %ld", consumed_sum, expected);
  CHECK(count == 0, "%ld items left", count);
  printf("retry: %d producers, %d consumers, every item once: %s\n", pairs, pairs,
         consumed_sum == expected ? "yes" : "no");
  return check_summary();
}
