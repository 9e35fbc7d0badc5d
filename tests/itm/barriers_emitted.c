/*
 * barriers_emitted.c -- the barriers GCC itself emits for plain C code in
 * __transaction_atomic, for every type it has a barrier for, with each access
 * pattern that makes it choose a variant (the patterns: EMITTED in barriers.h;
 * barrier-symbols.sh checks that the emitted_* functions call them all).
 *
 * Types: uint8_t .. uint64_t (U1 .. U8), float (F), double (D), long double (E),
 * __m64 and __m128 (M64, M128; __m256 is in barriers_avx.c), and the complex
 * types, which GCC 12 lowers to U8 (float) or to _ITM_memcpy (double, long
 * double). Then memcpy, memmove (both directions of overlap), memset and structure
 * copies inside transactions, which GCC turns into _ITM_memcpyRtWt, RnWt, RtWn,
 * _ITM_memmoveRtWt and _ITM_memsetW, over lengths that cross Lutra's 256-byte
 * chunks, at misaligned addresses.
 */

#include <complex.h>
#include <immintrin.h>
#include <stdint.h>

#include "barriers.h"

/* The vector types at any address: GCC keeps M64 / M128 barriers for them, and
 * its uninstrumented path (taken by a serial transaction) does not fault. Scalars
 * keep their own types (an aligned(1) float is lowered to U4, not F). */
typedef int m64u __attribute__((vector_size(8), aligned(1)));
typedef float m128u __attribute__((vector_size(16), aligned(1)));

EMITTED(u1, uint8_t, PLAIN)
EMITTED(u2, uint16_t, PLAIN)
EMITTED(u4, uint32_t, PLAIN)
EMITTED(u8, uint64_t, PLAIN)
EMITTED(f, float, PLAIN)
EMITTED(d, double, PLAIN)
EMITTED(e, long double, X87)
EMITTED(m64, m64u, PLAIN)
EMITTED(m128, m128u, PLAIN)
EMITTED(cf, float _Complex, PLAIN)
EMITTED(cd, double _Complex, PLAIN)
EMITTED(ce, long double _Complex, X87)

/* A structure copied whole: GCC copies it with _ITM_memcpyRtWt. */
struct block {
  unsigned char bytes[300];
};

/* Whether area[from, from + len) equals expect and every other byte of area[0,
 * size) is FILL. */
static void check_range(struct tally *t, const char *what, const unsigned char *area,
                        size_t size, size_t from, const unsigned char *expect, size_t len) {
  t->checks++;
  for (size_t i = 0; i < size; i++) {
    unsigned char want = i >= from && i < from + len ? expect[i - from] : FILL;
    if (area[i] != want) {
      mismatch(t, what, from, i >= from && i < from + len ? "a byte copied is wrong"
                                                           : "a byte beside the range changed");
      return;
    }
  }
}

#define BIG 1024

__attribute__((noinline)) static void emitted_transfers(unsigned char *big, struct tally *t) {
  static const size_t lengths[] = {1, 7, 8, 9, 255, 256, 257, 600};
  unsigned char local[BIG], expect[BIG];
  for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++)
    for (size_t from = 0; from < 10; from += 3) {
      size_t len = lengths[l];
      make_value(expect, len, PLAIN, (unsigned)(len + from));
      /* memcpy from a local (RnWt) */
      memset(big, FILL, BIG);
      memcpy(local, expect, len);
      __transaction_atomic { memcpy(big + from, local, len); }
      check_range(t, "memcpy RnWt", big, BIG, from, expect, len);
      /* memcpy to a local (RtWn) */
      memset(local, 0, sizeof local);
      __transaction_atomic { memcpy(local, big + from, len); }
      t->checks++;
      if (memcmp(local, expect, len) != 0) mismatch(t, "memcpy RtWn", from, "a byte copied is wrong");
      /* memcpy between shared ranges (RtWt) */
      __transaction_atomic { memcpy(big + 512 + from, big + from, len < 500 ? len : 500); }
      t->checks++;
      if (memcmp(big + 512 + from, expect, len < 500 ? len : 500) != 0)
        mismatch(t, "memcpy RtWt", from, "a byte copied is wrong");
      /* memmove up by 5 over itself, then down by 5 back (RtWt, both directions) */
      if (len <= 600) {
        memset(big, FILL, BIG);
        memcpy(big + 100 + from, expect, len);
        __transaction_atomic { memmove(big + 105 + from, big + 100 + from, len); }
        unsigned char moved[BIG];
        memset(moved, FILL, BIG);
        memcpy(moved + 100 + from, expect, len);
        memmove(moved + 105 + from, moved + 100 + from, len);
        t->checks++;
        if (memcmp(big, moved, BIG) != 0) mismatch(t, "memmove RtWt up", from, "bytes differ");
        __transaction_atomic { memmove(big + 100 + from, big + 105 + from, len); }
        memmove(moved + 100 + from, moved + 105 + from, len);
        t->checks++;
        if (memcmp(big, moved, BIG) != 0) mismatch(t, "memmove RtWt down", from, "bytes differ");
      }
      /* memset (W) */
      memset(big, FILL, BIG);
      int byte = (int)(len & 0x7F);
      __transaction_atomic { memset(big + from, byte, len); }
      memset(expect, byte, len);
      check_range(t, "memset W", big, BIG, from, expect, len);
    }
  /* structure copies (RtWt) */
  struct block *src = (struct block *)(void *)(big + 1), *dst = (struct block *)(void *)(big + 401);
  make_value(expect, sizeof(struct block), PLAIN, 77);
  memset(big, FILL, BIG);
  memcpy(src, expect, sizeof *src);
  __transaction_atomic { *dst = *src; }
  check_range(t, "struct copy RtWt", big + 400, 400, 1, expect, sizeof *src);
}

void emitted_cases(unsigned char *areas, struct tally *t, int yes) {
  emitted_u1(areas, t, yes);
  emitted_u2(areas, t, yes);
  emitted_u4(areas, t, yes);
  emitted_u8(areas, t, yes);
  emitted_f(areas, t, yes);
  emitted_d(areas, t, yes);
  emitted_e(areas, t, yes);
  emitted_m64(areas, t, yes);
  emitted_m128(areas, t, yes);
  emitted_cf(areas, t, yes);
  emitted_cd(areas, t, yes);
  emitted_ce(areas, t, yes);
  emitted_transfers(areas + AREA, t);
}
