/*
 * hash.c -- the hash-table integer set: 8192 keys, 4096 present, in 1024 buckets,
 * each a sorted list of list.c (so about 4 keys per bucket).
 */
#include <stdio.h>
#include <stdlib.h>

#include "intset.h"

#define RANGE 8192
#define BUCKETS 1024

struct hash {
  struct lnode *buckets[BUCKETS];
};

TM_SAFE static struct lnode *bucket(struct hash *h, intptr_t key) {
  /* The bucket array never changes: no transactional read needed. */
  return h->buckets[(uintptr_t)key % BUCKETS];
}

TM_SAFE static int hash_contains(struct hash *h, intptr_t key) {
  return ll_contains(bucket(h, key), key);
}

TM_SAFE static int hash_add(struct hash *h, intptr_t key) {
  return ll_add(bucket(h, key), key);
}

TM_SAFE static int hash_remove(struct hash *h, intptr_t key) {
  return ll_remove(bucket(h, key), key);
}

static int fill_add(struct hash *h, intptr_t key) {
  return ll_fill_add(bucket(h, key), key);
}

static void *setup(struct rng *r) {
  struct hash *h = malloc(sizeof *h);
  for (int i = 0; i < BUCKETS; i++)
    h->buckets[i] = ll_create();
  INTSET_FILL(h, fill_add, RANGE, r);
  return h;
}

static int check(void *shared) {
  struct hash *h = shared;
  for (int i = 0; i < BUCKETS; i++) {
    if (ll_check(h->buckets[i]) < 0) {
      fprintf(stderr, "hash: bucket %d not sorted\n", i);
      return 1;
    }
    for (struct lnode *n = h->buckets[i]->next; n->next != NULL; n = n->next)
      if ((uintptr_t)n->key % BUCKETS != (uintptr_t)i) {
        fprintf(stderr, "hash: key %ld in bucket %d\n", (long)n->key, i);
        return 1;
      }
  }
  return 0;
}

INTSET_OP(op10, struct hash, hash_contains, hash_add, hash_remove, RANGE, 10)
INTSET_OP(op50, struct hash, hash_contains, hash_add, hash_remove, RANGE, 50)

const struct workload hash10 = {"hash10", setup, op10, check};
const struct workload hash50 = {"hash50", setup, op50, check};
