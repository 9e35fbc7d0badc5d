/*
 * capi.h -- the functions of the Rust side that the shim calls. Internal to the
 * library: not installed, not for programs. Each matches a Rust function of the
 * same name (src/txn.rs, src/atomically.rs); keep the two in step.
 */

#ifndef LUTRA_CAPI_H
#define LUTRA_CAPI_H

#include <setjmp.h>
#include <stdint.h>

/* Begins (or joins, flat nesting) a transaction with the decoded attributes;
 * *outermost is 1 for an outermost transaction, and then *env is the calling
 * thread's (or task's) jump buffer. Returns 0 or a LUTRA_E* code. */
int lutra_capi_begin(int32_t raw, unsigned int id, int read_only, int no_retry,
                     int *outermost, sigjmp_buf **env);

/* After fn returned rc in an outermost stm_atomically: 1 if a new attempt runs
 * (call fn again), 0 when done (*result set), or a LUTRA_E* code. */
int lutra_capi_settle(int rc, int *result);

/* After fn returned rc in a nested stm_atomically: the value to return. */
int lutra_capi_settle_nested(int rc);

#endif /* LUTRA_CAPI_H */
