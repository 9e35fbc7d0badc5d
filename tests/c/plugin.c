/*
 * plugin.c -- a shared object built with stm.h's inline accesses (LUTRA_INLINE)
 * and linked with liblutra.so, for dlopen.c, which loads it (and liblutra.so with
 * it) with dlopen: the inline accesses of a library loaded at run time find the
 * thread's undo window as a program's do.
 *
 * plugin_run: registers the thread (alone with the engine: its transactions run
 * solo); a transaction sees its window open, writes words inline (in memory,
 * the old words logged in the window), aborts, and every word is back; a second
 * one commits its writes; outside transactions the window is closed. Returns the
 * number of failed checks, after printing the summary.
 */

#define LUTRA_INLINE
#include <lutra/stm.h>

#include "check.h"

#ifndef LUTRA_UNDO_WINDOW
#error "stm.h offers no inline accesses with this compiler"
#endif

#define WORDS 3000

static stm_word_t words[WORDS];

static int window_open(void) { return LUTRA_UNDO_WINDOW.next != NULL; }

/* Writes every word inline, then aborts (no retry) or commits. */
static void write_all(stm_word_t base, int abort) {
  stm_tx_attr_t attr = {{.id = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL)
    sigsetjmp(*env, 0);
  if (stm_aborted())
    return;
  CHECK(window_open(), "a solo transaction's window is closed");
  for (long i = 0; i < WORDS; i++)
    stm_store(&words[i], base + (stm_word_t)i);
  CHECK(words[WORDS - 1] == base + WORDS - 1, "an inline store did not reach memory");
  CHECK(stm_load(&words[7]) == base + 7, "an inline load missed a store");
  if (abort)
    stm_abort(STM_ABORT_NO_RETRY);
  stm_commit();
}

int plugin_run(void) {
  stm_init();
  CHECK(stm_init_thread() != NULL, "stm_init_thread: %s", lutra_last_error());
  CHECK(!window_open(), "the window is open outside transactions");
  for (long i = 0; i < WORDS; i++)
    words[i] = (stm_word_t)i;
  write_all(1000000, 1);
  CHECK(stm_aborted(), "the transaction was not aborted");
  long wrong = 0;
  for (long i = 0; i < WORDS; i++)
    wrong += words[i] != (stm_word_t)i;
  CHECK(wrong == 0, "%ld of %d words not put back", wrong, WORDS);
  write_all(2000000, 0);
  CHECK(!stm_aborted() && words[WORDS - 1] == 2000000 + WORDS - 1,
        "the committed writes are lost");
  CHECK(!window_open(), "the window stays open after the transaction");
  stm_exit_thread();
  stm_exit();
  return check_summary() == 0 ? 0 : check_failed;
}
