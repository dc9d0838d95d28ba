/*-------------------------------------------------------------------------
 *
 * version.c
 *	  The checks before work: that this database's extension has the
 *	  library's version (and, through shared_state.c, that the library
 *	  was preloaded); and the library's version itself (library_version()).
 *	  The ProcessUtility hook that guards the extension's own DDL is
 *	  api/utility_hook.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "core/constants.h"
#include "core/shared_state.h"
#include "metadata/catalog.h"
#include "metadata/extension.h"
#include "metadata/version.h"

/*
 * paimon_sink_require_ready raises ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
 * unless the library was preloaded and this database's extension has the
 * library's version, and ERRCODE_UNDEFINED_OBJECT when the extension is not
 * installed.  The library reads and writes the catalog tables and builds
 * the rows of its SQL functions in one layout; after a package upgrade the
 * old catalog stays until ALTER EXTENSION paimon_sink UPDATE, and nothing
 * may run against it meanwhile.  Our own extension scripts pass: CREATE
 * EXTENSION at an older version, and each step of an update, run with a
 * version that is not yet the library's.  Citus checks its library against
 * its catalog the same way.  Needs a transaction.
 */
void
paimon_sink_require_ready(void)
{
	char *installed;

	shared_require_preload();
	if (creating_extension && CurrentExtensionObject == get_extension_oid("paimon_sink", true))
		return;
	installed = extension_installed_version();
	if (installed == NULL)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("extension \"paimon_sink\" is not installed in this database"),
						errhint("Run CREATE EXTENSION paimon_sink.")));
	if (strcmp(installed, PAIMON_SINK_VERSION) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the paimon_sink library is version %s, but the extension in this database "
						"is version %s",
						PAIMON_SINK_VERSION, installed),
				 errdetail("Staged rows, prepared checkpoints and in-doubt transactions are kept; "
						   "nothing is written or committed until the versions agree."),
				 errhint("Run ALTER EXTENSION paimon_sink UPDATE.")));
	pfree(installed);
}

PG_FUNCTION_INFO_V1(paimon_sink_library_version);

/*
 * library_version() returns the version of the loaded library (text, such
 * as '0.2'), where \dx shows the version of the extension's catalog.  It
 * checks nothing and raises nothing, so that it answers when the two
 * differ; every later library keeps it, with this signature.
 */
Datum
paimon_sink_library_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(PAIMON_SINK_VERSION));
}
