/*
 * intset.c -- tinySTM's integer set (a sorted linked list) against Lutra: threads
 * add, remove and look up keys concurrently; nodes come from stm_malloc and go back
 * through stm_free. Even threads use tinySTM's START / LOAD / STORE / COMMIT style,
 * odd threads Lutra's stm_atomically with the jump-free accessors. At the end, each
 * key is in the set exactly when its initial presence plus the successful adds
 * minus the successful removes is 1, and the list is sorted.
 *
 * Environment: LUTRA_STM_DESIGN, LUTRA_STM_CM (read by stm_init), INTSET_THREADS,
 * INTSET_RANGE, INTSET_OPS (per thread), INTSET_UPDATE_PCT.
 */

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mod_mem.h"
#include "mod_stats.h"
#include "stm.h"
#include "tx_macros.h"

#define MALLOC(size) stm_malloc(size)
#define FREE(addr, size) stm_free(addr, size)

typedef intptr_t val_t;
#define VAL_MIN INTPTR_MIN
#define VAL_MAX INTPTR_MAX

typedef struct node {
  val_t val;
  struct node *next;
} node_t;

typedef struct intset {
  node_t *head;
} intset_t;

/* ---- tinySTM style ------------------------------------------------------ */

static node_t *new_node(val_t val, node_t *next, int transactional) {
  node_t *node = transactional ? MALLOC(sizeof(node_t)) : malloc(sizeof(node_t));
  if (node == NULL) {
    perror("malloc");
    exit(1);
  }
  /* The node is private until a committed store publishes it. */
  node->val = val;
  node->next = next;
  return node;
}

/* Inside a transaction: the first node whose value is >= val, its predecessor in
 * *prev and its value in *v. An abort here jumps back over this C frame only. */
static node_t *find(intset_t *set, val_t val, node_t **prev, val_t *v) {
  node_t *before = set->head;
  node_t *next = (node_t *)LOAD(&before->next);
  while ((*v = (val_t)LOAD(&next->val)) < val) {
    before = next;
    next = (node_t *)LOAD(&before->next);
  }
  *prev = before;
  return next;
}

static int set_contains(intset_t *set, val_t val) {
  int result;
  node_t *prev;
  val_t v;
  START(1, RO);
  find(set, val, &prev, &v);
  result = (v == val);
  COMMIT;
  return result;
}

static int set_add(intset_t *set, val_t val) {
  int result;
  node_t *prev, *next;
  val_t v;
  START(2, RW);
  next = find(set, val, &prev, &v);
  result = (v != val);
  if (result)
    STORE(&prev->next, new_node(val, next, 1));
  COMMIT;
  return result;
}

static int set_remove(intset_t *set, val_t val) {
  int result;
  node_t *prev, *next;
  val_t v;
  START(3, RW);
  next = find(set, val, &prev, &v);
  result = (v == val);
  if (result) {
    STORE(&prev->next, LOAD(&next->next));
    FREE(next, sizeof(node_t));
  }
  COMMIT;
  return result;
}

/* ---- Lutra style: stm_atomically and the jump-free accessors --------------- */

typedef struct op {
  intset_t *set;
  val_t val;
  int result;
} op_t;

/* Returns the status of a jump-free access from the enclosing body if non-zero. */
#define TRY(call)                 \
  do {                            \
    int status_ = (call);         \
    if (status_ != LUTRA_OK)      \
      return status_;             \
  } while (0)

/* Finds the first node >= op->val: *prev_out, *next_out, *v_out. */
static int locate(op_t *op, node_t **prev_out, node_t **next_out, val_t *v_out) {
  stm_word_t word;
  node_t *prev = op->set->head;
  TRY(lutra_stm_load((stm_word_t *)&prev->next, &word));
  node_t *next = (node_t *)word;
  while (1) {
    TRY(lutra_stm_load((stm_word_t *)&next->val, &word));
    if ((val_t)word >= op->val)
      break;
    prev = next;
    TRY(lutra_stm_load((stm_word_t *)&prev->next, &word));
    next = (node_t *)word;
  }
  *prev_out = prev;
  *next_out = next;
  *v_out = (val_t)word;
  return LUTRA_OK;
}

