/*
 * signal_tx.c -- a transaction in a signal handler that interrupted a transaction
 * of the same thread gets a clear error (LUTRA_EINTX, "in a signal handler that
 * interrupted a transaction ...") and touches nothing: the interrupted transaction
 * commits its own writes, once, and the handler's never land. Before, the
 * handler's transaction joined the interrupted one or hit "a transaction attempt
 * is already active on this descriptor" (a panic, SIGABRT), and sums came out
 * wrong. A handler that interrupted no transaction runs its own. The signal is
 * raised by the thread itself (raise), inside and outside transactions: no timing
 * involved. Handlers installed with sigaction and with signal; sigaction reports
 * the program's own handler back.
 */

#include <signal.h>
#include <stdint.h>
#include <string.h>

#include <lutra/stm.h>

#include "check.h"

static stm_word_t account, handled;
static volatile int handler_status, handler_start_null, handler_load_code, handler_commit;

static int add_one(void *arg) {
  (void)arg;
  stm_store(&handled, stm_load(&handled) + 1);
  return 0;
}

static void on_signal(int signal) {
  (void)signal;
  handler_status = stm_atomically(add_one, NULL);
  /* tinySTM style too: refused at every step. */
  stm_tx_attr_t attr = {{.id = 9}};
  lutra_clear_error();
  sigjmp_buf *env = stm_start(attr);
  handler_start_null = env == NULL;
  if (env != NULL) sigsetjmp(*env, 0);
  lutra_clear_error();
  (void)stm_load(&handled);
  handler_load_code = lutra_last_error_code();
  handler_commit = stm_commit();
}

static void on_signal_info(int signal, siginfo_t *info, void *context) {
  (void)info;
  (void)context;
  on_signal(signal);
}

/* One transfer of 1 into account, raising the signal in the middle. */
static void transfer_with_signal(int signal) {
  stm_tx_attr_t attr = {{.id = 1}};
  sigjmp_buf *env = stm_start(attr);
  if (env != NULL) sigsetjmp(*env, 0);
  stm_word_t before = stm_load(&account);
  raise(signal);
  stm_store(&account, before + 1);
  stm_commit();
}

static void run(const char *how, int signal) {
  account = 0;
  handled = 0;
  for (int i = 0; i < 100; i++) {
    handler_status = 1;
    transfer_with_signal(signal);
    CHECK(handler_status == LUTRA_EINTX, "%s: the handler's stm_atomically: %d", how,
          handler_status);
    CHECK(handler_start_null && handler_load_code == LUTRA_EINTX && handler_commit == 0,
          "%s: the handler's stm_start / stm_load / stm_commit refused", how);
  }
  CHECK(account == 100, "%s: every interrupted transfer committed once: %lu", how,
        (unsigned long)account);
  CHECK(handled == 0, "%s: no write of a refused handler landed: %lu", how,
        (unsigned long)handled);
  /* Outside transactions the handler runs its own. */
  handler_status = 1;
  raise(signal);
  CHECK(handler_status == 0 && handled == 1, "%s: outside transactions: %d, %lu", how,
        handler_status, (unsigned long)handled);
}

int main(void) {
  stm_init();
  stm_init_thread();

  struct sigaction action, old;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_signal_info;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  CHECK(sigaction(SIGUSR1, &action, NULL) == 0, "sigaction");
  CHECK(sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_sigaction == on_signal_info &&
            (old.sa_flags & SA_SIGINFO),
        "sigaction reports the program's handler");
  run("sigaction", SIGUSR1);

  CHECK(signal(SIGUSR2, on_signal) == SIG_DFL, "signal");
  CHECK(signal(SIGUSR2, on_signal) == on_signal, "signal reports the program's handler");
  run("signal", SIGUSR2);

  stm_exit_thread();
  stm_exit();
  return check_summary();
}
