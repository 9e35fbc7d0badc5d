/*
 * tm.h -- the one transactional vocabulary of the C benchmark. Every workload in
 * this directory is written once with these macros and built these ways:
 *
 *   -DTM_SEQ    sequential: no instrumentation, no locks (run at 1 thread only);
 *   -DTM_LUTRA  Lutra, through tinySTM's stm.h (stm_start + sigsetjmp, stm_load,
 *               stm_store, stm_commit), linked against liblutra.a or
 *               liblutra.so, with or without LUTRA_INLINE;
 *   -DTM_TINYSTM tinySTM itself (its stm.h, mod_mem.h, libstm.a), through the
 *               same calls as TM_LUTRA: the one difference is how the engine
 *               starts (tinySTM's stm_malloc / stm_free need mod_mem_init) and
 *               how aborts are counted (tinySTM's stm_get_stats knows
 *               "nb_aborts" only when built with TM_STATISTICS; -1 otherwise);
 *   -DTM_ITM    GCC's own STM: gcc -fgnu-tm, __transaction_atomic, libitm;
 *   -DTM_FLOOR  the floor (one thread only): the sequential code with every
 *               access behind the inline test that stm.h's LUTRA_INLINE
 *               compiles (a thread-local word, then the plain access, or a call
 *               that is taken only at a thread's first access), and no
 *               transaction begin or commit at all: the least a one-thread STM
 *               whose accesses are instrumented inline can cost.
 *
 * Rules for code written with them (so that all three builds mean the same):
 *  - Shared fields are machine words (intptr_t or pointers), read with TM_READ
 *    and written with TM_WRITE inside TM_BEGIN / TM_END.
 *  - A transaction body assigns every local it later reads after TM_BEGIN (with
 *    Lutra an abort jumps back to TM_BEGIN's sigsetjmp and runs the body again).
 *  - Functions called inside a transaction are marked TM_SAFE (GCC checks them)
 *    and allocate with TM_MALLOC / TM_FREE.
 */
#ifndef CBENCH_TM_H
#define CBENCH_TM_H

#include <stdint.h>
#include <stdlib.h>

#if defined(TM_LUTRA) || defined(TM_TINYSTM)
/* tinySTM's C API (stm.h), served by Lutra or by tinySTM. */
#if defined(TM_LUTRA)
#include <lutra/stm.h>
#include <lutra/mod_mem.h>
#include <lutra/mod_stats.h>
#define TM_NAME "lutra"
#define TM_STARTUP() stm_init()
/* Aborts the calling thread met since TM_THREAD_ENTER, or -1 if unknown. */
static inline long tm_thread_aborts(void) {
  unsigned long n = 0;
  return stm_get_local_stats("nb_aborts", &n) == 1 ? (long)n : -1;
}
#else
#include <stm.h>
#include <mod_mem.h>
#define TM_NAME "tinystm"
#define TM_STARTUP() (stm_init(), mod_mem_init(0))
/* Aborts the calling thread met, or -1 if tinySTM counts none (built without
 * TM_STATISTICS). */
static inline long tm_thread_aborts(void) {
  unsigned int n = 0;
  return stm_get_stats("nb_aborts", &n) == 1 ? (long)n : -1;
}
#endif
#define TM_SHUTDOWN() stm_exit()
#define TM_THREAD_ENTER() ((void)stm_init_thread())
#define TM_THREAD_EXIT() stm_exit_thread()
#define TM_BEGIN_ATTR(ro)                                      \
  do {                                                         \
    stm_tx_attr_t tm_attr_ = {{.id = 0, .read_only = (ro)}};   \
    sigjmp_buf *tm_env_ = stm_start(tm_attr_);                 \
    if (tm_env_ != NULL)                                       \
      (void)sigsetjmp(*tm_env_, 0);                            \
    {
#define TM_END()  \
  }               \
  stm_commit();   \
  }               \
  while (0)
#define TM_READ(x) ((__typeof__(x))stm_load((volatile stm_word_t *)(void *)&(x)))
#define TM_WRITE(x, v) \
  stm_store((volatile stm_word_t *)(void *)&(x), (stm_word_t)(v))
#define TM_MALLOC(n) stm_malloc(n)
#define TM_FREE(p, n) stm_free((p), (n))
#define TM_SAFE

#elif defined(TM_ITM)
#define TM_NAME "libitm"
#define TM_STARTUP() ((void)0)
#define TM_SHUTDOWN() ((void)0)
#define TM_THREAD_ENTER() ((void)0)
#define TM_THREAD_EXIT() ((void)0)
#define TM_BEGIN_ATTR(ro) do { __transaction_atomic {
#define TM_END() } } while (0)
#define TM_READ(x) (x)
#define TM_WRITE(x, v) ((x) = (v))
#define TM_MALLOC(n) malloc(n)
#define TM_FREE(p, n) free(p)
#define TM_SAFE __attribute__((transaction_safe))
static inline long tm_thread_aborts(void) { return -1; }

#elif defined(TM_SEQ) || defined(TM_FLOOR)
/* Both run without transactions: no engine, no begin, no commit. */
#define TM_STARTUP() ((void)0)
#define TM_SHUTDOWN() ((void)0)
#define TM_THREAD_ENTER() ((void)0)
#define TM_THREAD_EXIT() ((void)0)
#define TM_BEGIN_ATTR(ro) do {
#define TM_END() } while (0)
#define TM_MALLOC(n) malloc(n)
#define TM_FREE(p, n) free(p)
#define TM_SAFE
static inline long tm_thread_aborts(void) { return 0; }

#if defined(TM_SEQ)
#define TM_NAME "seq"
#define TM_READ(x) (x)
#define TM_WRITE(x, v) ((x) = (v))
#else
#define TM_NAME "floor"
/* The undo window of the floor's writes, as stm.h's `lutra_undo_window`: NULL
 * until the thread's first access (harness.c opens it, out of line). */
struct tm_floor_window {
  intptr_t *next;
  intptr_t *end;
};
extern __thread struct tm_floor_window tm_floor_window
    __attribute__((tls_model("initial-exec")));
intptr_t tm_floor_load_slow(volatile intptr_t *addr);
void tm_floor_store_slow(volatile intptr_t *addr, intptr_t value);

static inline intptr_t tm_floor_load(volatile intptr_t *addr) {
  if (__builtin_expect(tm_floor_window.next != NULL, 1))
    return *addr;
  return tm_floor_load_slow(addr);
}

static inline void tm_floor_store(volatile intptr_t *addr, intptr_t value) {
  intptr_t *entry = tm_floor_window.next;
  if (__builtin_expect(entry != tm_floor_window.end, 1) &&
      ((intptr_t)addr & (intptr_t)(sizeof(intptr_t) - 1)) == 0) {
    entry[0] = (intptr_t)addr;
    entry[1] = *addr;
    tm_floor_window.next = entry + 2;
    *addr = value;
    return;
  }
  tm_floor_store_slow(addr, value);
}

#define TM_READ(x) ((__typeof__(x))tm_floor_load((volatile intptr_t *)(void *)&(x)))
#define TM_WRITE(x, v) \
  tm_floor_store((volatile intptr_t *)(void *)&(x), (intptr_t)(v))
#endif

#else
#error "define one of TM_SEQ, TM_LUTRA, TM_TINYSTM, TM_ITM, TM_FLOOR"
#endif

#define TM_BEGIN() TM_BEGIN_ATTR(0)
#define TM_BEGIN_RO() TM_BEGIN_ATTR(1)

#endif /* CBENCH_TM_H */
