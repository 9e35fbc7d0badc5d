/*
 * lutra/wrappers.h -- transactional loads and stores of C's basic types and of
 * byte ranges, with tinySTM's names (tinySTM 1.0.5 wrappers.h).
 *
 * Every function may be called inside a transaction of a registered thread and
 * behaves like stm_load / stm_store (see stm.h): on a conflict the transaction
 * restarts from its sigsetjmp and the call does not return; with the no_retry
 * attribute the transaction ends and the call returns (a load returns 0). Misuse
 * (no transaction, unregistered thread, NULL address) makes a load return 0 and a
 * store write nothing, and sets the thread's last error. Addresses need no
 * alignment: a value that spans machine words is accessed word by word, within
 * the same transaction, and a store writes exactly the bytes of its value (the
 * other bytes of the words it touches keep their values). stm_load_ptr and
 * stm_store_ptr too; only stm.h's stm_load / stm_store refuse a misaligned
 * address.
 *
 * Every byte of the machine words these accesses touch must follow stm.h's
 * sharing rules (not written outside transactions while transactions may access
 * it), including bytes of neighbouring variables that share the word.
 */

#ifndef LUTRA_WRAPPERS_H
#define LUTRA_WRAPPERS_H

#include <stdint.h>

#include "stm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads of unsigned values of 8, 16, 32 and 64 bits. */
uint8_t stm_load_u8(volatile uint8_t *addr);
uint16_t stm_load_u16(volatile uint16_t *addr);
uint32_t stm_load_u32(volatile uint32_t *addr);
uint64_t stm_load_u64(volatile uint64_t *addr);

/* Loads of C's basic types. */
char stm_load_char(volatile char *addr);
unsigned char stm_load_uchar(volatile unsigned char *addr);
short stm_load_short(volatile short *addr);
unsigned short stm_load_ushort(volatile unsigned short *addr);
int stm_load_int(volatile int *addr);
unsigned int stm_load_uint(volatile unsigned int *addr);
long stm_load_long(volatile long *addr);
unsigned long stm_load_ulong(volatile unsigned long *addr);
float stm_load_float(volatile float *addr);
double stm_load_double(volatile double *addr);
void *stm_load_ptr(volatile void **addr);

/* Copies size bytes at addr into buf (which transactions must not access).
 * buf may be NULL only when size is 0 (otherwise misuse: nothing is read). */
void stm_load_bytes(volatile uint8_t *addr, uint8_t *buf, size_t size);

/* Stores of unsigned values of 8, 16, 32 and 64 bits. */
void stm_store_u8(volatile uint8_t *addr, uint8_t value);
void stm_store_u16(volatile uint16_t *addr, uint16_t value);
void stm_store_u32(volatile uint32_t *addr, uint32_t value);
void stm_store_u64(volatile uint64_t *addr, uint64_t value);

/* Stores of C's basic types. */
void stm_store_char(volatile char *addr, char value);
void stm_store_uchar(volatile unsigned char *addr, unsigned char value);
void stm_store_short(volatile short *addr, short value);
void stm_store_ushort(volatile unsigned short *addr, unsigned short value);
void stm_store_int(volatile int *addr, int value);
void stm_store_uint(volatile unsigned int *addr, unsigned int value);
void stm_store_long(volatile long *addr, long value);
void stm_store_ulong(volatile unsigned long *addr, unsigned long value);
void stm_store_float(volatile float *addr, float value);
void stm_store_double(volatile double *addr, double value);
void stm_store_ptr(volatile void **addr, void *value);

/* Writes the size bytes of buf at addr. buf may be NULL only when size is 0. */
void stm_store_bytes(volatile uint8_t *addr, uint8_t *buf, size_t size);

/* Writes byte to the count bytes at addr. */
void stm_set_bytes(volatile uint8_t *addr, uint8_t byte, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* LUTRA_WRAPPERS_H */
