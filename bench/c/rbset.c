/*
 * rbset.c -- the red-black tree integer set (tinySTM's intset "rb"): 8192 keys,
 * 4096 present.
 */
#include "intset.h"
#include "rbtree.h"

#define RANGE 8192

TM_SAFE static int rbset_contains(struct rbtree *t, intptr_t key) {
  return rb_get(t, key) != 0;
}

TM_SAFE static int rbset_add(struct rbtree *t, intptr_t key) {
  return rb_insert(t, key, 1);
}

/* The initial fill runs before any thread: a transaction of its own each. */
static int fill_add(struct rbtree *t, intptr_t key) {
  int added;
  TM_BEGIN();
  added = rb_insert(t, key, 1);
  TM_END();
  return added;
}

static void *setup(struct rng *r) {
  struct rbtree *t = rb_create();
  TM_THREAD_ENTER();
  INTSET_FILL(t, fill_add, RANGE, r);
  TM_THREAD_EXIT();
  return t;
}

static int check(void *shared) { return rb_check(shared) < 0; }

INTSET_OP(op10, struct rbtree, rbset_contains, rbset_add, rb_delete, RANGE, 10)
INTSET_OP(op50, struct rbtree, rbset_contains, rbset_add, rb_delete, RANGE, 50)

const struct workload rbtree10 = {"rbtree10", setup, op10, check};
const struct workload rbtree50 = {"rbtree50", setup, op50, check};