static int contains_body(void *arg) {
  op_t *op = arg;
  node_t *prev, *next;
  val_t v;
  TRY(locate(op, &prev, &next, &v));
  op->result = (v == op->val);
  return 0;
}

static int add_body(void *arg) {
  op_t *op = arg;
  node_t *prev, *next;
  val_t v;
  TRY(locate(op, &prev, &next, &v));
  op->result = (v != op->val);
  if (op->result)
    TRY(lutra_stm_store((stm_word_t *)&prev->next,
                        (stm_word_t)new_node(op->val, next, 1)));
  return 0;
}

static int remove_body(void *arg) {
  op_t *op = arg;
  node_t *prev, *next;
  val_t v;
  stm_word_t after;
  TRY(locate(op, &prev, &next, &v));
  op->result = (v == op->val);
  if (op->result) {
    TRY(lutra_stm_load((stm_word_t *)&next->next, &after));
    TRY(lutra_stm_store((stm_word_t *)&prev->next, after));
    stm_free(next, sizeof(node_t)); /* may jump back into stm_atomically */
  }
  return 0;
}

/* stm_atomically calls that did not return 0. */
static long atomic_failures;

static int atomic_op(stm_atomic_fn body, intset_t *set, val_t val) {
  op_t op = {set, val, 0};
  int status = stm_atomically(body, &op);
  if (status != 0) {
    __atomic_fetch_add(&atomic_failures, 1, __ATOMIC_RELAXED);
    fprintf(stderr, "stm_atomically returned %d: %s\n", status,
            lutra_last_error());
  }
  return op.result;
}

/* ---- the test ---------------------------------------------------------- */

typedef struct thread_data {
  intset_t *set;
  int lutra_style;
  unsigned int seed;
  long ops;
  long range;
  int update_pct;
  long *added;   /* successful adds per key */
  long *removed; /* successful removes per key */
  long found;
  pthread_barrier_t *barrier;
} thread_data_t;

static void *worker(void *arg) {
  thread_data_t *td = arg;
  if (stm_init_thread() == NULL) {
    fprintf(stderr, "stm_init_thread: %s\n", lutra_last_error());
    exit(1);
  }
  pthread_barrier_wait(td->barrier);
  for (long i = 0; i < td->ops; i++) {
    val_t val = (val_t)(rand_r(&td->seed) % td->range);
    int op = (int)(rand_r(&td->seed) % 100);
    if (op < td->update_pct / 2) {
      int ok = td->lutra_style ? atomic_op(add_body, td->set, val)
                               : set_add(td->set, val);
      td->added[val] += ok;
    } else if (op < td->update_pct) {
      int ok = td->lutra_style ? atomic_op(remove_body, td->set, val)
                               : set_remove(td->set, val);
      td->removed[val] += ok;
    } else {
      td->found += td->lutra_style ? atomic_op(contains_body, td->set, val)
                                   : set_contains(td->set, val);
    }
  }
  stm_exit_thread();
  return NULL;
}

