/*
 * lutra/mod_stats.h -- transaction statistics with tinySTM's names (tinySTM
 * 1.0.5 mod_stats.h). Lutra always counts; stm_get_stats (stm.h) accepts every
 * name below.
 */

#ifndef LUTRA_MOD_STATS_H
#define LUTRA_MOD_STATS_H

#include "stm.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Writes the statistic name of all threads (including those that have exited) to
 * *(unsigned long *)val and returns 1: "global_nb_commits", "global_nb_aborts",
 * "global_max_retries" (most aborts before one commit). Returns 0 (last error set)
 * for an unknown name, NULL arguments, or no engine. Any thread, after stm_init.
 */
int stm_get_global_stats(const char *name, void *val);

/*
 * Writes the statistic name of the calling thread, since its stm_init_thread, to
 * val and returns 1 (see stm_get_stats in stm.h for the names and types). Returns
 * 0 (last error set) for an unknown name, NULL arguments, or an unregistered
 * thread.
 */
int stm_get_local_stats(const char *name, void *val);

/* Nothing to set up in Lutra (statistics are always counted). Any time. */
void mod_stats_init(void);

#ifdef __cplusplus
}
#endif

#endif /* LUTRA_MOD_STATS_H */
