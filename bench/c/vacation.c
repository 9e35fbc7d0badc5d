/*
 * vacation.c -- a travel reservation system in the shape of STAMP's vacation
 * (written here): three tables of items (cars, flights, rooms: id -> total,
 * free, price) and a table of customers (id -> list of reservations), each a
 * red-black tree of rbtree.c. A client runs one of three transactions:
 *
 *   90%  make a reservation: query QUERIES random items (of random kinds) among
 *        the first QUERY_RANGE% of ids, and reserve the dearest available item
 *        of each kind queried, for a random customer (added if new);
 *    5%  delete a customer: release each of its reservations, remove it;
 *    5%  update the tables: QUERIES random items each added (or restocked by
 *        100, new price) or, if none of it is reserved, removed.
 *
 * Invariant (checked at the end): for every item, total - free is the number of
 * reservations of it held by customers, and 0 <= free <= total.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rbtree.h"
#include "tm.h"
#include "workload.h"

#define RELATIONS 16384
#define QUERIES 4
#define QUERY_RANGE 60
#define USER 90
#define KINDS 3

struct item {
  intptr_t total;
  intptr_t free;
  intptr_t price;
};

struct reservation {
  intptr_t kind;
  intptr_t id;
  intptr_t price;
  struct reservation *next;
};

struct customer {
  struct reservation *reservations;
};

struct manager {
  struct rbtree *items[KINDS];
  struct rbtree *customers;
};

/* A client's random choices, drawn before its transaction (a restart replays
 * the same request). */
struct request {
  long customer;
  long kind[QUERIES];
  long id[QUERIES];
  long add[QUERIES];
  long price[QUERIES];
};

static void draw(struct request *q, struct rng *r) {
  long range = RELATIONS * QUERY_RANGE / 100;
  q->customer = 1 + rng_below(r, range);
  for (int i = 0; i < QUERIES; i++) {
    q->kind[i] = rng_below(r, KINDS);
    q->id[i] = 1 + rng_below(r, range);
    q->add[i] = rng_below(r, 2);
    q->price[i] = 50 + rng_below(r, 10) * 10;
  }
}

TM_SAFE static struct item *item_of(struct manager *m, intptr_t kind, intptr_t id) {
  return (struct item *)rb_get(m->items[kind], id);
}

TM_SAFE static void reserve(struct manager *m, struct customer *c, intptr_t kind,
                            intptr_t id) {
  struct item *item = item_of(m, kind, id);
  TM_WRITE(item->free, TM_READ(item->free) - 1);
  struct reservation *res = TM_MALLOC(sizeof *res);
  TM_WRITE(res->kind, kind);
  TM_WRITE(res->id, id);
  TM_WRITE(res->price, TM_READ(item->price));
  TM_WRITE(res->next, TM_READ(c->reservations));
  TM_WRITE(c->reservations, res);
}

TM_SAFE static void make_reservation(struct manager *m, const struct request *q) {
  intptr_t best_id[KINDS] = {0, 0, 0};
  intptr_t best_price[KINDS] = {-1, -1, -1};
  int found = 0;
  for (int i = 0; i < QUERIES; i++) {
    struct item *item = item_of(m, q->kind[i], q->id[i]);
    if (item == NULL || TM_READ(item->free) <= 0)
      continue;
    intptr_t price = TM_READ(item->price);
    if (price > best_price[q->kind[i]]) {
      best_price[q->kind[i]] = price;
      best_id[q->kind[i]] = q->id[i];
      found = 1;
    }
  }
  if (!found)
    return;
  struct customer *c = (struct customer *)rb_get(m->customers, q->customer);
  if (c == NULL) {
    c = TM_MALLOC(sizeof *c);
    TM_WRITE(c->reservations, (struct reservation *)NULL);
    rb_insert(m->customers, q->customer, (intptr_t)c);
  }
  for (int kind = 0; kind < KINDS; kind++)
    if (best_id[kind] != 0)
      reserve(m, c, kind, best_id[kind]);
}

TM_SAFE static void delete_customer(struct manager *m, long id) {
  struct customer *c = (struct customer *)rb_get(m->customers, id);
  if (c == NULL)
    return;
  struct reservation *res = TM_READ(c->reservations);
  while (res != NULL) {
    struct reservation *next = TM_READ(res->next);
    struct item *item = item_of(m, TM_READ(res->kind), TM_READ(res->id));
    TM_WRITE(item->free, TM_READ(item->free) + 1);
    TM_FREE(res, sizeof *res);
    res = next;
  }
  rb_delete(m->customers, id);
  TM_FREE(c, sizeof *c);
}

