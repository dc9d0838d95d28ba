/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *	  The PostgreSQL majors paimon_sink builds for (15, 16, 17, 18) behind
 *	  one set of names: every version test of the tree is here.
 *
 * Each guard gives the newest major's spelling of a call, so the code is
 * written as for the newest PostgreSQL and this file maps it back onto the
 * older ones (TimescaleDB's compat.h and Citus's pg_version_compat.h do
 * the same).  When the oldest supported major rises past a guard, the
 * guard goes, and the code does not change.  Included by the files that
 * use one of its names, after postgres.h and the PostgreSQL headers the
 * guarded call lives in.
 *
 * The guards cover 16 too, but no build here compiles it: no Debian
 * release this project's CI reaches packages it (docs/operations.md,
 * "Supported PostgreSQL versions").
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_PG_COMPAT_H
#define PAIMON_SINK_PG_COMPAT_H

#include "nodes/parsenodes.h"
#include "utils/acl.h"

/*
 * Varlena access macros: moved from postgres.h to varatt.h in 16.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * Privilege and ownership checks of an object by its catalog (16 replaced
 * the per-catalog pg_*_aclcheck and pg_*_ownercheck functions with
 * object_aclcheck and object_ownercheck).  Before 16, only the catalogs the
 * tree checks are mapped; another one is an error at compile time.
 */
#if PG_VERSION_NUM < 160000
#include "catalog/pg_database.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_namespace.h"

static inline AclResult
object_aclcheck(Oid classid, Oid objectid, Oid roleid, AclMode mode)
{
	switch (classid)
	{
		case NamespaceRelationId:
			return pg_namespace_aclcheck(objectid, roleid, mode);
		case ForeignServerRelationId:
			return pg_foreign_server_aclcheck(objectid, roleid, mode);
		case DatabaseRelationId:
			return pg_database_aclcheck(objectid, roleid, mode);
		default:
			elog(ERROR, "object_aclcheck of catalog %u is not mapped before PostgreSQL 16",
				 classid);
	}
	return ACLCHECK_NO_PRIV; /* keep the compiler quiet */
}

static inline bool
object_ownercheck(Oid classid, Oid objectid, Oid roleid)
{
	switch (classid)
	{
		case DatabaseRelationId:
			return pg_database_ownercheck(objectid, roleid);
		case NamespaceRelationId:
			return pg_namespace_ownercheck(objectid, roleid);
		default:
			elog(ERROR, "object_ownercheck of catalog %u is not mapped before PostgreSQL 16",
				 classid);
	}
	return false; /* keep the compiler quiet */
}
#endif

/*
 * The permissions a statement needs on a relation: in the range table entry
 * itself before 16, in an RTEPermissionInfo of its own from 16 (checked by
 * ExecCheckPermissions, which replaced ExecCheckRTPerms).
 * NamespaceItemPermissions gives the place to set requiredPerms and
 * insertedCols in.
 */
#if PG_VERSION_NUM >= 160000
#define NamespaceItemPermissions(nsitem) ((nsitem)->p_perminfo)
#else
typedef RangeTblEntry RTEPermissionInfo;
#define NamespaceItemPermissions(nsitem) ((nsitem)->p_rte)
#define ExecCheckPermissions(range_table, permissions, ereport_on_violation)                       \
	ExecCheckRTPerms((range_table), (ereport_on_violation))
#endif

/*
 * A relation's immediate (not deferrable) primary key index: 18 added
 * whether a deferrable one counts; before 18 it never did, and so it does
 * not here on any major (ON CONFLICT, by which an upsert sink finds each
 * key's row, takes only an immediate key).
 */
#if PG_VERSION_NUM >= 180000
#define RelationGetImmediatePrimaryKeyIndex(relation) RelationGetPrimaryKeyIndex((relation), false)
#else
#define RelationGetImmediatePrimaryKeyIndex(relation) RelationGetPrimaryKeyIndex(relation)
#endif

/*
 * The largest btree index tuple: a function of the page before 18, a
 * constant of BLCKSZ from 18.  Every page of ours is BLCKSZ, so the page
 * argument only serves the older majors.
 */
#if PG_VERSION_NUM >= 180000
#define BTMaxItemSizeOfPage(page) BTMaxItemSize
#else
#define BTMaxItemSizeOfPage(page) BTMaxItemSize(page)
#endif

/*
 * ExecutorRun: 18 dropped its execute_once argument (a plan is run once
 * unless its portal says otherwise); the tree runs each plan once.
 */
#if PG_VERSION_NUM >= 180000
#define ExecutorRunOnce(query, direction, count) ExecutorRun((query), (direction), (count))
#else
#define ExecutorRunOnce(query, direction, count) ExecutorRun((query), (direction), (count), true)
#endif

/*
 * A one-relation range table for the executor's simple modifications
 * (ExecSimpleRelationInsert and -Update, as logical replication's apply
 * worker builds it): 16 moved the permissions into an RTEPermissionInfo
 * list beside the range table, 18 added the relids left after pruning.
 * EvalPlanQualInit took the result relations in 16; 15 spells that
 * EvalPlanQualInitExt.
 */
#if PG_VERSION_NUM >= 180000
#define ExecInitRangeTableOfOne(estate, rte, perminfos)                                            \
	ExecInitRangeTable((estate), list_make1(rte), (perminfos), bms_make_singleton(1))
#elif PG_VERSION_NUM >= 160000
#define ExecInitRangeTableOfOne(estate, rte, perminfos)                                            \
	ExecInitRangeTable((estate), list_make1(rte), (perminfos))
#else
#define addRTEPermissionInfo(perminfos, rte) ((void) (perminfos), (void) (rte), (void *) NULL)
#define ExecInitRangeTableOfOne(estate, rte, perminfos)                                            \
	((void) (perminfos), ExecInitRangeTable((estate), list_make1(rte)))
#define EvalPlanQualInit(epqstate, parentestate, subplan, auxrowmarks, epqParam, resultRelations)  \
	EvalPlanQualInitExt((epqstate), (parentestate), (subplan), (auxrowmarks), (epqParam),          \
						(resultRelations))
#endif

/*
 * A function that does not return: 18 spells it pg_noreturn, before the
 * declaration (C11's _Noreturn); before 18, pg_attribute_noreturn().
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * Custom wait events (17): an extension names its waits in
 * pg_stat_activity.wait_event, the server keeping the names in its shared
 * memory.  Before 17 every wait of an extension is the one event
 * Extension, whatever it is called.
 */
#if PG_VERSION_NUM < 170000
#include "utils/wait_event.h"

static inline uint32
WaitEventExtensionNew(const char *wait_event_name)
{
	return PG_WAIT_EXTENSION;
}
#endif

#endif /* PAIMON_SINK_PG_COMPAT_H */
