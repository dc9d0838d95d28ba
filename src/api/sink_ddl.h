/*-------------------------------------------------------------------------
 *
 * sink_ddl.h
 *	  create_sink and drop_sink, the SQL functions that make and remove a
 *	  sink, and the check of a column's type that alter_sink shares
 *	  (sink_ddl.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SINK_DDL_H
#define PAIMON_SINK_SINK_DDL_H

#include "catalog/pg_attribute.h"
#include "fmgr.h"

extern Datum paimon_sink_create_sink(PG_FUNCTION_ARGS);
extern Datum paimon_sink_drop_sink(PG_FUNCTION_ARGS);
extern Oid sink_ddl_type_without_binary_io(Oid type);
extern void sink_ddl_check_binary_io(const char *table_name, Form_pg_attribute attr);

#endif /* PAIMON_SINK_SINK_DDL_H */