int main(void) {
  long nb_threads = env_long("INTSET_THREADS", 4);
  long range = env_long("INTSET_RANGE", 256);
  long ops = env_long("INTSET_OPS", 20000);
  int update_pct = (int)env_long("INTSET_UPDATE_PCT", 40);

  stm_init();
  mod_mem_init(0);
  mod_stats_init();

  /* head -> even keys -> tail, built without transactions before any thread. */
  intset_t set;
  node_t *tail = new_node(VAL_MAX, NULL, 0);
  set.head = new_node(VAL_MIN, tail, 0);
  int *initial = calloc(range, sizeof(int));
  node_t *last = set.head;
  for (long key = 0; key < range; key += 2) {
    node_t *node = new_node(key, tail, 0);
    last->next = node;
    last = node;
    initial[key] = 1;
  }

  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)nb_threads);
  thread_data_t *data = calloc(nb_threads, sizeof(thread_data_t));
  pthread_t *threads = calloc(nb_threads, sizeof(pthread_t));
  for (long t = 0; t < nb_threads; t++) {
    data[t] = (thread_data_t){.set = &set,
                              .lutra_style = (int)(t % 2),
                              .seed = (unsigned)(t + 1) * 104729u,
                              .ops = ops,
                              .range = range,
                              .update_pct = update_pct,
                              .added = calloc(range, sizeof(long)),
                              .removed = calloc(range, sizeof(long)),
                              .barrier = &barrier};
    pthread_create(&threads[t], NULL, worker, &data[t]);
  }
  long adds = 0, removes = 0;
  for (long t = 0; t < nb_threads; t++) {
    pthread_join(threads[t], NULL);
    for (long key = 0; key < range; key++) {
      adds += data[t].added[key];
      removes += data[t].removed[key];
    }
  }

  /* Every thread is done: read the list directly. */
  long size = 0, unsorted = 0, wrong = 0;
  int *present = calloc(range, sizeof(int));
  for (node_t *node = set.head->next; node != tail; node = node->next) {
    if (node->next != NULL && node->next->val <= node->val)
      unsorted++;
    if (node->val >= 0 && node->val < range)
      present[node->val] += 1;
    size++;
  }
  for (long key = 0; key < range; key++) {
    long expected = initial[key];
    for (long t = 0; t < nb_threads; t++)
      expected += data[t].added[key] - data[t].removed[key];
    if (expected != present[key]) {
      if (wrong++ < 5)
        fprintf(stderr, "key %ld: present %d, expected %ld\n", key, present[key],
                expected);
    }
  }
  CHECK(atomic_failures == 0, "%ld stm_atomically calls failed", atomic_failures);
  CHECK(unsorted == 0, "%ld nodes out of order", unsorted);
  CHECK(wrong == 0, "%ld keys disagree with the successful adds and removes",
        wrong);
  CHECK(size == (range + 1) / 2 + adds - removes, "size %ld", size);
  CHECK(adds > 0 && removes > 0, "%ld adds, %ld removes succeeded", adds, removes);

  /* A transactional look-up from this thread agrees with the direct reading. */
  stm_init_thread();
  long agree = 0;
  for (long key = 0; key < range; key++)
    agree += set_contains(&set, key) == present[key];
  CHECK(agree == range, "%ld of %ld transactional look-ups agree", agree, range);

  /* Privatize the whole list in one transaction, wait for quiescence, free it. */
  node_t *first;
  START(4, RW);
  first = (node_t *)LOAD(&set.head->next);
  STORE(&set.head->next, tail);
  COMMIT;
  CHECK(stm_quiesce() == LUTRA_OK, "stm_quiesce: %s", lutra_last_error());
  for (node_t *node = first, *next; node != tail; node = next) {
    next = node->next;
    free(node);
  }
  CHECK(set_contains(&set, 0) == 0, "the emptied set still has key 0");
  stm_exit_thread();

  unsigned long commits = 0, aborts = 0;
  CHECK(stm_get_global_stats("global_nb_commits", &commits) == 1, "commits");
  CHECK(stm_get_global_stats("global_nb_aborts", &aborts) == 1, "aborts");
  CHECK(commits >= (unsigned long)(nb_threads * ops), "only %lu commits", commits);
  const char *design = "?", *cm = "?";
  stm_get_parameter("design", &design);
  stm_get_parameter("contention_manager", &cm);
  printf("intset %s/%s: %ld threads, %ld adds, %ld removes, final size %ld, "
         "%lu commits, %lu aborts\n",
         design, cm, nb_threads, adds, removes, size, commits, aborts);

  stm_exit();
  CHECK(lutra_last_error_code() == LUTRA_OK, "stm_exit: %s", lutra_last_error());
  free(set.head);
  free(tail);
  for (long t = 0; t < nb_threads; t++) {
    free(data[t].added);
    free(data[t].removed);
  }
  free(present);
  free(initial);
  free(data);
  free(threads);
  pthread_barrier_destroy(&barrier);
  return check_summary();
}
