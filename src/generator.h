/*-------------------------------------------------------------------------
 *
 * src/generator.h
 *	  The settings of minting (generator.c), which init.c registers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_GENERATOR_H
#define SHARDED_ID_GENERATOR_H

#include "postgres.h"

extern bool shid_track_stats;	/* sharded_id.track_stats */
extern bool shid_minting;		/* sharded_id.minting */

#endif							/* SHARDED_ID_GENERATOR_H */
