/*
 * rbtree.h -- a transactional red-black tree mapping word keys to non-zero word
 * values (rbtree.c): the intset "rb" workloads, and the tables of vacation.c.
 */
#ifndef CBENCH_RBTREE_H
#define CBENCH_RBTREE_H

#include <stdint.h>

#include "tm.h"

struct rbtree;

struct rbtree *rb_create(void);
/* The value of key, or 0. */
TM_SAFE intptr_t rb_get(struct rbtree *t, intptr_t key);
/* Inserts key -> value (value != 0); 0 if key was there (nothing changes). */
TM_SAFE int rb_insert(struct rbtree *t, intptr_t key, intptr_t value);
/* Removes key; 0 if it was not there. */
TM_SAFE int rb_delete(struct rbtree *t, intptr_t key);
/* Sequentially: the number of keys, or -1 (and a message) if the tree is not a
 * red-black search tree. */
long rb_check(struct rbtree *t);
/* Sequentially: calls visit(key, value, arg) in key order. */
void rb_walk(struct rbtree *t, void (*visit)(intptr_t, intptr_t, void *), void *arg);

#endif /* CBENCH_RBTREE_H */
