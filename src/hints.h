/*-------------------------------------------------------------------------
 *
 * src/hints.h
 *	  Hints added to core's errors about the extension's functions
 *	  (hints.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_HINTS_H
#define SHARDED_ID_HINTS_H

extern void shid_hints_init(void);

#endif							/* SHARDED_ID_HINTS_H */
