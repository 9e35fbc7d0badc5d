/*
 * sched_deadlock.c -- sched_barrier_init with more parties than tasks: sched_wait
 * reports the deadlock (LUTRA_EDEADLK, a message on standard error) instead of
 * hanging. First the control: 64 tasks pass 50 rounds of a
 * barrier sized for them, and sched_wait returns LUTRA_OK with no report. Then 3
 * tasks wait at a barrier of 4 parties.
 */

#include <stdint.h>
#include <stdio.h>

#include <lutra/sched.h>
#include <lutra/stm.h>

#include "check.h"

#define ROUNDS 50

static void *rounds(void *arg) {
  (void)arg;
  for (int round = 0; round < ROUNDS; round++) sched_barrier_wait();
  return NULL;
}

static void *once(void *arg) {
  (void)arg;
  sched_barrier_wait();
  return NULL;
}

int main(void) {
  CHECK(sched_init(2) == 2, "two workers");
  CHECK(sched_barrier_init(64) == LUTRA_OK, "barrier of 64");
  for (int i = 0; i < 64; i++) CHECK(sched_start(rounds, NULL) >= 0, "task %d", i);
  CHECK(sched_wait() == LUTRA_OK, "64 tasks, 64 parties: no deadlock (%s)", lutra_last_error());

  CHECK(sched_barrier_init(4) == LUTRA_OK, "barrier of 4");
  for (int i = 0; i < 3; i++) CHECK(sched_start(once, NULL) >= 0, "task %d", i);
  int status = sched_wait();
  CHECK(status == LUTRA_EDEADLK, "3 tasks at a barrier of 4: sched_wait returned %d", status);
  CHECK(lutra_last_error_code() == LUTRA_EDEADLK, "the last error says why");
  printf("reported: %s\n", lutra_last_error());
  /* The three tasks stay parked; the process ends with them. */
  return check_summary();
}
