/*
 * list.c -- the sorted linked-list integer set (tinySTM's intset "ll"): 512 keys,
 * 256 present; every step of a search is a transactional read.
 */
#include <stdio.h>
#include <stdlib.h>

#include "intset.h"

#define RANGE 512

struct lnode *ll_create(void) {
  struct lnode *tail = malloc(sizeof *tail);
  struct lnode *head = malloc(sizeof *head);
  tail->key = INTPTR_MAX;
  tail->next = NULL;
  head->key = INTPTR_MIN;
  head->next = tail;
  return head;
}

/* The last node with a key below `key` (the head at least). */
TM_SAFE static struct lnode *ll_before(struct lnode *head, intptr_t key) {
  struct lnode *prev = head;
  struct lnode *next = TM_READ(prev->next);
  while (TM_READ(next->key) < key) {
    prev = next;
    next = TM_READ(prev->next);
  }
  return prev;
}

TM_SAFE int ll_contains(struct lnode *head, intptr_t key) {
  struct lnode *prev = ll_before(head, key);
  struct lnode *next = TM_READ(prev->next);
  return TM_READ(next->key) == key;
}

TM_SAFE int ll_add(struct lnode *head, intptr_t key) {
  struct lnode *prev = ll_before(head, key);
  struct lnode *next = TM_READ(prev->next);
  if (TM_READ(next->key) == key)
    return 0;
  struct lnode *node = TM_MALLOC(sizeof *node);
  TM_WRITE(node->key, key);
  TM_WRITE(node->next, next);
  TM_WRITE(prev->next, node);
  return 1;
}

TM_SAFE int ll_remove(struct lnode *head, intptr_t key) {
  struct lnode *prev = ll_before(head, key);
  struct lnode *node = TM_READ(prev->next);
  if (TM_READ(node->key) != key)
    return 0;
  TM_WRITE(prev->next, TM_READ(node->next));
  TM_FREE(node, sizeof *node);
  return 1;
}

long ll_check(struct lnode *head) {
  long count = 0;
  for (struct lnode *n = head->next; n->next != NULL; n = n->next) {
    if (n->next->key <= n->key)
      return -1;
    count++;
  }
  return count;
}

/* Sequential add for the initial fill (no transaction yet). */
int ll_fill_add(struct lnode *head, intptr_t key) {
  struct lnode *prev = head;
  while (prev->next->key < key)
    prev = prev->next;
  if (prev->next->key == key)
    return 0;
  struct lnode *node = malloc(sizeof *node);
  node->key = key;
  node->next = prev->next;
  prev->next = node;
  return 1;
}

static void *setup(struct rng *r) {
  struct lnode *head = ll_create();
  INTSET_FILL(head, ll_fill_add, RANGE, r);
  return head;
}

static int check(void *shared) {
  long size = ll_check(shared);
  if (size < 0) {
    fprintf(stderr, "list: not sorted\n");
    return 1;
  }
  return 0;
}

INTSET_OP(op10, struct lnode, ll_contains, ll_add, ll_remove, RANGE, 10)
INTSET_OP(op50, struct lnode, ll_contains, ll_add, ll_remove, RANGE, 50)

const struct workload list10 = {"list10", setup, op10, check};
const struct workload list50 = {"list50", setup, op50, check};
