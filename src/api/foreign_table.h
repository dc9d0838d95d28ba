/*-------------------------------------------------------------------------
 *
 * foreign_table.h
 *	  A sink's foreign table and its owner, the sink's: made, restored,
 *	  dropped only with the sink, and kept from DROP ROLE (foreign_table.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_FOREIGN_TABLE_H
#define PAIMON_SINK_FOREIGN_TABLE_H

#include "fmgr.h"
#include "nodes/parsenodes.h"

#include "metadata/catalog.h"

/* What a new sink's foreign table is made of (create_sink's options). */
typedef struct ForeignTableSpec
{
	const char *sink_name; /* also the foreign table's name, in the target's schema */
	int32 sink_id;
	Oid target;
	bool partial_update;		 /* only the key columns keep the target's defaults */
	Datum key_names;			 /* upsert: the primary key's columns (text[]), or 0 */
	const char *row_kind_column; /* upsert: the column of row kinds; NULL otherwise */
} ForeignTableSpec;

extern Oid foreign_table_create(const ForeignTableSpec *spec);
extern void foreign_table_drop(Oid relid);
extern void foreign_table_install_hook(void);
extern int foreign_table_begin_statement(void);
extern void foreign_table_end_statement(Node *statement, int level);
extern void foreign_table_abort_statement(int level);
extern void foreign_table_refuse_drop_role(DropRoleStmt *statement);
extern void foreign_table_refuse_alter(Node *statement);
extern void foreign_table_add_columns(const SinkInfo *sink, Datum names, Datum types);
extern void foreign_table_sync_defaults(const SinkInfo *sink, Datum only);
extern Datum paimon_sink_restore_foreign_table(PG_FUNCTION_ARGS);

#endif /* PAIMON_SINK_FOREIGN_TABLE_H */
