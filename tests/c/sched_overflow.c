/*
 * sched_overflow.c -- a task that overflows its stack is reported ("lutra: task N
 * overflowed its stack ...") and fails alone: the other tasks run to their end, and
 * sched_wait returns (it waited forever before). Tasks get 64 KiB stacks; one
 * recurses without bound. A watchdog (alarm) turns a hang into a failure.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <lutra/sched.h>
#include <lutra/stm.h>

#include "check.h"

#define TASKS 8

static int finished;

/* Never reached: the recursion below ends at the stack's guard page. */
static volatile uint64_t bottom = UINT64_MAX;

/* Recurses until the stack's guard page faults. */
static __attribute__((noinline)) uint64_t deep(uint64_t n) {
  volatile char frame[512];
  if (n == bottom) return 0;
  frame[n % sizeof frame] = (char)n;
  return deep(n + 1) + frame[(n + 1) % sizeof frame];
}

static void *overflow(void *arg) {
  (void)arg;
  printf("overflowing: %lu\n", (unsigned long)deep(0));
  return NULL;
}

static void *work(void *arg) {
  (void)arg;
  sched_yield();
  __atomic_fetch_add(&finished, 1, __ATOMIC_RELAXED);
  return NULL;
}

int main(void) {
  alarm(120);
  setenv("LUTRA_SCHED_STACK_KB", "64", 1);
  CHECK(sched_init(2) >= 1, "workers");
  CHECK(sched_start(overflow, NULL) > 0, "the overflowing task starts");
  for (int i = 1; i < TASKS; i++) CHECK(sched_start(work, NULL) > 0, "task %d starts", i);
  CHECK(sched_wait() == LUTRA_OK, "sched_wait returns (%s)", lutra_last_error());
  CHECK(finished == TASKS - 1, "the other tasks ran: %d of %d", finished, TASKS - 1);
  /* The scheduler goes on: more tasks run and are waited for. */
  for (int i = 0; i < TASKS; i++) sched_start(work, NULL);
  CHECK(sched_wait() == LUTRA_OK, "a second sched_wait");
  CHECK(finished == 2 * TASKS - 1, "the second round ran: %d", finished);
  CHECK(sched_shutdown() == LUTRA_OK, "sched_shutdown");
  return check_summary();
}
