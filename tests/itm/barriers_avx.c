/*
 * barriers_avx.c -- the __m256 barriers, built with -mavx (GCC emits _ITM_RM256 /
 * _ITM_WM256 only when AVX is enabled for the whole translation unit, not for a
 * function with __attribute__((target("avx")))): the accesses GCC instruments
 * itself, then the seven barriers called by name, as for the other types
 * (barriers_emitted.c, barriers_direct.c). barriers.c calls avx_cases only when
 * the CPU has AVX.
 */

#include <immintrin.h>

#include "barriers.h"

typedef float m256u __attribute__((vector_size(32), aligned(1)));

EMITTED(m256, m256u, PLAIN)
DIRECT(M256, __m256, PLAIN)

void avx_cases(unsigned char *areas, struct tally *t, int yes) {
  emitted_m256(areas, t, yes);
  direct_M256(areas, t);
}
