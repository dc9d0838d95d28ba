/*-------------------------------------------------------------------------
 *
 * paimon_sink.c
 *	  The module's root: _PG_init, and nothing else.
 *
 * _PG_init registers what the settings call up (core/guc.h's GucHooks),
 * defines the settings (core/guc.c) and, when the library is preloaded,
 * registers the WAL resource manager of staged files (staging/staged_wal.c)
 * and, outside a binary upgrade, installs the shared-memory hooks
 * (shmem_hooks.c), the utility hook (api/utility_hook.c), the object
 * access hook (api/foreign_table.c) and the transaction callbacks
 * (session/handoff.c), and registers the launcher (launcher.c).  Kept
 * small, as pg_cron's _PG_init.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "api/foreign_table.h"
#include "api/utility_hook.h"
#include "core/guc.h"
#include "core/shared_state.h"
#include "launcher.h"
#include "metadata/version.h"
#include "session/fdw_session.h"
#include "session/handoff.h"
#include "shmem_hooks.h"
#include "staging/staged_wal.h"

PG_MODULE_MAGIC;

void _PG_init(void);

/*
 * What the settings call up (core/guc.h's GucHooks): the session forgets
 * the fence epochs it joined when the commit user changes.
 */
static const GucHooks guc_hooks = {
	.commit_user_assigned = fdw_forget_fence_epochs,
};

/*
 * _PG_init initializes the module: settings wherever it is loaded; hooks,
 * callbacks and the launcher only from shared_preload_libraries.
 */
void
_PG_init(void)
{
	guc_set_hooks(&guc_hooks);
	guc_define_settings();
	if (!process_shared_preload_libraries_in_progress)
		return;
	/* every node that replays the WAL needs the redo of staged files */
	staged_wal_register();
	if (IsBinaryUpgrade)
		return;

	PaimonSinkPreloaded = true;
	shmem_hooks_install();
	utility_hook_install();
	foreign_table_install_hook();
	handoff_register_callbacks();
	launcher_register();
}
