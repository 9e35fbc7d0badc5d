/*
 * farcall.c -- what a call costs by how far its target is: a 4-byte function
 * (load a word, return) copied to executable pages at growing distances from
 * this program's code, called through a pointer 4096 times in a loop; the best
 * of 2000 loops, in thread CPU time, per call. A program is mapped far from its
 * shared libraries (x86-64 Linux: a position-independent executable near
 * 0x55..., libraries near 0x7f..., about 2^45 bytes apart), so this is the part
 * of a call into liblutra.so that no library can remove (docs/c-linking.md).
 *
 * Usage: farcall (prints one line per distance; a distance whose pages cannot
 * be mapped is reported and skipped).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define WORDS 4096
#define LOOPS 2000

typedef long (*load_fn)(volatile long *);

static volatile long words[WORDS];
static load_fn volatile target;
static volatile long sink;

static double thread_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The best loop's time per call of target. */
__attribute__((noinline)) static double per_call(void) {
  load_fn load = target;
  double best = 1e300;
  long sum = 0;
  for (int loop = 0; loop < LOOPS; loop++) {
    double start = thread_ns();
    for (int i = 0; i < WORDS; i++)
      sum += load(&words[i]);
    double spent = thread_ns() - start;
    if (spent < best)
      best = spent;
  }
  sink = sum;
  return best / WORDS;
}

int main(void) {
#if !defined(__x86_64__)
  fprintf(stderr, "farcall: x86-64 only\n");
  return 0;
#else
  /* mov (%rdi),%rax; ret */
  static const unsigned char code[] = {0x48, 0x8b, 0x07, 0xc3};
  uintptr_t here = (uintptr_t)&per_call;
  for (int bits = 20; bits <= 44; bits += 4) {
    void *want = (void *)((here + ((uintptr_t)1 << bits)) & ~(uintptr_t)0xfff);
    void *page = mmap(want, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (page == MAP_FAILED || page != want) {
      printf("distance 2^%d: cannot map %p, skipped\n", bits, want);
      continue;
    }
    memcpy(page, code, sizeof code);
    target = (load_fn)page;
    printf("distance 2^%d: %.2f ns per call\n", bits, per_call());
    munmap(page, 4096);
  }
  return 0;
#endif
}
