/*
 * api.c -- checks Lutra's C API function by function: parameters, statistics
 * names, misuse error codes, flat nesting, explicit aborts (with and without
 * retry), typed and byte-range accessors, transactional memory, stm_atomically
 * (jump and jump-free styles, nesting, cancelling, concurrency), irrevocability,
 * quiescence, and the library and thread lifecycle. Written against
 * <lutra/stm.h> (builds with -I include).
 */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lutra/mod_mem.h>
#include <lutra/mod_stats.h>
#include <lutra/stm.h>
#include <lutra/wrappers.h>

#include "check.h"

#define START(tid)                                         \
  {                                                        \
    stm_tx_attr_t _a = {{.id = tid}};                      \
    sigjmp_buf *_e = stm_start(_a);                        \
    if (_e != NULL)                                        \
      last_jump = sigsetjmp(*_e, 0)
#define COMMIT \
  stm_commit(); \
  }

/* What the last sigsetjmp returned (0 on the first pass). */
static volatile int last_jump;
/* Attempts of the current test transaction. */
static volatile int attempts;

static int code_is(int expected) { return lutra_last_error_code() == expected; }

/* ---- before stm_init ----------------------------------------------------- */

static void test_before_init(void) {
  const char *text = NULL;
  CHECK(stm_init_thread() == NULL && code_is(LUTRA_ENOINIT),
        "stm_init_thread before stm_init: %d", lutra_last_error_code());
  CHECK(strlen(lutra_last_error()) > 0, "an error message");
  CHECK(stm_get_parameter("design", &text) == 0 && code_is(LUTRA_ENOINIT),
        "stm_get_parameter before stm_init");
  CHECK(stm_quiesce() == LUTRA_ENOINIT, "stm_quiesce before stm_init");
  /* (A transactional call without engine aborts the process: see loud.c.) */
  stm_exit();
  CHECK(code_is(LUTRA_ENOINIT), "stm_exit before stm_init");
  lutra_clear_error();
  CHECK(code_is(LUTRA_OK) && lutra_last_error()[0] == '\0', "lutra_clear_error");
}

/* ---- initialization and parameters --------------------------------------- */

static void test_init_and_parameters(void) {
  const char *text = NULL;
  CHECK(lutra_stm_init_with("write-through", NULL) == LUTRA_EINVAL,
        "unknown design");
  CHECK(strstr(lutra_last_error(), "write-through") != NULL, "message: %s",
        lutra_last_error());
  CHECK(lutra_stm_init_with(NULL, "polite") == LUTRA_EINVAL, "unknown manager");
  CHECK(lutra_stm_init_with("wb-etl", "timestamp") == LUTRA_OK, "init_with: %s",
        lutra_last_error());
  CHECK(lutra_stm_init_with("wb-ctl", NULL) == LUTRA_EALREADY, "init twice");
  lutra_clear_error();
  stm_init();
  CHECK(code_is(LUTRA_OK), "stm_init after init does nothing");

  CHECK(stm_get_parameter("design", &text) == 1 && strcmp(text, "wb-etl") == 0,
        "design");
  CHECK(stm_get_parameter("contention_manager", &text) == 1 &&
            strcmp(text, "timestamp") == 0,
        "contention_manager");
  CHECK(stm_get_parameter("version", &text) == 1 &&
            strcmp(text, LUTRA_VERSION) == 0,
        "version %s", text);
  CHECK(stm_get_parameter("initial_rw_set_size", &text) == 0 &&
            code_is(LUTRA_EINVAL),
        "unknown parameter");
  CHECK(stm_get_parameter("design", NULL) == 0 && code_is(LUTRA_EINVAL),
        "NULL val");
  CHECK(stm_get_parameter(NULL, &text) == 0 && code_is(LUTRA_EINVAL),
        "NULL name");
  CHECK(stm_set_parameter("design", (void *)"wb-ctl") == 0 &&
            code_is(LUTRA_EINVAL),
        "stm_set_parameter");
}

/* ---- misuse on a thread that is not registered, or outside transactions ---- */

static int add_one(void *arg) {
  stm_word_t *word = arg;
  stm_store(word, stm_load(word) + 1);
  return 0;
}

