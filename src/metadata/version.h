/*-------------------------------------------------------------------------
 *
 * version.h
 *	  The check before work (the extension at the library's version) and
 *	  the library's version (version.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_VERSION_H
#define PAIMON_SINK_VERSION_H

#include "fmgr.h"

/*
 * The library's version, from the control file's default_version (see the
 * Makefile): the only catalog version this library reads and writes.
 */
#ifndef PAIMON_SINK_VERSION
#error "PAIMON_SINK_VERSION must be defined by the build (see the Makefile)"
#endif

extern void paimon_sink_require_ready(void);
extern Datum paimon_sink_library_version(PG_FUNCTION_ARGS);

#endif /* PAIMON_SINK_VERSION_H */
