/*
 * shim.c -- the part of Lutra's C ABI that must be C: allocating jump buffers,
 * the siglongjmp of tinySTM's abort path, the decoding of stm_tx_attr_t (whose
 * bit-field layout only the C compiler knows), and the sigsetjmp of
 * stm_atomically.
 *
 * Protocol (see src/lib.rs): the Rust side meets an abort, rolls back, begins the
 * next attempt and returns a status with STM_PATH_INSTRUMENTED set; the Rust
 * trampoline, owning nothing, calls lutra_shim_jump, which siglongjmps to the
 * buffer filled by the sigsetjmp that followed stm_start (or by stm_atomically).
 *
 * Each registered thread, and each task of the scheduler, owns its jump buffer
 * (allocated here, kept by the Rust side with the rest of its transaction state),
 * never C thread-local storage: several tasks share a worker thread, and a task
 * can be suspended inside a transaction (the engine's waits yield it) while
 * another task of the same worker starts one.
 *
 * Invariants:
 *  - A jump buffer is filled by sigsetjmp only in a frame that stays live until
 *    the transaction ends (the program's, as tinySTM requires, or
 *    lutra_shim_atomically's own).
 *  - No Rust frame that owns anything lies between a siglongjmp and its sigsetjmp.
 */

#include <setjmp.h>
#include <stdlib.h>

#include "capi.h"
#include "lutra/stm.h"

sigjmp_buf *lutra_shim_env_new(void);
void lutra_shim_env_free(sigjmp_buf *env);
_Noreturn void lutra_shim_jump(sigjmp_buf *env, int status);
sigjmp_buf *lutra_shim_start(int32_t attrs);
int lutra_shim_atomically(int32_t attrs, stm_atomic_fn fn, void *arg);

/* A zeroed jump buffer (malloc's alignment suits sigjmp_buf), or NULL. */
sigjmp_buf *lutra_shim_env_new(void) { return calloc(1, sizeof(sigjmp_buf)); }

void lutra_shim_env_free(sigjmp_buf *env) { free(env); }

_Noreturn void lutra_shim_jump(sigjmp_buf *env, int status) {
  siglongjmp(*env, status);
}

/* Decodes attrs and begins a transaction; *outermost and *env as
 * lutra_capi_begin. */
static int begin(int32_t attrs, int *outermost, sigjmp_buf **env) {
  stm_tx_attr_t attr;
  attr.attrs = attrs;
  return lutra_capi_begin(attr.attrs, attr.id, attr.read_only, attr.no_retry,
                          outermost, env);
}

sigjmp_buf *lutra_shim_start(int32_t attrs) {
  int outermost = 0;
  sigjmp_buf *env = NULL;
  if (begin(attrs, &outermost, &env) != LUTRA_OK || !outermost)
    return NULL;
  return env;
}

/*
 * stm_atomically: nested, run fn once inside the enclosing transaction;
 * outermost, run fn until lutra_capi_settle says the transaction is over. An
 * abort inside fn jumps back to the sigsetjmp below, over fn's frames only.
 */
int lutra_shim_atomically(int32_t attrs, stm_atomic_fn fn, void *arg) {
  int outermost = 0;
  sigjmp_buf *env = NULL;
  int status = begin(attrs, &outermost, &env);
  if (status != LUTRA_OK)
    return status;
  if (!outermost)
    return lutra_capi_settle_nested(fn(arg));
  /* fn, arg, env are not modified after sigsetjmp; result and again are written
   * before every read that follows a jump. */
  int result = LUTRA_OK;
  int again;
  (void)sigsetjmp(*env, 0);
  do {
    again = lutra_capi_settle(fn(arg), &result);
  } while (again > 0);
  return again < 0 ? again : result;
}