static void test_misuse(void) {
  stm_word_t word = 41, value = 0;
  unsigned long count = 0;
  stm_tx_attr_t attr = {.attrs = 0};

  CHECK(stm_start(attr) == NULL && code_is(LUTRA_ENOTHREAD), "start unregistered");
  CHECK(stm_active() == 0, "not active unregistered");
  CHECK(stm_commit() == 0 && code_is(LUTRA_ENOTHREAD), "commit unregistered");
  stm_exit_thread();
  CHECK(code_is(LUTRA_ENOTHREAD), "stm_exit_thread unregistered");
  CHECK(stm_atomically(add_one, &word) == LUTRA_ENOTHREAD, "atomically unregistered");
  CHECK(stm_get_stats("nb_commits", &count) == 0 && code_is(LUTRA_ENOTHREAD),
        "local stats unregistered");
  CHECK(stm_get_stats("global_nb_commits", &count) == 1, "global stats need no thread");
  CHECK(stm_current_tx() == NULL, "no handle unregistered");

  struct stm_tx *tx = stm_init_thread();
  CHECK(tx != NULL, "stm_init_thread: %s", lutra_last_error());
  CHECK(stm_init_thread() == tx && stm_current_tx() == tx, "same handle");

  CHECK(stm_load(&word) == 0 && code_is(LUTRA_ENOTX), "load outside");
  stm_store(&word, 7);
  CHECK(word == 41 && code_is(LUTRA_ENOTX), "store outside");
  CHECK(stm_commit() == 0 && code_is(LUTRA_ENOTX), "commit outside");
  lutra_clear_error();
  stm_abort(0);
  CHECK(code_is(LUTRA_ENOTX), "abort outside returns");
  CHECK(lutra_stm_load(&word, &value) == LUTRA_ENOTX, "lutra_stm_load outside");
  CHECK(lutra_stm_store(&word, 3) == LUTRA_ENOTX && word == 41,
        "lutra_stm_store outside");
  CHECK(stm_load_int((volatile int *)&word) == 0 && code_is(LUTRA_ENOTX),
        "typed load outside");
  void *block = malloc(16);
  stm_free(block, 16);
  CHECK(code_is(LUTRA_ENOTX), "stm_free outside frees nothing");
  free(block);
  block = stm_malloc(10);
  CHECK(block != NULL, "stm_malloc outside is malloc");
  free(block);
  CHECK(stm_get_env() != NULL, "stm_get_env outside");
  CHECK(stm_active() == 0 && stm_aborted() == 0 && stm_irrevocable() == 0,
        "idle flags");
}

/* ---- transactions, nesting, explicit aborts ------------------------------ */

static stm_word_t counter;
static stm_word_t cell;

static void test_nesting(void) {
  counter = 0;
  stm_tx_attr_t attr = {{.id = 7}};
  sigjmp_buf *env = stm_start(attr);
  CHECK(env != NULL, "outermost start returns a buffer");
  if (env != NULL)
    sigsetjmp(*env, 0);
  CHECK(stm_active() == 1, "active");
  stm_store(&counter, stm_load(&counter) + 1);
  lutra_clear_error();
  CHECK(stm_start(attr) == NULL && code_is(LUTRA_OK), "nested start returns NULL");
  CHECK(stm_get_env() == NULL, "no buffer while nested");
  stm_store(&counter, stm_load(&counter) + 1);
  CHECK(stm_commit() == 1 && stm_active() == 1, "nested commit closes a level");
  CHECK(stm_get_attributes().id == 7, "attributes kept");
  CHECK(stm_commit() == 1 && stm_active() == 0, "outer commit");
  CHECK(counter == 2, "both levels committed: %lu", (unsigned long)counter);
}

static void test_explicit_abort_retries(void) {
  attempts = 0;
  cell = 0;
  START(8);
  attempts = attempts + 1;
  stm_store(&cell, 100 + attempts);
  if (attempts == 1)
    stm_abort(0x400 | 0x3);
  COMMIT;
  CHECK(attempts == 2, "restarted once: %d attempts", attempts);
  CHECK(last_jump == (0x400 | STM_ABORT_EXPLICIT | STM_PATH_INSTRUMENTED),
        "sigsetjmp returned 0x%x", last_jump);
  CHECK(cell == 102, "only the second attempt's write: %lu", (unsigned long)cell);
}

