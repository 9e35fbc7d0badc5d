/*
 * misaligned.c -- __transaction_atomic stores and loads of values at every
 * misaligned offset (GCC's barriers, _ITM_WU2 .. _ITM_WD, get the address as is)
 * change exactly the bytes of the value: the neighbouring bytes, in the same
 * word and in the next one, keep their values. Each thread works on its own
 * buffer; the results line is the same under GCC's libitm and Lutra.
 */

#include <string.h>

#include "harness.h"

#define FILL 0xA5

static unsigned char buffers[1024][64] __attribute__((aligned(64)));
static long mismatches;

/* Whether every byte of buf but [from, from + len) holds FILL. */
static int others_untouched(const unsigned char *buf, size_t from, size_t len) {
  for (size_t i = 0; i < 64; i++)
    if ((i < from || i >= from + len) && buf[i] != FILL) return 0;
  return 1;
}

#define CASE(type, value)                                                      \
  for (size_t offset = 8; offset < 16; offset++) {                             \
    memset(buf, FILL, 64);                                                     \
    type *at = (type *)(void *)(buf + offset);                                 \
    type v = (value), got;                                                     \
    __transaction_atomic {                                                     \
      *at = v;                                                                 \
      got = *at;                                                               \
    }                                                                          \
    type stored;                                                               \
    memcpy(&stored, buf + offset, sizeof stored);                              \
    if (memcmp(&stored, &v, sizeof v) != 0 || memcmp(&got, &v, sizeof v) != 0 || \
        !others_untouched(buf, offset, sizeof(type)))                          \
      __atomic_fetch_add(&mismatches, 1, __ATOMIC_RELAXED);                    \
  }

static void *body(void *arg) {
  unsigned char *buf = buffers[(intptr_t)arg];
  CASE(uint16_t, 0x1122);
  CASE(uint32_t, 0x11223344u);
  CASE(uint64_t, 0x1122334455667788u);
  CASE(float, 1.5f);
  CASE(double, -2.25);
  return NULL;
}

int main(int argc, char **argv) {
  int threads = thread_count(argc, argv);
  run_threads(threads, body);
  CHECK(mismatches == 0, "%ld misaligned accesses changed other bytes or lost theirs", mismatches);
  printf("misaligned: %ld mismatches\n", mismatches);
  return check_summary();
}
