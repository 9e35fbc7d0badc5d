/*
 * misaligned.c -- word accesses at an address that is not aligned to a word are
 * refused, and sized accesses write exactly their own bytes. stm_load / stm_store /
 * lutra_stm_load / lutra_stm_store at a misaligned address report LUTRA_EINVAL and
 * read or write nothing (stm_store2 refused it already); the neighbouring words keep
 * their values after the transaction commits. The typed accessors of wrappers.h
 * (8 to 64 bits, float, double, pointer) at every offset of a word, the values that
 * span two words included, change exactly the bytes of the value. Each case runs in
 * a solo transaction (the thread is alone with the engine) and in an instrumented
 * one (a second thread is registered, so no transaction runs solo).
 */

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <lutra/stm.h>
#include <lutra/wrappers.h>

#include "check.h"

#define WORDS 4
#define FILL 0xA5

/* Four words, filled with FILL. */
static stm_word_t area[WORDS] __attribute__((aligned(64)));

static void fill(void) { memset(area, FILL, sizeof area); }

/* Whether every byte but [from, from + len) still holds FILL. */
static int others_untouched(size_t from, size_t len) {
  const unsigned char *bytes = (const unsigned char *)area;
  for (size_t i = 0; i < sizeof area; i++)
    if ((i < from || i >= from + len) && bytes[i] != FILL) return 0;
  return 1;
}

static int all_untouched(void) { return others_untouched(0, 0); }

/* A misaligned stm_store inside a transaction: refused, nothing written. */
static void word_store(const char *mode, size_t offset) {
  fill();
  volatile stm_word_t *at = (volatile stm_word_t *)((char *)area + offset);
  stm_tx_attr_t attr = {{.id = 1}};
  lutra_clear_error();
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  stm_store(at, 0x1122334455667788u);
  int code = lutra_last_error_code();
  stm_word_t read = stm_load(at);
  int load_code = lutra_last_error_code();
  CHECK(stm_commit() == 1, "%s: the transaction commits", mode);
  CHECK(code == LUTRA_EINVAL, "%s: stm_store at +%zu: LUTRA_EINVAL (got %d)", mode, offset, code);
  CHECK(read == 0 && load_code == LUTRA_EINVAL, "%s: stm_load at +%zu: 0, LUTRA_EINVAL (got %lx, %d)",
        mode, offset, (unsigned long)read, load_code);
  CHECK(all_untouched(), "%s: stm_store at +%zu wrote nothing, neighbours included", mode, offset);
}

/* The jump-free accessors, in stm_atomically. */
struct status_pair {
  size_t offset;
  int store;
  int load;
  stm_word_t value;
};

static int status_body(void *arg) {
  struct status_pair *p = arg;
  volatile stm_word_t *at = (volatile stm_word_t *)((char *)area + p->offset);
  p->value = 7;
  p->store = lutra_stm_store(at, 0x1122334455667788u);
  p->load = lutra_stm_load(at, &p->value);
  return 0;
}

static void status_store(const char *mode, size_t offset) {
  fill();
  struct status_pair p = {.offset = offset};
  CHECK(stm_atomically(status_body, &p) == 0, "%s: stm_atomically commits", mode);
  CHECK(p.store == LUTRA_EINVAL, "%s: lutra_stm_store at +%zu: %d", mode, offset, p.store);
  CHECK(p.load == LUTRA_EINVAL && p.value == 7, "%s: lutra_stm_load at +%zu: %d, value untouched",
        mode, offset, p.load);
  CHECK(all_untouched(), "%s: lutra_stm_store at +%zu wrote nothing", mode, offset);
}

/* Every typed store at every offset of the second word writes exactly its bytes
 * (and its load reads them back). */
#define TYPED(type, store, load, value)                                          \
  do {                                                                           \
    for (volatile size_t offset = 8; offset < 16; offset++) {                    \
      fill();                                                                    \
      type v = (value);                                                          \
      type got;                                                                  \
      volatile type *at = (volatile type *)((char *)area + offset);              \
      stm_tx_attr_t attr = {{.id = 2}};                                          \
      sigjmp_buf *env = stm_start(attr);                                         \
      if (env != NULL) sigsetjmp(*env, 0);                                       \
      store(at, v);                                                              \
      got = load(at);                                                            \
      stm_commit();                                                              \
      type stored;                                                               \
      memcpy(&stored, (char *)area + offset, sizeof stored);                     \
      CHECK(memcmp(&got, &v, sizeof v) == 0 && memcmp(&stored, &v, sizeof v) == 0, \
            "%s: " #store " at +%zu stores and loads the value", mode, offset);  \
      CHECK(others_untouched(offset, sizeof(type)),                              \
            "%s: " #store " at +%zu wrote only its %zu bytes", mode, offset,     \
            sizeof(type));                                                       \
    }                                                                            \
  } while (0)

static void typed(const char *mode) {
  TYPED(uint8_t, stm_store_u8, stm_load_u8, 0x11);
  TYPED(uint16_t, stm_store_u16, stm_load_u16, 0x1122);
  TYPED(uint32_t, stm_store_u32, stm_load_u32, 0x11223344u);
  TYPED(uint64_t, stm_store_u64, stm_load_u64, 0x1122334455667788u);
  TYPED(int, stm_store_int, stm_load_int, -12345);
  TYPED(long, stm_store_long, stm_load_long, -1234567890123L);
  TYPED(float, stm_store_float, stm_load_float, 1.5f);
  TYPED(double, stm_store_double, stm_load_double, -2.25);
  TYPED(void *, stm_store_ptr, stm_load_ptr, (void *)area);
}

static void run(const char *mode) {
  for (size_t offset = 1; offset < sizeof(stm_word_t); offset++) {
    word_store(mode, offset);
    status_store(mode, offset);
  }
  typed(mode);
}

/* A second registered thread: no transaction of the main thread runs solo. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int registered, done;

static void *bystander(void *arg) {
  (void)arg;
  stm_init_thread();
  pthread_mutex_lock(&lock);
  registered = 1;
  pthread_cond_broadcast(&cond);
  while (!done) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  stm_exit_thread();
  return NULL;
}

int main(void) {
  stm_init();
  stm_init_thread();
  run("solo");
  pthread_t other;
  pthread_create(&other, NULL, bystander, NULL);
  pthread_mutex_lock(&lock);
  while (!registered) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  run("instrumented");
  pthread_mutex_lock(&lock);
  done = 1;
  pthread_cond_broadcast(&cond);
  pthread_mutex_unlock(&lock);
  pthread_join(other, NULL);
  stm_exit_thread();
  stm_exit();
  return check_summary();
}
