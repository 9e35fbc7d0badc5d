/*
 * retry_outside.c -- stm_retry() outside any transaction in a -fgnu-tm program
 * returns with the last error LUTRA_ENOTX, as stm.h promises (Lutra only). It
 * stopped the process before the first __transaction_atomic ("the STM is not
 * started"), since the engine of a -fgnu-tm program starts with its first
 * transaction. Checked before the first transaction, after one, and on a thread
 * that never ran one.
 */

#include <lutra/stm.h>

#include "harness.h"

static long value;

static void *fresh_thread(void *arg) {
  (void)arg;
  lutra_clear_error();
  stm_retry();
  CHECK(lutra_last_error_code() == LUTRA_ENOTX, "a thread with no transaction yet: %d (%s)",
        lutra_last_error_code(), lutra_last_error());
  return NULL;
}

int main(int argc, char **argv) {
  (void)thread_count(argc, argv);
  stm_retry();
  CHECK(lutra_last_error_code() == LUTRA_ENOTX, "before any transaction: %d (%s)",
        lutra_last_error_code(), lutra_last_error());
  __transaction_atomic { value++; }
  lutra_clear_error();
  stm_retry();
  CHECK(lutra_last_error_code() == LUTRA_ENOTX, "after a transaction: %d (%s)",
        lutra_last_error_code(), lutra_last_error());
  pthread_t thread;
  pthread_create(&thread, NULL, fresh_thread, NULL);
  pthread_join(thread, NULL);
  CHECK(value == 1, "the transaction ran once");
  return check_summary();
}
