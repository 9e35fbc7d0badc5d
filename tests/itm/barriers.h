/*
 * barriers.h -- shared by the translation units of the barriers test (barriers.c,
 * barriers_emitted.c, barriers_direct.c, barriers_avx.c): test values whose every
 * byte differs from its neighbours and from the fill, and the checks that compare
 * memory and values byte by byte.
 *
 * Each case works in a 64-byte area of its thread's own buffer, filled with FILL
 * except for the value under test, at an offset of 0 to 15 (aligned, misaligned
 * inside a word, and across words). After a transaction the value's bytes must be
 * exactly the expected ones and every other byte of the area must still be FILL.
 *
 * x87 values (long double, _Complex long double) have 10 significant bytes in each
 * 16-byte part: the other 6 are padding, which a store may write (GCC's libitm
 * writes the whole object too), so the checks skip them; test values are normal
 * x87 numbers, which load and store unchanged.
 */

#ifndef LUTRA_ITM_BARRIERS_H
#define LUTRA_ITM_BARRIERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FILL 0xA5
/* Bytes of a case's area. */
#define AREA 64
/* Bytes of a thread's buffer: one area, then 1024 bytes for the transfers. */
#define THREAD_BYTES 2048
/* Offsets tried: every byte of two words. */
#define OFFSETS 16

/* How a type's bytes are laid out. */
enum kind {
  PLAIN, /* every byte significant */
  X87,   /* 16-byte parts of which bytes 0-9 are significant */
};

/* One thread's results. */
struct tally {
  long checks;
  long mismatches;
  /* What a transaction writes to keep GCC from dropping one that holds only
   * direct barrier calls (transaction_pure functions). */
  long touched;
};

/* Whether byte i of a value of this kind is significant. */
static inline int significant(enum kind kind, size_t i) {
  return kind == PLAIN || i % 16 < 10;
}

/* Fills a value of `size` bytes from `seed`: no byte is FILL, neighbouring bytes
 * differ; for X87, each part is a normal number (integer bit set, exponent
 * neither 0 nor all ones). */
static inline void make_value(void *out, size_t size, enum kind kind, unsigned seed) {
  unsigned char *bytes = out;
  for (size_t i = 0; i < size; i++) {
    unsigned char b = (unsigned char)(seed * 59u + i * 13u + 1u);
    bytes[i] = b == FILL ? (unsigned char)(b ^ 0x3C) : b;
  }
  if (kind == X87)
    for (size_t part = 0; part < size; part += 16) {
      bytes[part + 7] |= 0x80;
      bytes[part + 9] = (unsigned char)((bytes[part + 9] & 0x80) | 0x3F);
    }
}

/* Fills the area with FILL and places the `size` bytes of `value` at `offset`.
 * Out of GCC's sight (noipa): otherwise it would know what the area holds and
 * drop the transactional reads that follow. */
__attribute__((noipa, unused)) static void setup(unsigned char *area, size_t offset, const void *value, size_t size) {
  memset(area, FILL, AREA);
  memcpy(area + offset, value, size);
}

static inline void mismatch(struct tally *t, const char *what, size_t offset, const char *how) {
  t->mismatches++;
  fprintf(stderr, "FAIL %s at offset %zu: %s\n", what, offset, how);
}

/* Checks that the area holds `expect` (`size` bytes of this kind) at `offset`
 * and FILL everywhere else. */
static inline void check_memory(struct tally *t, const char *what, const unsigned char *area,
                                size_t offset, const void *expect, size_t size, enum kind kind) {
  const unsigned char *e = expect;
  t->checks++;
  for (size_t i = 0; i < AREA; i++) {
    if (i >= offset && i < offset + size) {
      if (significant(kind, i - offset) && area[i] != e[i - offset]) {
        mismatch(t, what, offset, "a byte of the value is wrong in memory");
        return;
      }
    } else if (area[i] != FILL) {
      mismatch(t, what, offset, "a byte beside the value changed");
      return;
    }
  }
}

