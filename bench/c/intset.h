/*
 * intset.h -- integer sets for the benchmark (tinySTM's intset workloads): a
 * sorted linked list (list.c), a red-black tree (rbtree.c) and a hash table of
 * sorted lists (hash.c). Each set's workloads draw a key in [1, range] and, with
 * the update percentage, add or remove it (even odds, so the size stays near
 * range / 2, where it starts), else look it up read-only. One operation is one
 * transaction. INTSET_WORKLOADS defines the two workloads of a set (10% and 50%
 * updates) from its create / contains / add / remove / check functions.
 */
#ifndef CBENCH_INTSET_H
#define CBENCH_INTSET_H

#include <stdint.h>

#include "tm.h"
#include "workload.h"

/* The sorted list with sentinels, also the buckets of hash.c. Keys are in
 * (INTPTR_MIN, INTPTR_MAX). */
struct lnode {
  intptr_t key;
  struct lnode *next;
};

struct lnode *ll_create(void);
TM_SAFE int ll_contains(struct lnode *head, intptr_t key);
TM_SAFE int ll_add(struct lnode *head, intptr_t key);
TM_SAFE int ll_remove(struct lnode *head, intptr_t key);
/* Sequentially: the number of keys, or -1 if not strictly increasing. */
long ll_check(struct lnode *head);
/* Sequentially (the initial fill, before any transaction): adds key; 1 if added,
 * 0 if present. */
int ll_fill_add(struct lnode *head, intptr_t key);

/* Fills a set with range / 2 distinct random keys of [1, range] (sequential). */
#define INTSET_FILL(set, add, range, r)                  \
  do {                                                   \
    long filled_ = 0;                                    \
    while (filled_ < (range) / 2)                        \
      filled_ += add((set), 1 + rng_below((r), (range))); \
  } while (0)

#define INTSET_OP(name, set_t, contains, add, remove, range, update)   \
  static void name(void *shared, struct rng *r) {                     \
    set_t *set_ = shared;                                             \
    intptr_t key_ = 1 + rng_below(r, (range));                        \
    long what_ = rng_below(r, 100);                                   \
    int done_;                                                        \
    if (what_ < (update) && (what_ & 1)) {                            \
      TM_BEGIN();                                                     \
      done_ = add(set_, key_);                                        \
      TM_END();                                                       \
    } else if (what_ < (update)) {                                    \
      TM_BEGIN();                                                     \
      done_ = remove(set_, key_);                                     \
      TM_END();                                                       \
    } else {                                                          \
      TM_BEGIN_RO();                                                  \
      done_ = contains(set_, key_);                                   \
      TM_END();                                                       \
    }                                                                 \
    r->sink += done_;                                                 \
  }

#endif /* CBENCH_INTSET_H */
