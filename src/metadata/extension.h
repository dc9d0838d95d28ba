/*-------------------------------------------------------------------------
 *
 * extension.h
 *	  What paimon_sink's pg_extension row says (extension.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_EXTENSION_H
#define PAIMON_SINK_EXTENSION_H

/* in extension.c; each needs a transaction */
extern Oid extension_owner(void);
extern char *extension_installed_version(void);
extern bool extension_changed_here(void);

#endif /* PAIMON_SINK_EXTENSION_H */
