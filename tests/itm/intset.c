/*
 * intset.c -- a sorted linked list of integers whose insert and remove are
 * transaction_safe functions that allocate and free nodes inside the transaction
 * (GCC turns malloc and free into _ITM_malloc and _ITM_free). Each thread counts
 * what it added and removed; at the end the list is sorted, without duplicates, and
 * its size is the initial size plus the net count.
 */

#include "harness.h"

#define RANGE 256
#define OPERATIONS 60000 /* in all */

typedef struct node {
  long key;
  struct node *next;
} node;

static node *head;
static int threads;
static long net_change;

__attribute__((transaction_safe)) static int set_insert(long key) {
  node *prev = head, *cur = head->next;
  while (cur->key < key) {
    prev = cur;
    cur = cur->next;
  }
  if (cur->key == key) return 0;
  node *fresh = malloc(sizeof *fresh);
  fresh->key = key;
  fresh->next = cur;
  prev->next = fresh;
  return 1;
}

__attribute__((transaction_safe)) static int set_remove(long key) {
  node *prev = head, *cur = head->next;
  while (cur->key < key) {
    prev = cur;
    cur = cur->next;
  }
  if (cur->key != key) return 0;
  prev->next = cur->next;
  free(cur);
  return 1;
}

__attribute__((transaction_safe)) static int set_contains(long key) {
  node *cur = head->next;
  while (cur->key < key) cur = cur->next;
  return cur->key == key;
}

static void *worker(void *arg) {
  uint64_t seed = 0xD1B54A32D192ED03ULL * ((uint64_t)(intptr_t)arg + 7);
  long change = 0;
  for (long i = 0; i < OPERATIONS / threads; i++) {
    uint64_t r = next_random(&seed);
    long key = (long)((r >> 16) % RANGE);
    int done;
    switch (r % 4) {
      case 0:
        __transaction_atomic { done = set_insert(key); }
        change += done;
        break;
      case 1:
        __transaction_atomic { done = set_remove(key); }
        change -= done;
        break;
      default:
        __transaction_atomic { done = set_contains(key); }
        (void)done;
    }
  }
  __atomic_fetch_add(&net_change, change, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv) {
  threads = thread_count(argc, argv);
  node *tail = malloc(sizeof *tail);
  head = malloc(sizeof *head);
  tail->key = RANGE + 1;
  tail->next = NULL;
  head->key = -1;
  head->next = tail;
  long initial = 0;
  for (long key = 0; key < RANGE; key += 2) initial += set_insert(key);
  run_threads(threads, worker);
  long size = 0, previous = -1;
  int sorted = 1;
  for (node *cur = head->next; cur != tail; cur = cur->next) {
    sorted &= cur->key > previous;
    previous = cur->key;
    size++;
  }
  CHECK(sorted, "the list is not sorted or has duplicates");
  CHECK(size == initial + net_change, "size %ld, expected %ld", size, initial + net_change);
  printf("intset: sorted %s, size matches the net count: %s\n", sorted ? "yes" : "no",
         size == initial + net_change ? "yes" : "no");
  return check_summary();
}
