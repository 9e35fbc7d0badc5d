/*
 * barriers.c -- every read and write barrier of GCC's TM ABI, for every type,
 * and the transfers (_ITM_memcpy*, _ITM_memmove*, _ITM_memset*):
 *
 * 1. On every thread, in its own buffer: the barriers GCC emits for plain C code
 *    (barriers_emitted.c) and every barrier called by name (barriers_direct.c),
 *    __m256 too if the CPU has AVX (barriers_avx.c, built with -mavx; otherwise
 *    the results say why it was skipped). Every byte of each value, and the bytes
 *    around it, is checked, at aligned and misaligned offsets.
 * 2. Atomicity, on pairs of threads (on Lutra: GCC's libitm cannot run it, see
 *    `handshakes`), driven by a handshake: a reader reads x, then
 *    (inside the same transaction) lets the writer commit a new x and a new value
 *    lying across two words, then reads that value through the barrier under test.
 *    The reader's snapshot must be consistent: the value it returns is the one
 *    written with the x it returns, and that is the writer's (the reader restarts
 *    once). A barrier that read memory outside the transaction, or a torn value,
 *    fails it.
 *
 * barrier-symbols.sh checks that the binary calls every barrier of the ABI and
 * that the emitted_* functions call every barrier GCC emits (run by the Makefile).
 * The results line is the same under GCC's libitm and Lutra.
 */

#include <complex.h>
#include <immintrin.h>
#include <sched.h>
#include <time.h>

#include "barriers.h"
#include "harness.h"

#define MAX_THREADS 1024

static unsigned char buffers[MAX_THREADS][THREAD_BYTES] __attribute__((aligned(64)));
static struct tally tallies[MAX_THREADS] __attribute__((aligned(64)));
static int threads;
static int have_avx;
/* Whether the atomicity cases run: not on GCC's libitm, whose commit waits until
 * every transaction that began before it has ended (privatization safety), so a
 * writer's commit can never happen while the reader waits inside its
 * transaction. */
static int handshakes;
static pthread_barrier_t phase_one_done;

__attribute__((transaction_safe)) void opaque(void) {}

/* One reader and one writer of the atomicity cases. */
struct pair {
  uint64_t x;
  unsigned char area[AREA];
  /* 2 * case + 1: the reader has read x; 2 * case + 2: the writer committed. */
  int step;
  /* Whether the reader has let the writer commit in this case. Only touched
   * outside transactional barriers: a restart does not undo it (a local of the
   * reader would be, as GCC logs a local whose address escapes). */
  int waited;
} __attribute__((aligned(64)));

static struct pair pairs[MAX_THREADS / 2];

/* Waits until pair->step is `step`; a watchdog stops the test after a minute (a
 * handshake that never completes is a failure, not a hang). */
__attribute__((transaction_pure)) static void wait_step(struct pair *pair, int step) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (unsigned long spins = 0; __atomic_load_n(&pair->step, __ATOMIC_ACQUIRE) != step; spins++) {
    sched_yield();
    if (spins % 1024 == 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - start.tv_sec > 60) {
        fprintf(stderr, "FAIL barriers: the handshake never reached step %d\n", step);
        exit(1);
      }
    }
  }
}

/* The reader's half of the handshake, inside its transaction: the first time,
 * tells the writer it has read x and waits for the writer's commit; after a
 * restart, goes on. */
__attribute__((transaction_pure)) static void let_writer_commit(struct pair *pair, int step) {
  if (pair->waited) return;
  pair->waited = 1;
  __atomic_store_n(&pair->step, step, __ATOMIC_RELEASE);
  wait_step(pair, step + 1);
}

/* Sets x and the value before a case. Out of GCC's sight (noipa): otherwise it
 * forwards the plain store of x to the transaction's read, which then reads no x. */
__attribute__((noipa)) static void prepare(struct pair *pair, uint64_t x, size_t offset,
                                           const void *value, size_t size) {
  setup(pair->area, offset, value, size);
  pair->x = x;
  pair->waited = 0;
}

DECLARE(E, long double)
DECLARE(CF, float _Complex)
DECLARE(CD, double _Complex)
DECLARE(CE, long double _Complex)

typedef int m64u __attribute__((vector_size(8), aligned(1)));
typedef float m128u __attribute__((vector_size(16), aligned(1)));

/* Case `number`: the reader reads a `type` at `offset` with READ(at), the writer
 * writes it with WRITE(at, v). */
