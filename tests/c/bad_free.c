/*
 * bad_free.c -- stm_free refuses, at the call, what it can tell is no block to
 * free: a block on the caller's stack, a global, and a block freed already (twice
 * in one transaction, or again while the first free waits to be given back to the
 * C library). Each returns with LUTRA_EINVAL and frees nothing; it was accepted
 * before, and the bad free surfaced later in the C library (abort: "free():
 * invalid pointer", "double free detected") during reclamation or stm_exit. A free
 * whose transaction rolled back is forgotten: the block may be freed again.
 *
 * The second-transaction case is made deterministic with a bystander thread that
 * stays inside a transaction meanwhile (a handshake, no sleep): no block freed
 * after it began can be given back before it ends, so the first free is still
 * pending when the second comes.
 */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <lutra/stm.h>
#include <lutra/mod_mem.h>

#include "check.h"

static stm_word_t global_block[4];
static stm_word_t shared;

/* Frees block in a transaction of its own; returns the last error code. */
static int free_in_tx(void *block) {
  int code;
  stm_tx_attr_t attr = {{.id = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  lutra_clear_error();
  stm_free(block, 2 * sizeof(stm_word_t));
  code = lutra_last_error_code();
  stm_commit();
  return code;
}

/* The bystander: inside a transaction from "in" to "out". */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int in, out;

static void *bystander(void *arg) {
  (void)arg;
  stm_init_thread();
  stm_tx_attr_t attr = {{.id = 2}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  (void)stm_load(&shared);
  pthread_mutex_lock(&lock);
  in = 1;
  pthread_cond_broadcast(&cond);
  while (!out) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  stm_commit();
  stm_exit_thread();
  return NULL;
}

static volatile int attempts;

int main(void) {
  alarm(120);
  stm_init();
  stm_init_thread();

  stm_word_t on_stack[4] = {0};
  CHECK(free_in_tx(on_stack) == LUTRA_EINVAL, "a block on the stack: %s", lutra_last_error());
  CHECK(free_in_tx(global_block) == LUTRA_EINVAL, "a global: %s", lutra_last_error());

  /* Twice in one transaction: the second is refused, the block freed once. */
  stm_word_t *twice = malloc(2 * sizeof(stm_word_t));
  int first = 0, second = 0;
  {
    stm_tx_attr_t attr = {{.id = 3}};
    sigjmp_buf *env = stm_start(attr);
    if (env != NULL) sigsetjmp(*env, 0);
    lutra_clear_error();
    stm_free(twice, 2 * sizeof(stm_word_t));
    first = lutra_last_error_code();
    stm_free(twice, 2 * sizeof(stm_word_t));
    second = lutra_last_error_code();
    stm_commit();
  }
  CHECK(first == LUTRA_OK && second == LUTRA_EINVAL, "twice in one transaction: %d, %d", first,
        second);

  /* A free rolled back is forgotten: the next attempt frees the block. */
  stm_word_t *again = stm_malloc(2 * sizeof(stm_word_t));
  int code = -100;
  attempts = 0;
  {
    stm_tx_attr_t attr = {{.id = 4}};
    sigjmp_buf *env = stm_start(attr);
    if (env != NULL) sigsetjmp(*env, 0);
    attempts = attempts + 1;
    lutra_clear_error();
    stm_free(again, 2 * sizeof(stm_word_t));
    code = lutra_last_error_code();
    if (attempts == 1) stm_abort(0);
    stm_commit();
  }
  CHECK(attempts == 2 && code == LUTRA_OK, "freed again after a rollback: %d attempts, %d",
        attempts, code);

  /* Twice in two transactions, the first free still pending. */
  pthread_t other;
  pthread_create(&other, NULL, bystander, NULL);
  pthread_mutex_lock(&lock);
  while (!in) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  stm_word_t *block = stm_malloc(2 * sizeof(stm_word_t));
  CHECK(free_in_tx(block) == LUTRA_OK, "the first free");
  CHECK(free_in_tx(block) == LUTRA_EINVAL, "the second free, in another transaction: %s",
        lutra_last_error());
  pthread_mutex_lock(&lock);
  out = 1;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  pthread_join(other, NULL);

  stm_exit_thread();
  lutra_clear_error();
  stm_exit();
  CHECK(lutra_last_error_code() == LUTRA_OK, "stm_exit: %s", lutra_last_error());
  return check_summary();
}