/* Checks that a value read (`size` bytes of this kind) is `expect`. */
static inline void check_value(struct tally *t, const char *what, size_t offset, const void *got,
                               const void *expect, size_t size, enum kind kind) {
  const unsigned char *g = got, *e = expect;
  t->checks++;
  for (size_t i = 0; i < size; i++)
    if (significant(kind, i) && g[i] != e[i]) {
      mismatch(t, what, offset, "a byte of the value read is wrong");
      return;
    }
}

/* Cases run by each thread on its own buffer of THREAD_BYTES (barriers_emitted.c, barriers_direct.c;
 * barriers_avx.c only if the CPU has AVX). */
void emitted_cases(unsigned char *areas, struct tally *t, int yes);
void direct_cases(unsigned char *areas, struct tally *t);
void avx_cases(unsigned char *areas, struct tally *t, int yes);

/* An empty transaction_safe function GCC cannot see into (barriers.c): between two
 * accesses to the same location it keeps GCC from merging them, so that the second
 * becomes an "after read" / "after write" barrier. */
__attribute__((transaction_safe)) void opaque(void);

/* The barriers GCC emits for T's plain C accesses (see barriers_emitted.c):
 *
 *   x = *p                          _ITM_R<T>
 *   *p = v                          _ITM_W<T>
 *   a = *p; opaque(); b = *p        _ITM_R<T>, then _ITM_RaR<T>
 *   *p = v; opaque(); b = *p        _ITM_W<T>, then _ITM_RaW<T>
 *   a = *p; *p = v                  _ITM_RfW<T>, then _ITM_WaW<T>
 *   a = *p; opaque(); if (yes) *p = v   _ITM_R<T>, then _ITM_WaR<T>
 *
 * at offsets 0 to 15 of the area. Functions named emitted_* hold only code GCC
 * instruments itself (barrier-symbols.sh relies on it). */
