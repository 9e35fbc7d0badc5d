/*
 * tx_macros.h -- the transaction macros tinySTM's own test programs use, written once
 * for Lutra's C tests: START opens a transaction and sets the restart point, LOAD and
 * STORE access words, COMMIT closes it.
 */
#ifndef LUTRA_TEST_TX_MACROS_H
#define LUTRA_TEST_TX_MACROS_H

#include "stm.h"

#define RO 1
#define RW 0
#define START(tid, ro)                                     \
  {                                                        \
    stm_tx_attr_t _a = {{.id = tid, .read_only = ro}};     \
    sigjmp_buf *_e = stm_start(_a);                        \
    if (_e != NULL)                                        \
      sigsetjmp(*_e, 0)
#define LOAD(addr) stm_load((stm_word_t *)(addr))
#define STORE(addr, value) stm_store((stm_word_t *)(addr), (stm_word_t)(value))
#define COMMIT \
  stm_commit(); \
  }

#endif
