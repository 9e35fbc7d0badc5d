/*
 * lutra/mod_mem.h -- memory allocated and freed by transactions, with tinySTM's
 * names (tinySTM 1.0.5 mod_mem.h).
 *
 * Blocks come from the C library's malloc and go back through free: a program may
 * stm_free a block it malloc'ed, and free a block stm_malloc returned once no
 * transaction can reach it (see the privatization rule in stm.h).
 */

#ifndef LUTRA_MOD_MEM_H
#define LUTRA_MOD_MEM_H

#include "stm.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Allocates size bytes (rounded up to whole words) inside the thread's
 * transaction: if the transaction aborts, the block is freed. Outside a
 * transaction (or on an unregistered thread) it is plain malloc. Returns NULL
 * when out of memory (last error LUTRA_ENOMEM).
 */
void *stm_malloc(size_t size);

/* As stm_malloc, for nm zeroed elements of size bytes (NULL on overflow). */
void *stm_calloc(size_t nm, size_t size);

/*
 * Frees the block addr when the transaction commits, once no transaction can still
 * read it; its first size bytes are taken by the transaction (written with their
 * own values) so that concurrent transactions using them conflict with it. NULL
 * does nothing. Inside a transaction only; may abort like stm_store. Misuse (no
 * transaction, unregistered thread, block not word-aligned) frees nothing and sets
 * the last error. So does, with LUTRA_EINVAL and a message naming the address,
 * what the library can tell is no block to free:
 *  - a block freed already: twice in one transaction, or again while an earlier
 *    free (committed, or in a running transaction) waits for the transactions that
 *    could read the block (once the block is back in the C library, a second free
 *    can no longer be told from a block malloc returned again);
 *  - an address on the calling thread's stack (a plain thread; a task's stack is
 *    not checked);
 *  - an address in the program or a loaded library (a global or static).
 * A free whose transaction rolls back is forgotten (the block may be freed by
 * the next attempt). A pointer into the middle of a block cannot be told from a
 * block and remains the caller's responsibility (the C library reports it when
 * the block is given back). Outside transactions: unlink the block in a
 * transaction, call stm_quiesce(), then free() it.
 */
void stm_free(void *addr, size_t size);

/* As stm_free, taking size bytes from byte idx of the block. */
void stm_free2(void *addr, size_t idx, size_t size);

/*
 * Nothing to set up in Lutra: transactional frees always wait for the end of the
 * transactions that could read the block (tinySTM's gc). Any time.
 */
void mod_mem_init(int gc);

#ifdef __cplusplus
}
#endif

#endif /* LUTRA_MOD_MEM_H */