#define EMITTED(name, type, kind)                                                    \
  __attribute__((noinline)) static void emitted_##name(unsigned char *area,         \
                                                       struct tally *t, int yes) {  \
    for (size_t offset = 0; offset < OFFSETS; offset++) {                          \
      type *at = (type *)(void *)(area + offset);                                  \
      type old, v, a, b;                                                           \
      make_value(&old, sizeof old, kind, 2 * (unsigned)offset + 1);                \
      make_value(&v, sizeof v, kind, 2 * (unsigned)offset + 2);                    \
      /* Inside transactions only locals whose address is never taken: GCC would  \
       * instrument an escaped one as shared memory. */                            \
      type new_value = v, first, second;                                           \
      setup(area, offset, &old, sizeof old);                                       \
      __transaction_atomic { *at = new_value; }                                    \
      check_memory(t, #name " W", area, offset, &v, sizeof v, kind);               \
      __transaction_atomic { first = *at; }                                        \
      a = first;                                                                   \
      check_value(t, #name " R", offset, &a, &v, sizeof v, kind);                  \
      setup(area, offset, &old, sizeof old);                                       \
      __transaction_atomic {                                                       \
        first = *at;                                                               \
        opaque();                                                                  \
        second = *at;                                                              \
      }                                                                            \
      a = first;                                                                   \
      b = second;                                                                  \
      check_value(t, #name " R", offset, &a, &old, sizeof old, kind);              \
      check_value(t, #name " RaR", offset, &b, &old, sizeof old, kind);            \
      __transaction_atomic {                                                       \
        *at = new_value;                                                           \
        opaque();                                                                  \
        second = *at;                                                              \
      }                                                                            \
      b = second;                                                                  \
      check_value(t, #name " RaW", offset, &b, &v, sizeof v, kind);                \
      check_memory(t, #name " W", area, offset, &v, sizeof v, kind);               \
      setup(area, offset, &old, sizeof old);                                       \
      __transaction_atomic {                                                       \
        first = *at;                                                               \
        *at = new_value;                                                           \
      }                                                                            \
      a = first;                                                                   \
      check_value(t, #name " RfW", offset, &a, &old, sizeof old, kind);            \
      check_memory(t, #name " WaW", area, offset, &v, sizeof v, kind);             \
      setup(area, offset, &old, sizeof old);                                       \
      __transaction_atomic {                                                       \
        first = *at;                                                               \
        opaque();                                                                  \
        if (yes) *at = new_value;                                                  \
      }                                                                            \
      a = first;                                                                   \
      check_value(t, #name " R", offset, &a, &old, sizeof old, kind);              \
      check_memory(t, #name " WaR", area, offset, &v, sizeof v, kind);             \
    }                                                                              \
  }

/* Direct calls of a type's seven barriers by name (see barriers_direct.c):
 * declared transaction_pure, the calls stay as written on both of GCC's code
 * paths. Functions named direct_* hold these calls. */
#define PURE __attribute__((transaction_pure))

#define DECLARE(T, type)                                                             \
  PURE type _ITM_R##T(const type *);                                                \
  PURE type _ITM_RaR##T(const type *);                                              \
  PURE type _ITM_RaW##T(const type *);                                              \
  PURE type _ITM_RfW##T(const type *);                                              \
  PURE void _ITM_W##T(type *, type);                                                \
  PURE void _ITM_WaR##T(type *, type);                                              \
  PURE void _ITM_WaW##T(type *, type);

/* The seven barriers of T: the four reads see the old value, each write leaves
 * exactly the new one. */
#define DIRECT(T, type, kind)                                                         \
  DECLARE(T, type)                                                                  \
  __attribute__((noinline)) static void direct_##T(unsigned char *area, struct tally *t) {                    \
    for (size_t offset = 0; offset < OFFSETS; offset++) {                           \
      type *at = (type *)(void *)(area + offset);                                   \
      type old, v, a, b, c, d;                                                      \
      make_value(&old, sizeof old, kind, 3 * (unsigned)offset + 101);               \
      make_value(&v, sizeof v, kind, 3 * (unsigned)offset + 102);                   \
      setup(area, offset, &old, sizeof old);                                        \
      __transaction_atomic {                                                        \
        t->touched++;                                                               \
        a = _ITM_R##T(at);                                                          \
        b = _ITM_RaR##T(at);                                                        \
        c = _ITM_RaW##T(at);                                                        \
        d = _ITM_RfW##T(at);                                                        \
      }                                                                             \
      check_value(t, "_ITM_R" #T, offset, &a, &old, sizeof old, kind);              \
      check_value(t, "_ITM_RaR" #T, offset, &b, &old, sizeof old, kind);            \
      check_value(t, "_ITM_RaW" #T, offset, &c, &old, sizeof old, kind);            \
      check_value(t, "_ITM_RfW" #T, offset, &d, &old, sizeof old, kind);            \
      check_memory(t, "_ITM_R" #T " (memory)", area, offset, &old, sizeof old, kind); \
      __transaction_atomic {                                                        \
        t->touched++;                                                               \
        _ITM_W##T(at, v);                                                           \
        a = _ITM_RaW##T(at);                                                        \
      }                                                                             \
      check_memory(t, "_ITM_W" #T, area, offset, &v, sizeof v, kind);               \
      check_value(t, "_ITM_RaW" #T " after _ITM_W" #T, offset, &a, &v, sizeof v, kind); \
      setup(area, offset, &old, sizeof old);                                        \
      __transaction_atomic {                                                        \
        t->touched++;                                                               \
        _ITM_WaR##T(at, v);                                                         \
      }                                                                             \
      check_memory(t, "_ITM_WaR" #T, area, offset, &v, sizeof v, kind);             \
      setup(area, offset, &old, sizeof old);                                        \
      __transaction_atomic {                                                        \
        t->touched++;                                                               \
        _ITM_WaW##T(at, old);                                                       \
        _ITM_WaW##T(at, v);                                                         \
      }                                                                             \
      check_memory(t, "_ITM_WaW" #T, area, offset, &v, sizeof v, kind);             \
    }                                                                               \
  }

#endif /* LUTRA_ITM_BARRIERS_H */
