/*
 * check.h -- the C tests' harness: CHECK counts a passed or failed check (from any
 * thread), check_summary prints "N passed, M failed" and gives the exit status.
 */

#ifndef LUTRA_TEST_CHECK_H
#define LUTRA_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_passed;
static int check_failed;

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (cond) {                                                              \
      __atomic_fetch_add(&check_passed, 1, __ATOMIC_RELAXED);                \
    } else {                                                                 \
      __atomic_fetch_add(&check_failed, 1, __ATOMIC_RELAXED);                \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                   \
      fprintf(stderr, __VA_ARGS__);                                          \
      fputc('\n', stderr);                                                   \
    }                                                                        \
  } while (0)

/* Prints the summary line; returns the process exit status. */
static inline int check_summary(void) {
  printf("%d passed, %d failed\n", check_passed, check_failed);
  return check_failed == 0 ? 0 : 1;
}

/* A positive integer from the environment, or fallback. */
static inline long env_long(const char *name, long fallback) {
  const char *text = getenv(name);
  long value = text != NULL ? strtol(text, NULL, 10) : 0;
  return value > 0 ? value : fallback;
}

#endif /* LUTRA_TEST_CHECK_H */