#define ATOMIC_CASE(name, number, type, kind, offset, READ, WRITE)                    \
  static void reader_##name(struct pair *pair, struct tally *t) {                   \
    type before, got;                                                               \
    uint64_t seen;                                                                  \
    make_value(&before, sizeof before, kind, 2 * number);                           \
    prepare(pair, 2 * number, offset, &before, sizeof before);                      \
    __transaction_atomic {                                                          \
      seen = pair->x;                                                               \
      let_writer_commit(pair, 2 * number + 1);                                      \
      type *at = (type *)(void *)(pair->area + offset);                             \
      got = READ(at);                                                               \
    }                                                                               \
    type expect;                                                                    \
    make_value(&expect, sizeof expect, kind, (unsigned)seen);                       \
    check_value(t, #name " read beside a commit", offset, &got, &expect, sizeof got, kind); \
    t->checks++;                                                                    \
    if (seen != 2 * number + 1)                                                     \
      mismatch(t, #name " read beside a commit", offset, "the writer's commit was not seen"); \
  }                                                                                 \
  static void writer_##name(struct pair *pair) {                                    \
    type v;                                                                         \
    make_value(&v, sizeof v, kind, 2 * number + 1);                                 \
    wait_step(pair, 2 * number + 1);                                                \
    __transaction_atomic {                                                          \
      pair->x = 2 * number + 1;                                                     \
      type *at = (type *)(void *)(pair->area + offset);                             \
      WRITE(at, v);                                                                 \
    }                                                                               \
    __atomic_store_n(&pair->step, 2 * number + 2, __ATOMIC_RELEASE);                \
  }

#define LOAD(at) (*(at))
#define STORE(at, v) (*(at) = (v))

ATOMIC_CASE(u2, 1, uint16_t, PLAIN, 7, LOAD, STORE)
ATOMIC_CASE(u4, 2, uint32_t, PLAIN, 6, LOAD, STORE)
ATOMIC_CASE(u8, 3, uint64_t, PLAIN, 4, LOAD, STORE)
ATOMIC_CASE(f, 4, float, PLAIN, 6, LOAD, STORE)
ATOMIC_CASE(d, 5, double, PLAIN, 4, LOAD, STORE)
ATOMIC_CASE(e, 6, long double, X87, 4, LOAD, STORE)
ATOMIC_CASE(m64, 7, m64u, PLAIN, 4, LOAD, STORE)
ATOMIC_CASE(m128, 8, m128u, PLAIN, 4, LOAD, STORE)
ATOMIC_CASE(cf, 9, float _Complex, PLAIN, 4, LOAD, STORE)
ATOMIC_CASE(cd, 10, double _Complex, PLAIN, 4, LOAD, STORE)
ATOMIC_CASE(ce, 11, long double _Complex, X87, 4, LOAD, STORE)
ATOMIC_CASE(direct_e, 12, long double, X87, 4, _ITM_RE, _ITM_WE)
ATOMIC_CASE(direct_cf, 13, float _Complex, PLAIN, 4, _ITM_RCF, _ITM_WCF)
ATOMIC_CASE(direct_cd, 14, double _Complex, PLAIN, 4, _ITM_RCD, _ITM_WCD)
ATOMIC_CASE(direct_ce, 15, long double _Complex, X87, 4, _ITM_RCE, _ITM_WCE)

#define BOTH(name) {reader_##name, writer_##name}
static const struct {
  void (*reader)(struct pair *, struct tally *);
  void (*writer)(struct pair *);
} atomic_cases[] = {
    BOTH(u2),  BOTH(u4),  BOTH(u8),       BOTH(f),         BOTH(d),
    BOTH(e),   BOTH(m64), BOTH(m128),     BOTH(cf),        BOTH(cd),
    BOTH(ce),  BOTH(direct_e), BOTH(direct_cf), BOTH(direct_cd), BOTH(direct_ce),
};

static void *body(void *arg) {
  intptr_t index = (intptr_t)arg;
  struct tally *t = &tallies[index];
  emitted_cases(buffers[index], t, 1);
  direct_cases(buffers[index], t);
  if (have_avx) avx_cases(buffers[index], t, 1);
  /* Every thread has run transactions before any handshake begins. */
  pthread_barrier_wait(&phase_one_done);
  struct pair *pair = &pairs[index / 2];
  int partner = (int)(index ^ 1);
  if (partner < threads && handshakes)
    for (size_t c = 0; c < sizeof atomic_cases / sizeof *atomic_cases; c++) {
      if (index % 2 == 0)
        atomic_cases[c].reader(pair, t);
      else
        atomic_cases[c].writer(pair);
    }
  return NULL;
}

int main(int argc, char **argv) {
  threads = thread_count(argc, argv);
  __builtin_cpu_init();
  have_avx = __builtin_cpu_supports("avx");
  handshakes = strstr(_ITM_libraryVersion(), "GNU libitm") == NULL;
  if (!handshakes && threads > 1)
    fprintf(stderr, "barriers: atomicity cases skipped on GCC's libitm (its commit waits for "
                    "the reader the case holds inside its transaction)\n");
  if (pthread_barrier_init(&phase_one_done, NULL, (unsigned)threads) != 0) {
    perror("pthread_barrier_init");
    return 1;
  }
  run_threads(threads, body);
  long checks = 0, mismatches = 0;
  for (int i = 0; i < threads; i++) {
    checks += tallies[i].checks;
    mismatches += tallies[i].mismatches;
  }
  CHECK(mismatches == 0, "%ld of %ld barrier checks failed", mismatches, checks);
  /* The number of checks depends on the library (see handshakes): on stderr. */
  fprintf(stderr, "barriers: %ld checks\n", checks);
  printf("barriers: %ld mismatches\n", mismatches);
  if (!have_avx) printf("barriers: __m256 cases skipped: this CPU has no AVX\n");
  return check_summary();
}
