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
 * The fast-path slot: lutra_shim_fast_state holds the state (a Rust ThreadTx) of
 * the calling thread when it is a plain thread registered with stm_init_thread,
 * and NULL otherwise (unregistered, or a worker of the scheduler, whose tasks
 * keep their own state). It is initial-exec thread-local storage: reading it is
 * one or two instructions (a %fs-relative load), never a call to
 * __tls_get_addr, in the shared library and in a program linked with
 * liblutra.a alike. Only the Rust side (src/fast.rs) reads it, with an
 * initial-exec sequence of its own; it writes it through
 * lutra_shim_set_fast_state, when the thread registers or its state is dropped.
 *
 * Invariants:
 *  - A jump buffer is filled by sigsetjmp only in a frame that stays live until
 *    the transaction ends (the program's, as tinySTM requires, or
 *    lutra_shim_atomically's own).
 *  - No Rust frame that owns anything lies between a siglongjmp and its sigsetjmp.
 *  - lutra_shim_fast_state is NULL or the live state of this very thread; on a
 *    worker of the scheduler it stays NULL for the thread's whole life, so that
 *    code of a task that migrated and reads another worker's slot still finds
 *    NULL.
 *  - lutra_shim_read_front points to the read front of the descriptor of the
 *    state in lutra_shim_fast_state while there is one, and to the closed front
 *    otherwise (on a worker of the scheduler, always).
 *  - lutra_thread_undo_window is the solo undo window of the state in
 *    lutra_shim_fast_state while there is one (src/fast.rs places it there and
 *    moves it back), and closed (zero) otherwise: on a worker of the scheduler
 *    it stays closed, so that a task's inline accesses always call the library.
 *  - lutra_thread_undo_window_offset is &lutra_thread_undo_window minus the
 *    thread pointer from the library's load on (the constructor below).
 */

#include <setjmp.h>
#include <stdlib.h>

#include "capi.h"
#include "lutra/stm.h"

/* Hidden: internal to the library, never exported from liblutra.so. */
__attribute__((visibility("hidden"), tls_model("initial-exec"))) __thread void
    *lutra_shim_fast_state = NULL;

/* The calling thread's solo undo window (LUTRA_INLINE in stm.h): the window of
 * its registered state's descriptor, placed here while the state is published,
 * and closed (zero) otherwise. Hidden as well: a program reaches it only when
 * linked with liblutra.a. */
__attribute__((visibility("hidden"), tls_model("initial-exec"))) __thread struct
    lutra_undo_window lutra_thread_undo_window;

/* How a program reaches lutra_thread_undo_window: its offset from the thread
 * pointer, exported by the library (a Rust static, src/fast.rs: the shared
 * library exports Rust items only) and stored here when the library is loaded,
 * before any code of the program runs (in a program linked with liblutra.a, the
 * constructor's priority puts it before the program's own constructors). The
 * window is in static TLS (initial-exec), so the offset is the same on every
 * thread; stm.h (LUTRA_INLINE) adds it to the thread pointer. stm.h declares
 * it const, as programs see it; the object itself (Rust's) is writable, and this
 * is its only write. */
/* The calling thread's thread pointer, as stm.h reads it. */
static char *lutra_shim_thread_pointer(void) {
#if defined(__x86_64__)
  char *pointer;
  __asm__("mov %%fs:0, %0" : "=r"(pointer));
  return pointer;
#else
  return __builtin_thread_pointer();
#endif
}

__attribute__((constructor(101))) static void lutra_shim_place_window_offset(void) {
  *(volatile intptr_t *)&lutra_thread_undo_window_offset =
      (char *)&lutra_thread_undo_window - lutra_shim_thread_pointer();
}

/* A closed read front (a Rust lutra_stm::ReadFront: two pointers and a bool,
 * all zero): where lutra_shim_read_front points while the thread has no
 * published state. Never written. */
struct lutra_shim_read_front {
  void *end;
  void *room;
  _Bool plain;
};
static const struct lutra_shim_read_front lutra_shim_closed_front;

/* The calling thread's read front: the front of its published state's
 * descriptor, or the closed front. src/fast.rs reads it with an initial-exec
 * sequence, as the slot; stm_load tests the front it points to, never the
 * pointer. */
__attribute__((visibility("hidden"), tls_model("initial-exec"))) __thread const
    struct lutra_shim_read_front *lutra_shim_read_front = &lutra_shim_closed_front;

void lutra_shim_set_fast_state(void *state);
void lutra_shim_set_read_front(void *front);
const void *lutra_shim_get_read_front(void);
struct lutra_undo_window *lutra_shim_undo_window(void);
void *lutra_shim_get_fast_state(void);
void lutra_shim_attr_layout(int32_t *id, int32_t *read_only, int32_t *no_retry);
sigjmp_buf *lutra_shim_env_new(void);
void lutra_shim_env_free(sigjmp_buf *env);
_Noreturn void lutra_shim_jump(sigjmp_buf *env, int status);
sigjmp_buf *lutra_shim_start(int32_t attrs);
int lutra_shim_atomically(int32_t attrs, stm_atomic_fn fn, void *arg);

void lutra_shim_set_fast_state(void *state) { lutra_shim_fast_state = state; }

/* Points the read front at `front`, or at the closed front when NULL. */
void lutra_shim_set_read_front(void *front) {
  lutra_shim_read_front = front != NULL ? front : &lutra_shim_closed_front;
}

/* The read front, for targets where src/fast.rs has no instruction sequence of
 * its own. */
const void *lutra_shim_get_read_front(void) { return lutra_shim_read_front; }

/* The calling thread's undo window, where its published state places its
 * descriptor's. */
struct lutra_undo_window *lutra_shim_undo_window(void) {
  return &lutra_thread_undo_window;
}

/* The slot, for targets where src/fast.rs has no instruction sequence of its
 * own. */
void *lutra_shim_get_fast_state(void) { return lutra_shim_fast_state; }

/* The bits of stm_tx_attr_t.attrs that hold id, read_only and no_retry, as this
 * compiler lays the bit-fields out: the Rust fast path of stm_start decodes
 * attributes with them, without a call into C. */
void lutra_shim_attr_layout(int32_t *id, int32_t *read_only, int32_t *no_retry) {
  stm_tx_attr_t attr;
  attr.attrs = 0;
  attr.id = 0xFFFF;
  *id = attr.attrs;
  attr.attrs = 0;
  attr.read_only = 1;
  *read_only = attr.attrs;
  attr.attrs = 0;
  attr.no_retry = 1;
  *no_retry = attr.attrs;
}

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
