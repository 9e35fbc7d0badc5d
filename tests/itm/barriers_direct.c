/*
 * barriers_direct.c -- every barrier of the ABI called by name inside
 * __transaction_atomic, including those GCC 12 never emits itself (_ITM_RCF ..
 * _ITM_WaWCE, the "after read" / "after write" forms of _ITM_memcpy and
 * _ITM_memmove, _ITM_memsetWaR / WaW), which other compilers and hand-written code
 * may call. Declared transaction_pure, the calls stay as written on both of GCC's
 * code paths. Each reads or writes at offsets 0 to 15 (aligned, misaligned, across
 * words) and every byte is checked. __m256 is in barriers_avx.c.
 */

#include <complex.h>
#include <immintrin.h>
#include <stdint.h>

#include "barriers.h"

DIRECT(U1, uint8_t, PLAIN)
DIRECT(U2, uint16_t, PLAIN)
DIRECT(U4, uint32_t, PLAIN)
DIRECT(U8, uint64_t, PLAIN)
DIRECT(F, float, PLAIN)
DIRECT(D, double, PLAIN)
DIRECT(E, long double, X87)
DIRECT(M64, __m64, PLAIN)
DIRECT(M128, __m128, PLAIN)
DIRECT(CF, float _Complex, PLAIN)
DIRECT(CD, double _Complex, PLAIN)
DIRECT(CE, long double _Complex, X87)

#define BIG 1024
#define LEN 300

/* Fills big with FILL and a pattern at [src, src + LEN), local with the pattern. */
static void transfer_setup(unsigned char *big, unsigned char *local, unsigned char *expect,
                           unsigned seed) {
  make_value(expect, LEN, PLAIN, seed);
  memset(big, FILL, BIG);
  memcpy(big + 3, expect, LEN);
  memcpy(local, expect, LEN);
}

/* Checks big: the pattern at [3, 3 + LEN) (the source, unless the copy overwrote
 * it), the copy at [to, to + LEN), FILL elsewhere; or, when the destination was
 * the local buffer, local against expect. */
static void transfer_check(struct tally *t, const char *what, const unsigned char *big,
                           const unsigned char *local, const unsigned char *expect, int to_shared,
                           size_t to) {
  t->checks++;
  if (!to_shared) {
    if (memcmp(local, expect, LEN) != 0) mismatch(t, what, to, "a byte copied is wrong");
    return;
  }
  for (size_t i = 0; i < BIG; i++) {
    unsigned char want = FILL;
    if (i >= 3 && i < 3 + LEN) want = expect[i - 3];
    if (i >= to && i < to + LEN) want = expect[i - to];
    if (big[i] != want) {
      mismatch(t, what, to, "a byte of the destination or beside it is wrong");
      return;
    }
  }
}

/* One copy function: `name`, destination transactional (Wt*) or not (Wn), source
 * likewise. Copies between shared ranges go to 600 (apart) and, for memmove, to 8
 * (overlapping, destination above) and back (overlapping, destination below). */