static void test_explicit_abort_no_retry(void) {
  cell = 5;
  attempts = 0;
  START(9);
  attempts = attempts + 1;
  stm_store(&cell, 6);
  stm_abort(STM_ABORT_NO_RETRY);
  CHECK(stm_active() == 0 && stm_aborted() == 1, "ended, aborted");
  lutra_clear_error();
  CHECK(stm_commit() == 0 && code_is(LUTRA_ENOTX), "nothing to commit");
  }
  CHECK(attempts == 1 && cell == 5, "not retried, rolled back");

  /* The no_retry attribute ends the transaction on any abort. */
  stm_tx_attr_t attr = {{.id = 10, .no_retry = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  stm_store(&cell, 7);
  stm_abort(0);
  CHECK(stm_aborted() == 1 && cell == 5, "no_retry attribute");
  START(11);
  CHECK(stm_aborted() == 0, "a new transaction clears stm_aborted");
  COMMIT;
}

/* ---- typed and byte-range accessors -------------------------------------- */

struct mixed {
  char c;
  unsigned char uc;
  short s;
  unsigned short us;
  int i;
  unsigned int ui;
  long l;
  unsigned long ul;
  float f;
  double d;
  void *p;
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  char tail[13];
};

static struct mixed shared_mixed;
static union {
  uint8_t bytes[40];
  stm_word_t words[5];
} buf;

static void test_wrappers(void) {
  struct mixed want;
  memset(&want, 0x5A, sizeof want);
  memset(&shared_mixed, 0x5A, sizeof shared_mixed);
  want.c = 'x';
  want.uc = 200;
  want.s = -1234;
  want.us = 54321;
  want.i = -7654321;
  want.ui = 4000000000u;
  want.l = -1234567890123L;
  want.ul = 9876543210UL;
  want.f = 3.25f;
  want.d = -2.5e100;
  want.p = &want;
  want.u8 = 0xAB;
  want.u16 = 0xBEEF;
  want.u32 = 0xDEADBEEF;
  want.u64 = 0x0123456789ABCDEFULL;

  struct mixed *m = &shared_mixed;
  int same = 0;
  START(20);
  stm_store_char(&m->c, want.c);
  stm_store_uchar(&m->uc, want.uc);
  stm_store_short(&m->s, want.s);
  stm_store_ushort(&m->us, want.us);
  stm_store_int(&m->i, want.i);
  stm_store_uint(&m->ui, want.ui);
  stm_store_long(&m->l, want.l);
  stm_store_ulong(&m->ul, want.ul);
  stm_store_float(&m->f, want.f);
  stm_store_double(&m->d, want.d);
  stm_store_ptr((volatile void **)&m->p, want.p);
  stm_store_u8(&m->u8, want.u8);
  stm_store_u16(&m->u16, want.u16);
  stm_store_u32(&m->u32, want.u32);
  stm_store_u64(&m->u64, want.u64);
  /* Read back inside the transaction (buffered, partial words merged). */
  same = stm_load_char(&m->c) == want.c && stm_load_uchar(&m->uc) == want.uc &&
         stm_load_short(&m->s) == want.s && stm_load_ushort(&m->us) == want.us &&
         stm_load_int(&m->i) == want.i && stm_load_uint(&m->ui) == want.ui &&
         stm_load_long(&m->l) == want.l && stm_load_ulong(&m->ul) == want.ul &&
         stm_load_float(&m->f) == want.f && stm_load_double(&m->d) == want.d &&
         stm_load_ptr((volatile void **)&m->p) == want.p &&
         stm_load_u8(&m->u8) == want.u8 && stm_load_u16(&m->u16) == want.u16 &&
         stm_load_u32(&m->u32) == want.u32 && stm_load_u64(&m->u64) == want.u64;
  COMMIT;
  CHECK(same, "typed loads read the transaction's own writes");
  CHECK(memcmp(&shared_mixed, &want, sizeof want) == 0,
        "typed stores wrote exactly their bytes");

  /* Unaligned values and ranges that span words. */
  memset(&buf, 0, sizeof buf);
  uint8_t pattern[19];
  for (int i = 0; i < 19; i++)
    pattern[i] = (uint8_t)(i + 1);
  uint8_t back[19] = {0};
  int spanning = 0;
  stm_word_t misaligned = 0;
  int misaligned_refused = 0;
  START(21);
  stm_store_int((volatile int *)(buf.bytes + 6), 0x11223344);
  stm_store_bytes(buf.bytes + 13, pattern, sizeof pattern);
  stm_set_bytes(buf.bytes + 33, 0xEE, 5);
  spanning = stm_load_int((volatile int *)(buf.bytes + 6));
  stm_load_bytes(buf.bytes + 13, back, sizeof back);
  lutra_clear_error();
  misaligned = stm_load((volatile stm_word_t *)(buf.bytes + 3));
  misaligned_refused = code_is(LUTRA_EINVAL);
  COMMIT;
  int expected_int = 0x11223344;
  CHECK(spanning == 0x11223344 && memcmp(buf.bytes + 6, &expected_int, 4) == 0,
        "an int across two words");
  CHECK(memcmp(back, pattern, sizeof pattern) == 0 &&
            memcmp(buf.bytes + 13, pattern, sizeof pattern) == 0,
        "bytes across three words");
  CHECK(buf.bytes[32] == 0 && buf.bytes[33] == 0xEE && buf.bytes[37] == 0xEE &&
            buf.bytes[38] == 0 && buf.bytes[12] == 0 && buf.bytes[5] == 0,
        "stm_set_bytes and the neighbours");
  CHECK(misaligned == 0 && misaligned_refused, "a misaligned word load is refused");

  /* stm_store2 writes the masked bits; a misaligned stm_store2 is refused. */
  buf.words[0] = 0x1111111111111111ULL;
  START(22);
  stm_store2(&buf.words[0], 0xAB00, 0xFF00);
  lutra_clear_error();
  stm_store2((volatile stm_word_t *)(buf.bytes + 1), 1, ~(stm_word_t)0);
  same = code_is(LUTRA_EINVAL);
  COMMIT;
  CHECK(buf.words[0] == 0x111111111111AB11ULL, "stm_store2: %lx",
        (unsigned long)buf.words[0]);
  CHECK(same, "misaligned stm_store2 refused");
  START(23);
  lutra_clear_error();
  CHECK(stm_load(NULL) == 0 && code_is(LUTRA_EINVAL), "NULL address");
  stm_load_bytes(buf.bytes, NULL, 4);
  CHECK(code_is(LUTRA_EINVAL), "NULL buffer");
  COMMIT;
}

/* ---- transactional memory ------------------------------------------------ */

struct pair {
  stm_word_t a, b;
};
static struct pair *volatile published;

static void test_memory(void) {
  attempts = 0;
  START(30);
  attempts = attempts + 1;
  struct pair *pair = stm_malloc(sizeof *pair);
  pair->a = 1; /* private until published */
  pair->b = 2;
  stm_store_ptr((volatile void **)&published, pair);
  if (attempts == 1)
    stm_abort(0); /* the first block is freed by the rollback */
  COMMIT;
  CHECK(attempts == 2 && published != NULL && published->a == 1,
        "allocation published");

  stm_word_t *zeroed = NULL;
  START(31);
  struct pair *pair = stm_load_ptr((volatile void **)&published);
  stm_store_ptr((volatile void **)&published, NULL);
  stm_free(pair, sizeof *pair);
  stm_free(NULL, 0);
  zeroed = stm_calloc(4, sizeof(stm_word_t));
  lutra_clear_error();
  stm_free((char *)zeroed + 1, 8);
  attempts = code_is(LUTRA_EINVAL);
  COMMIT;
  CHECK(published == NULL, "unpublished and freed");
  CHECK(attempts == 1, "misaligned stm_free refused");
  CHECK(zeroed != NULL && zeroed[0] == 0 && zeroed[3] == 0, "stm_calloc zeroes");
  free(zeroed);
  CHECK(stm_calloc(SIZE_MAX, 2) == NULL && code_is(LUTRA_ENOMEM), "calloc overflow");

  /* stm_free2 takes a part of the block. */
  stm_word_t *block = malloc(4 * sizeof(stm_word_t));
  START(32);
  stm_free2(block, 2 * sizeof(stm_word_t), sizeof(stm_word_t));
  COMMIT;
  CHECK(lutra_last_error_code() != LUTRA_EINVAL, "stm_free2");
}

/* ---- stm_atomically ------------------------------------------------------ */

static int calls;

static int store_then_cancel(void *arg) {
  stm_store(arg, 99);
  return 7;
}

static int jump_free_add(void *arg) {
  stm_word_t value;
  int status = lutra_stm_load(arg, &value);
  if (status != LUTRA_OK)
    return status;
  return lutra_stm_store(arg, value + 10);
}

static int abort_first_call(void *arg) {
  calls++;
  stm_store(arg, (stm_word_t)calls);
  if (calls == 1)
    stm_abort(0);
  return 0;
}

static int abort_no_retry(void *arg) {
  stm_store(arg, 1000);
  stm_abort(STM_ABORT_NO_RETRY);
  return 0;
}

static int abort_no_retry_then_fail(void *arg) {
  stm_store(arg, 1000);
  stm_abort(STM_ABORT_NO_RETRY);
  return 5;
}

static int inner_cancels(void *arg) {
  stm_store(arg, 77);
  return 3;
}

static int outer_of_cancelling_inner(void *arg) {
  stm_word_t *word = arg;
  stm_store(word, stm_load(word) + 1);
  return stm_atomically(inner_cancels, word);
}

static int commits_itself(void *arg) {
  stm_store(arg, 1);
  stm_commit();
  return 0;
}

static int nested_outer(void *arg) {
  stm_word_t *word = arg;
  int inner = stm_atomically(add_one, word);
  if (inner != 0)
    return inner;
  stm_store(word, stm_load(word) * 2);
  return 0;
}

#define RACERS 4
#define RACES 2000
static stm_word_t race_counter;

static void *racer(void *arg) {
  long id = (long)arg;
  stm_init_thread();
  for (int i = 0; i < RACES; i++) {
    int status = stm_atomically(id % 2 ? jump_free_add : add_one, &race_counter);
    if (status != 0)
      CHECK(0, "racer %ld: %d %s", id, status, lutra_last_error());
  }
  stm_exit_thread();
  return NULL;
}

static void test_atomically(void) {
  stm_word_t word = 0;
  CHECK(stm_atomically(add_one, &word) == 0 && word == 1, "commits");
  CHECK(stm_atomically(store_then_cancel, &word) == 7 && word == 1,
        "non-zero cancels");
  CHECK(stm_aborted() == 1, "a cancelled transaction counts as aborted");
  CHECK(stm_atomically(jump_free_add, &word) == 0 && word == 11, "jump-free");
  calls = 0;
  CHECK(stm_atomically(abort_first_call, &word) == 0 && calls == 2 && word == 2,
        "an abort inside fn retries it");
  CHECK(stm_atomically(abort_no_retry, &word) == LUTRA_EABORTED && word == 2,
        "STM_ABORT_NO_RETRY ends it");
  CHECK(stm_atomically(abort_no_retry_then_fail, &word) == LUTRA_EABORTED &&
            word == 2,
        "an abort not retried wins over fn's value");
  CHECK(stm_atomically(outer_of_cancelling_inner, &word) == 3 && word == 2,
        "a nested cancel returned by the outer fn rolls both back");
  stm_tx_attr_t no_retry = {{.id = 40, .no_retry = 1}};
  calls = 0;
  CHECK(stm_atomically_attr(no_retry, abort_first_call, &word) == LUTRA_EABORTED &&
            word == 2,
        "no_retry attribute");
  CHECK(stm_atomically(commits_itself, &word) == LUTRA_EINVAL, "fn may not commit");
  CHECK(stm_atomically(NULL, &word) == LUTRA_EINVAL, "NULL fn");
  word = 5;
  CHECK(stm_atomically(nested_outer, &word) == 0 && word == 12, "nested: %lu",
        (unsigned long)word);
  word = 5;
  START(41);
  CHECK(stm_atomically(add_one, &word) == 0 && stm_active() == 1,
        "atomically inside a transaction joins it");
  COMMIT;
  CHECK(word == 6, "joined transaction committed");

  pthread_t threads[RACERS];
  race_counter = 0;
  for (long t = 0; t < RACERS; t++)
    pthread_create(&threads[t], NULL, racer, (void *)t);
  for (long t = 0; t < RACERS; t++)
    pthread_join(threads[t], NULL);
  CHECK(race_counter == (RACERS / 2) * RACES * 11,
        "concurrent counter %lu", (unsigned long)race_counter);
}

/* ---- irrevocability, statistics, quiescence ------------------------------ */

static void test_irrevocable(void) {
  int flag = 0;
  START(50);
  flag = stm_set_irrevocable(1) == 1 && stm_irrevocable() == 1;
  stm_store(&counter, 1);
  COMMIT;
  CHECK(flag && stm_irrevocable() == 0 && counter == 1, "irrevocable inside");
  CHECK(stm_set_irrevocable(1) == 1, "request outside");
  START(51);
  flag = stm_irrevocable();
  COMMIT;
  CHECK(flag == 1, "the next transaction starts irrevocable");
  START(52);
  flag = stm_irrevocable();
  COMMIT;
  CHECK(flag == 0, "only the next one");
  /* The same with transactions without attributes, which begin and commit on the
     straight paths: a request made after a straight commit still holds. */
  START(0);
  COMMIT;
  START(0);
  COMMIT;
  CHECK(stm_set_irrevocable(1) == 1, "request outside, after straight commits");
  START(0);
  flag = stm_irrevocable();
  COMMIT;
  CHECK(flag == 1, "a straight begin honours the request");
  START(0);
  flag = stm_irrevocable();
  COMMIT;
  CHECK(flag == 0, "and only for the next transaction");
}

static void test_stats(void) {
  unsigned long before = 0, after = 0, explicit_aborts = 0, aborts = 0, max = 0;
  unsigned int read_only = 9;
  CHECK(stm_get_stats("nb_commits", &before) == 1, "nb_commits");
  START(60);
  COMMIT;
  CHECK(stm_get_local_stats("nb_commits", &after) == 1 && after == before + 1,
        "one more commit: %lu -> %lu", before, after);
  CHECK(stm_get_stats("nb_aborts_explicit", &explicit_aborts) == 1 &&
            explicit_aborts >= 5,
        "explicit aborts %lu", explicit_aborts);
  CHECK(stm_get_stats("nb_aborts", &aborts) == 1 && aborts >= explicit_aborts,
        "nb_aborts %lu", aborts);
  CHECK(stm_get_stats("max_retries", &max) == 1 && max >= 1, "max_retries");
  stm_tx_attr_t ro = {{.id = 61, .read_only = 1}};
  sigjmp_buf *env = stm_start(ro);
  if (env != NULL)
    sigsetjmp(*env, 0);
  stm_commit();
  CHECK(stm_get_stats("read_only", &read_only) == 1 && read_only == 1, "read_only");
  /* The read-only hint alone takes stm_start's general path, which honours it. */
  stm_tx_attr_t hint = {{.id = 0, .read_only = 1}};
  env = stm_start(hint);
  if (env != NULL)
    sigsetjmp(*env, 0);
  CHECK(stm_get_attributes().attrs == hint.attrs, "the hint's attributes");
  stm_commit();
  CHECK(stm_get_stats("read_only", &read_only) == 1 && read_only == 1,
        "read_only on the fast path");
  START(0);
  COMMIT;
  CHECK(stm_get_stats("read_only", &read_only) == 1 && read_only == 0,
        "no hint, not read-only");
  const char *const names[] = {"nb_aborts_locked_read", "nb_aborts_locked_write",
                               "nb_aborts_validate_read", "nb_aborts_validate_write",
                               "nb_aborts_validate_commit", "nb_aborts_killed",
                               "nb_aborts_irrevocable", "nb_aborts_extend_ws",
                               "nb_aborts_other"};
  int known = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    known += stm_get_stats(names[i], &after);
  CHECK(known == 9, "every per-reason name is known");
  CHECK(stm_get_global_stats("global_nb_commits", &after) == 1 && after > before,
        "global commits");
  CHECK(stm_get_global_stats("nb_commits", &after) == 0 && code_is(LUTRA_EINVAL),
        "global lookup refuses local names");
  CHECK(stm_get_local_stats("global_nb_commits", &after) == 0 &&
            code_is(LUTRA_EINVAL),
        "local lookup refuses global names");
  CHECK(stm_get_stats("no_such_statistic", &after) == 0 && code_is(LUTRA_EINVAL),
        "unknown statistic");
  CHECK(stm_get_stats("nb_commits", NULL) == 0, "NULL val");
  CHECK(stm_get_clock() > 0, "clock");
}

static void test_quiesce_and_thread_exit(void) {
  CHECK(stm_quiesce() == LUTRA_OK, "stm_quiesce outside");
  START(70);
  CHECK(stm_quiesce() == LUTRA_EINTX, "stm_quiesce inside");
  stm_exit_thread();
  CHECK(code_is(LUTRA_EINTX) && stm_active() == 1, "stm_exit_thread inside");
  stm_exit();
  CHECK(code_is(LUTRA_EINTX) && stm_active() == 1, "stm_exit inside");
  COMMIT;
}

/* ---- the fast path follows the registration ------------------------------- */

/* stm_load / stm_store / stm_start / stm_commit take a fast path on a registered
 * plain thread: after stm_exit_thread they must report misuse again (the state
 * they reached is gone), and a new registration must be used at once. */
static void *fast_path_thread(void *arg) {
  stm_word_t *word = arg;
  stm_tx_attr_t attr = {.attrs = 0};
  for (int round = 0; round < 3; round++) {
    CHECK(stm_init_thread() != NULL, "register: %s", lutra_last_error());
    CHECK(stm_atomically(add_one, word) == 0, "a transaction");
    stm_exit_thread();
    lutra_clear_error();
    CHECK(stm_load(word) == 0 && code_is(LUTRA_ENOTHREAD), "load after exit");
    stm_store(word, 99);
    CHECK(code_is(LUTRA_ENOTHREAD) && *word == (stm_word_t)round + 1,
          "store after exit writes nothing");
    CHECK(stm_start(attr) == NULL && code_is(LUTRA_ENOTHREAD), "start after exit");
    CHECK(stm_commit() == 0 && code_is(LUTRA_ENOTHREAD), "commit after exit");
  }
  /* Registered when the thread ends: unregistered by its exit. */
  CHECK(stm_init_thread() != NULL, "register: %s", lutra_last_error());
  return NULL;
}

/* Byte counters sharing one word, each thread incrementing its own with the typed
 * accessors (the fast path's masked stores): no increment may clobber a
 * neighbour's byte. */
#define BYTE_THREADS 4
#define BYTE_ROUNDS 200
static union {
  stm_word_t word;
  uint8_t bytes[sizeof(stm_word_t)];
} byte_counters;

/* One transaction per call: the restart jumps back into this frame only. */
static void increment_byte(volatile uint8_t *byte) {
  START(71);
  stm_store_u8(byte, stm_load_u8(byte) + 1);
  COMMIT;
}

static void *byte_counter(void *arg) {
  long id = (long)arg;
  stm_init_thread();
  for (int i = 0; i < BYTE_ROUNDS; i++)
    increment_byte(&byte_counters.bytes[id]);
  stm_exit_thread();
  return NULL;
}

static void test_sub_word_counters(void) {
  pthread_t threads[BYTE_THREADS];
  for (long id = 0; id < BYTE_THREADS; id++)
    pthread_create(&threads[id], NULL, byte_counter, (void *)id);
  for (long id = 0; id < BYTE_THREADS; id++)
    pthread_join(threads[id], NULL);
  for (int id = 0; id < BYTE_THREADS; id++)
    CHECK(byte_counters.bytes[id] == BYTE_ROUNDS, "byte %d: %u", id,
          byte_counters.bytes[id]);
  for (size_t id = BYTE_THREADS; id < sizeof(stm_word_t); id++)
    CHECK(byte_counters.bytes[id] == 0, "untouched byte %zu", id);
}

static void test_fast_path_registration(void) {
  stm_word_t word = 0;
  pthread_t thread;
  pthread_create(&thread, NULL, fast_path_thread, &word);
  pthread_join(thread, NULL);
  CHECK(word == 3, "three transactions: %lu", (unsigned long)word);
}

/* ---- granules: the words of an aligned 32 bytes share a record (as tinySTM) - */

/* Two aligned granules: the reader reads word[0], the neighbour commits word[1],
 * then the reader writes other (the next granule) and commits, which validates its
 * read: word[1]'s commit moved word[0]'s record, so the first attempt restarts.
 * With a record per word it would commit at once. */
static struct {
  _Alignas(32) stm_word_t word[4];
  _Alignas(32) stm_word_t other;
} granule;
static pthread_barrier_t neighbour_ready, granule_read, neighbour_committed;
static volatile int granule_attempts;

static void *granule_neighbour(void *arg) {
  (void)arg;
  stm_init_thread();
  pthread_barrier_wait(&neighbour_ready);
  pthread_barrier_wait(&granule_read);
  CHECK(stm_atomically(add_one, &granule.word[1]) == 0, "the neighbour commits");
  pthread_barrier_wait(&neighbour_committed);
  stm_exit_thread();
  return NULL;
}

static int read_across_a_neighbours_commit(void *arg) {
  (void)arg;
  int first = ++granule_attempts == 1;
  stm_word_t zero = stm_load(&granule.word[0]);
  if (first) {
    pthread_barrier_wait(&granule_read);
    pthread_barrier_wait(&neighbour_committed);
  }
  stm_store(&granule.other, zero + 1);
  return 0;
}

static void test_granules(void) {
  pthread_t thread;
  pthread_barrier_init(&neighbour_ready, NULL, 2);
  pthread_barrier_init(&granule_read, NULL, 2);
  pthread_barrier_init(&neighbour_committed, NULL, 2);
  pthread_create(&thread, NULL, granule_neighbour, NULL);
  /* Both threads registered before the reader begins: no attempt is solo. */
  pthread_barrier_wait(&neighbour_ready);
  CHECK(stm_atomically(read_across_a_neighbours_commit, NULL) == 0,
        "the reader commits");
  pthread_join(thread, NULL);
  CHECK(granule_attempts == 2,
        "a commit to word 1 of a granule restarts a reader of word 0: %d attempts",
        granule_attempts);
  CHECK(granule.word[1] == 1 && granule.other == 1, "both commits landed");
  pthread_barrier_destroy(&neighbour_ready);
  pthread_barrier_destroy(&granule_read);
  pthread_barrier_destroy(&neighbour_committed);
}

/* ---- lifecycle: registered threads keep the engine ------------------------ */

static pthread_barrier_t registered, released;

static void *stays_registered(void *arg) {
  int exit_cleanly = arg != NULL;
  stm_init_thread();
  pthread_barrier_wait(&registered);
  pthread_barrier_wait(&released);
  if (exit_cleanly)
    stm_exit_thread();
  return NULL; /* otherwise unregistered when the thread ends */
}

static void test_lifecycle(void) {
  const char *text = NULL;
  for (int clean = 0; clean < 2; clean++) {
    pthread_t thread;
    pthread_barrier_init(&registered, NULL, 2);
    pthread_barrier_init(&released, NULL, 2);
    pthread_create(&thread, NULL, stays_registered, clean ? (void *)1 : NULL);
    pthread_barrier_wait(&registered);
    stm_exit();
    CHECK(code_is(LUTRA_EBUSY), "stm_exit with a registered thread: %d",
          lutra_last_error_code());
    CHECK(stm_get_parameter("design", &text) == 1, "the engine still runs");
    pthread_barrier_wait(&released);
    pthread_join(thread, NULL);
    pthread_barrier_destroy(&registered);
    pthread_barrier_destroy(&released);
  }
  lutra_clear_error();
  stm_exit();
  CHECK(code_is(LUTRA_OK), "stm_exit: %s", lutra_last_error());
  CHECK(stm_get_parameter("design", &text) == 0 && code_is(LUTRA_ENOINIT),
        "gone after stm_exit");

  /* (stm_init with a bad variable aborts the process: see loud.c.) */
  setenv("LUTRA_STM_DESIGN", "write-through", 1);
  CHECK(lutra_stm_init_with(NULL, NULL) == LUTRA_EINVAL,
        "lutra_stm_init_with with a bad LUTRA_STM_DESIGN");
  CHECK(strstr(lutra_last_error(), "LUTRA_STM_DESIGN=\"write-through\"") != NULL &&
            strstr(lutra_last_error(), "wb-ctl, wb-etl") != NULL,
        "the message names the variable, value and valid names: %s",
        lutra_last_error());
  CHECK(stm_init_thread() == NULL && code_is(LUTRA_ENOINIT), "not initialized");
  setenv("LUTRA_STM_DESIGN", "wb-ctl", 1);
  setenv("LUTRA_STM_CM", "suicide", 1);
  lutra_clear_error();
  stm_init();
  CHECK(code_is(LUTRA_OK), "stm_init from the environment: %s", lutra_last_error());
  CHECK(stm_get_parameter("contention_manager", &text) == 1 &&
            strcmp(text, "suicide") == 0,
        "manager from LUTRA_STM_CM");
  stm_word_t word = 0;
  stm_init_thread();
  CHECK(stm_atomically(add_one, &word) == 0 && word == 1, "the new engine works");
  stm_exit();
  CHECK(code_is(LUTRA_OK), "final stm_exit: %s", lutra_last_error());
}

int main(void) {
  unsetenv("LUTRA_STM_DESIGN");
  unsetenv("LUTRA_STM_CM");
  test_before_init();
  test_init_and_parameters();
  test_misuse();
  test_nesting();
  test_explicit_abort_retries();
  test_explicit_abort_no_retry();
  test_wrappers();
  test_memory();
  test_atomically();
  test_irrevocable();
  test_stats();
  test_quiesce_and_thread_exit();
  test_fast_path_registration();
  test_sub_word_counters();
  test_granules();
  test_lifecycle();
  return check_summary();
}
