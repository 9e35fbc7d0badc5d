/*
 * bank.c -- tinySTM's bank, with audits: accounts in an array of words; a thread
 * either moves 1 between two random accounts (read both, write both) or, one
 * operation in 16, audits: reads every account in a read-only transaction and
 * checks that the total never changed. Run with 64 and 4096 accounts.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tm.h"
#include "workload.h"

#define INITIAL 1000

struct bank {
  intptr_t *accounts;
  long n;
};

static void *setup(long n) {
  struct bank *b = malloc(sizeof *b);
  b->n = n;
  b->accounts = calloc((size_t)n, sizeof *b->accounts);
  for (long i = 0; i < n; i++)
    b->accounts[i] = INITIAL;
  return b;
}

static void *setup64(struct rng *r) {
  (void)r;
  return setup(64);
}

static void *setup4096(struct rng *r) {
  (void)r;
  return setup(4096);
}

static void transfer(struct bank *b, long from, long to) {
  TM_BEGIN();
  intptr_t a = TM_READ(b->accounts[from]);
  intptr_t c = TM_READ(b->accounts[to]);
  TM_WRITE(b->accounts[from], a - 1);
  TM_WRITE(b->accounts[to], c + 1);
  TM_END();
}

static intptr_t audit(struct bank *b) {
  intptr_t total;
  TM_BEGIN_RO();
  total = 0;
  for (long i = 0; i < b->n; i++)
    total += TM_READ(b->accounts[i]);
  TM_END();
  return total;
}

static void op(void *shared, struct rng *r) {
  struct bank *b = shared;
  uint64_t x = rng_next(r);
  if ((x & 15) == 0) {
    if (audit(b) != (intptr_t)b->n * INITIAL) {
      fprintf(stderr, "bank: an audit saw a wrong total\n");
      abort();
    }
    return;
  }
  long from = (long)((x >> 8) % (uint64_t)b->n);
  long to = (long)((x >> 32) % (uint64_t)b->n);
  if (to == from)
    to = (to + 1) % b->n;
  transfer(b, from, to);
}

static int check(void *shared) {
  struct bank *b = shared;
  intptr_t total = 0;
  for (long i = 0; i < b->n; i++)
    total += b->accounts[i];
  if (total != (intptr_t)b->n * INITIAL) {
    fprintf(stderr, "bank: total %ld, expected %ld\n", (long)total, b->n * INITIAL);
    return 1;
  }
  return 0;
}

const struct workload bank64 = {"bank64", setup64, op, check};
const struct workload bank4096 = {"bank4096", setup4096, op, check};