#define COPY(name, dst_t, src_t, move)                                               \
  {                                                                                 \
    PURE void name(void *, const void *, size_t);                                   \
    transfer_setup(big, local, expect, seed++);                                     \
    unsigned char *src = src_t ? big + 3 : local;                                   \
    unsigned char *dst = dst_t ? big + 600 : local2;                                \
    memset(local2, 0, LEN);                                                         \
    __transaction_atomic {                                                          \
      t->touched++;                                                                 \
      name(dst, src, LEN);                                                          \
    }                                                                               \
    transfer_check(t, #name, big, local2, expect, dst_t, 600);                      \
    if (move && dst_t && src_t) {                                                   \
      __transaction_atomic {                                                        \
        t->touched++;                                                               \
        name(big + 8, big + 3, LEN);                                                \
      }                                                                             \
      t->checks++;                                                                  \
      if (memcmp(big + 8, expect, LEN) != 0 || memcmp(big + 3, expect, 5) != 0)     \
        mismatch(t, #name " (overlap, up)", 8, "bytes differ");                    \
      __transaction_atomic {                                                        \
        t->touched++;                                                               \
        name(big + 3, big + 8, LEN);                                                \
      }                                                                             \
      t->checks++;                                                                  \
      if (memcmp(big + 3, expect, LEN) != 0) mismatch(t, #name " (overlap, down)", 3, "bytes differ"); \
    }                                                                               \
  }

#define SET(name)                                                                    \
  {                                                                                 \
    PURE void name(void *, int, size_t);                                            \
    transfer_setup(big, local, expect, seed++);                                     \
    int byte = (int)(seed & 0x7F);                                                  \
    __transaction_atomic {                                                          \
      t->touched++;                                                                 \
      name(big + 600, byte, LEN);                                                   \
    }                                                                               \
    memset(expect2, byte, LEN);                                                     \
    memset(big2, FILL, BIG);                                                        \
    memcpy(big2 + 3, expect, LEN);                                                  \
    memcpy(big2 + 600, expect2, LEN);                                               \
    t->checks++;                                                                    \
    if (memcmp(big, big2, BIG) != 0) mismatch(t, #name, 600, "bytes differ");       \
  }

__attribute__((noinline)) static void direct_transfers(unsigned char *big, struct tally *t) {
  unsigned char local[LEN], local2[LEN], expect[LEN], expect2[LEN], big2[BIG];
  unsigned seed = 500;
  COPY(_ITM_memcpyRnWt, 1, 0, 0)
  COPY(_ITM_memcpyRnWtaR, 1, 0, 0)
  COPY(_ITM_memcpyRnWtaW, 1, 0, 0)
  COPY(_ITM_memcpyRtWn, 0, 1, 0)
  COPY(_ITM_memcpyRtaRWn, 0, 1, 0)
  COPY(_ITM_memcpyRtaWWn, 0, 1, 0)
  COPY(_ITM_memcpyRtWt, 1, 1, 0)
  COPY(_ITM_memcpyRtWtaR, 1, 1, 0)
  COPY(_ITM_memcpyRtWtaW, 1, 1, 0)
  COPY(_ITM_memcpyRtaRWt, 1, 1, 0)
  COPY(_ITM_memcpyRtaRWtaR, 1, 1, 0)
  COPY(_ITM_memcpyRtaRWtaW, 1, 1, 0)
  COPY(_ITM_memcpyRtaWWt, 1, 1, 0)
  COPY(_ITM_memcpyRtaWWtaR, 1, 1, 0)
  COPY(_ITM_memcpyRtaWWtaW, 1, 1, 0)
  COPY(_ITM_memmoveRnWt, 1, 0, 1)
  COPY(_ITM_memmoveRnWtaR, 1, 0, 1)
  COPY(_ITM_memmoveRnWtaW, 1, 0, 1)
  COPY(_ITM_memmoveRtWn, 0, 1, 1)
  COPY(_ITM_memmoveRtaRWn, 0, 1, 1)
  COPY(_ITM_memmoveRtaWWn, 0, 1, 1)
  COPY(_ITM_memmoveRtWt, 1, 1, 1)
  COPY(_ITM_memmoveRtWtaR, 1, 1, 1)
  COPY(_ITM_memmoveRtWtaW, 1, 1, 1)
  COPY(_ITM_memmoveRtaRWt, 1, 1, 1)
  COPY(_ITM_memmoveRtaRWtaR, 1, 1, 1)
  COPY(_ITM_memmoveRtaRWtaW, 1, 1, 1)
  COPY(_ITM_memmoveRtaWWt, 1, 1, 1)
  COPY(_ITM_memmoveRtaWWtaR, 1, 1, 1)
  COPY(_ITM_memmoveRtaWWtaW, 1, 1, 1)
  SET(_ITM_memsetW)
  SET(_ITM_memsetWaR)
  SET(_ITM_memsetWaW)
}

void direct_cases(unsigned char *areas, struct tally *t) {
  direct_U1(areas, t);
  direct_U2(areas, t);
  direct_U4(areas, t);
  direct_U8(areas, t);
  direct_F(areas, t);
  direct_D(areas, t);
  direct_E(areas, t);
  direct_M64(areas, t);
  direct_M128(areas, t);
  direct_CF(areas, t);
  direct_CD(areas, t);
  direct_CE(areas, t);
  direct_transfers(areas + AREA, t);
}