TM_SAFE static void update_tables(struct manager *m, const struct request *q) {
  for (int i = 0; i < QUERIES; i++) {
    struct item *item = item_of(m, q->kind[i], q->id[i]);
    if (q->add[i]) {
      if (item == NULL) {
        item = TM_MALLOC(sizeof *item);
        TM_WRITE(item->total, 100);
        TM_WRITE(item->free, 100);
        TM_WRITE(item->price, q->price[i]);
        rb_insert(m->items[q->kind[i]], q->id[i], (intptr_t)item);
      } else {
        TM_WRITE(item->total, TM_READ(item->total) + 100);
        TM_WRITE(item->free, TM_READ(item->free) + 100);
        TM_WRITE(item->price, q->price[i]);
      }
    } else if (item != NULL && TM_READ(item->free) == TM_READ(item->total)) {
      rb_delete(m->items[q->kind[i]], q->id[i]);
      TM_FREE(item, sizeof *item);
    }
  }
}

static void op(void *shared, struct rng *r) {
  struct manager *m = shared;
  struct request q;
  long action = rng_below(r, 100);
  draw(&q, r);
  if (action < USER) {
    TM_BEGIN();
    make_reservation(m, &q);
    TM_END();
  } else if (action < USER + (100 - USER) / 2) {
    TM_BEGIN();
    delete_customer(m, q.customer);
    TM_END();
  } else {
    TM_BEGIN();
    update_tables(m, &q);
    TM_END();
  }
}

static void add_item(struct manager *m, long kind, long id, struct rng *r) {
  struct item *item = malloc(sizeof *item);
  item->total = item->free = 100 * (1 + rng_below(r, 5));
  item->price = 50 + rng_below(r, 10) * 10;
  TM_BEGIN();
  rb_insert(m->items[kind], id, (intptr_t)item);
  TM_END();
}

static void *setup(struct rng *r) {
  struct manager *m = malloc(sizeof *m);
  for (int kind = 0; kind < KINDS; kind++)
    m->items[kind] = rb_create();
  m->customers = rb_create();
  TM_THREAD_ENTER();
  for (long id = 1; id <= RELATIONS; id++)
    for (int kind = 0; kind < KINDS; kind++)
      add_item(m, kind, id, r);
  TM_THREAD_EXIT();
  return m;
}

/* The check: reservations held per item, then each item against them. */
struct tally {
  long *held[KINDS];
  int bad;
  int kind;
};

static void count_customer(intptr_t id, intptr_t value, void *arg) {
  struct tally *t = arg;
  (void)id;
  for (struct reservation *res = ((struct customer *)value)->reservations; res != NULL;
       res = res->next)
    t->held[res->kind][res->id]++;
}

static void check_item(intptr_t id, intptr_t value, void *arg) {
  struct tally *t = arg;
  struct item *item = (struct item *)value;
  if (item->free < 0 || item->free > item->total ||
      item->total - item->free != t->held[t->kind][id]) {
    if (!t->bad)
      fprintf(stderr, "vacation: item %d/%ld: total %ld free %ld, %ld reserved\n", t->kind,
              (long)id, (long)item->total, (long)item->free, t->held[t->kind][id]);
    t->bad = 1;
  }
  t->held[t->kind][id] = 0;
}

static int check(void *shared) {
  struct manager *m = shared;
  struct tally t = {{NULL}, 0, 0};
  for (int kind = 0; kind < KINDS; kind++)
    t.held[kind] = calloc(RELATIONS + 1, sizeof(long));
  if (rb_check(m->customers) < 0)
    return 1;
  rb_walk(m->customers, count_customer, &t);
  for (t.kind = 0; t.kind < KINDS; t.kind++) {
    if (rb_check(m->items[t.kind]) < 0)
      return 1;
    rb_walk(m->items[t.kind], check_item, &t);
    /* A reservation of an item no longer in its table is left over. */
    for (long id = 0; id <= RELATIONS; id++)
      if (t.held[t.kind][id] != 0) {
        fprintf(stderr, "vacation: reservations of a removed item %d/%ld\n", t.kind, id);
        t.bad = 1;
        break;
      }
  }
  for (int kind = 0; kind < KINDS; kind++)
    free(t.held[kind]);
  return t.bad;
}

const struct workload vacation = {"vacation", setup, op, check};
