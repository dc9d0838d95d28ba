/*-------------------------------------------------------------------------
 *
 * request.c
 *	  The committer's request queue, both ends, and the relay of its
 *	  errors as whole ErrorData.
 *
 * A backend takes a free slot of its database's entry, fills in the
 * request, wakes the committer and waits on the entry's condition
 * variable.  The committer takes the oldest queued request (by its
 * sequence number), serves it on a copy and writes the outcome back.  A
 * requester that leaves (cancelled, or after paimon_sink.committer_timeout
 * without the committer's progress: liveness.c) abandons the slot, which
 * the committer frees once it has finished: a request is never undone.
 *
 * A failure travels as parallel query's errors do (parallel.c and pqmq.c):
 * the committer writes its whole ErrorData into the slot as the fields of
 * the protocol's ErrorResponse, the requester reads them back with
 * pq_parse_errornotice and raises them with ThrowErrorData, so that the
 * client sees the committer's SQLSTATE, message, detail, hint and context
 * and the schema, table, column, data type and constraint names a
 * constraint violation in the load carries.  A warning of a successful
 * request (maintenance failed after the commit) travels the same way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "libpq/pqformat.h"
#include "libpq/pqmq.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"

#include "core/names.h"
#include "core/wait_events.h"
#include "ipc/liveness.h"
#include "ipc/request.h"
#include "metadata/fence.h"

/* What a field cut to fit the slot ends with. */
#define CUT_MARKER                                                                                 \
	"... (cut: the paimon_sink committer's error was longer than " CppAsString2(                   \
		PAIMON_SINK_ERROR_SIZE) " bytes)"

/* One field of an ErrorResponse: its code and its text. */
typedef struct ErrorField
{
	char code;
	const char *value;
	bool cuttable; /* free text, which may be cut to fit */
} ErrorField;

/*
 * refuse_request raises ERRCODE_INVALID_PARAMETER_VALUE for a request whose
 * field is what no SQL function of the extension puts there.
 */
static void
refuse_request(const CommitterRequest *request, const char *field)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("paimon_sink committer refused a request of kind %d for sink %d: invalid %s",
					request->kind, request->sink_id, field),
			 errdetail("The SQL functions check their arguments before they submit a request; "
					   "the committer checks each request again before it acts. Nothing was "
					   "changed."),
			 errhint("Report this with the call that was made.")));
}

/*
 * request_check refuses (ERRCODE_INVALID_PARAMETER_VALUE) a request the
 * committer must not act on, before any step of it: a kind it does not
 * know, a sink or group id no sink has, a commit user, checkpoint id,
 * writer id, mode or cut-off that no valid call carries, text fields
 * without their end.  The SQL functions check the same first, with the
 * argument's name (sql_call.c); this is the committer's own guard, so that
 * no order of calls or overlooked argument reaches a NULL pointer, an
 * index out of range or a drop of staged rows.  Its checkpoint ids are
 * paimon_sink_check_checkpoint_id's, by the kind's use.
 */
void
request_check(const CommitterRequest *request)
{
	bool named_user = request->kind == REQUEST_PREPARE || request->kind == REQUEST_COMMIT ||
					  request->kind == REQUEST_RECOVER || request->kind == REQUEST_END_INPUT ||
					  request->kind == REQUEST_DISCARD_MISSING;
	const char *problem;

	if (request->kind < REQUEST_PREPARE || request->kind > REQUEST_DISCARD_MISSING)
		refuse_request(request, "kind");
	if (request->sink_id <= 0)
		refuse_request(request, "sink id");
	if (request->group_id < 0 ||
		(request->group_id != 0 && request->kind != REQUEST_COMMIT &&
		 request->kind != REQUEST_RECOVER && request->kind != REQUEST_END_INPUT))
		refuse_request(request, "sink group id");
	if (memchr(request->commit_user, '\0', sizeof(request->commit_user)) == NULL ||
		memchr(request->properties, '\0', sizeof(request->properties)) == NULL)
		refuse_request(request, "text field");
	if (named_user && !paimon_sink_commit_user_is_valid(request->commit_user, &problem))
		refuse_request(request, "commit user");
	if (request->writer_id < -1)
		refuse_request(request, "writer id");
	if (request->properties[0] != '\0' && request->kind != REQUEST_PREPARE)
		refuse_request(request, "properties");
	if (request->check_fence &&
		((request->kind != REQUEST_PREPARE && request->kind != REQUEST_COMMIT &&
		  request->kind != REQUEST_END_INPUT) ||
		 request->named_epoch < FENCE_EPOCH_UNNAMED))
		refuse_request(request, "fence epoch");
	if (request->expected_rows_given &&
		(request->kind != REQUEST_PREPARE || request->group_id != 0 || request->expected_rows < 0))
		refuse_request(request, "expected rows");
	if (request->job_restart && request->kind != REQUEST_RECOVER)
		refuse_request(request, "job restart");
	switch (request->kind)
	{
		case REQUEST_PREPARE:
			paimon_sink_check_checkpoint_id(request->checkpoint_id, CHECKPOINT_ID_PREPARE);
			break;
		case REQUEST_COMMIT:
			paimon_sink_check_checkpoint_id(request->checkpoint_id, CHECKPOINT_ID_COMMIT);
			break;
		case REQUEST_RECOVER:
			if (!request->restore_last_committed)
				paimon_sink_check_checkpoint_id(request->checkpoint_id, CHECKPOINT_ID_RESTORE);
			if (request->mode != RECOVER_RESTORE && request->mode != RECOVER_RESTORE_AND_FAIL)
				refuse_request(request, "recover mode");
			break;
		case REQUEST_REMOVE_ORPHANS:
			if (request->older_than_ms < 0)
				refuse_request(request, "cut-off");
			break;
	}
}

/* The non-localized name of an error level, as pq_parse_errornotice reads it. */
static const char *
severity_name(int elevel)
{
	if (elevel >= PANIC)
		return "PANIC";
	if (elevel >= FATAL)
		return "FATAL";
	if (elevel >= ERROR)
		return "ERROR";
	if (elevel >= WARNING)
		return "WARNING";
	if (elevel >= NOTICE)
		return "NOTICE";
	if (elevel >= INFO)
		return "INFO";
	if (elevel >= LOG)
		return "LOG";
	return "DEBUG";
}

/*
 * encode_error writes edata into buffer (PAIMON_SINK_ERROR_SIZE bytes) as
 * the fields of an ErrorResponse, each a code byte and a NUL-terminated
 * string, ended by a NUL; returns the bytes written.  Strings are copied
 * as they are: both ends use the database's encoding.  When the fields do
 * not fit, the longest free-text field is cut (at a character boundary,
 * ending with CUT_MARKER) until they do; the names and codes are short and
 * always kept whole.
 */
static uint32
encode_error(const ErrorData *edata, char *buffer)
{
	ErrorField fields[18]; /* one per ADD_FIELD below */
	int count = 0;
	char internalpos[12];
	char lineno[12];
	Size total = 1;
	Size marker_length = strlen(CUT_MARKER);
	char *out = buffer;

#define ADD_FIELD(c, v, cut)                                                                       \
	do                                                                                             \
	{                                                                                              \
		if ((v) != NULL)                                                                           \
		{                                                                                          \
			fields[count].code = (c);                                                              \
			fields[count].value = (v);                                                             \
			fields[count].cuttable = (cut);                                                        \
			count++;                                                                               \
		}                                                                                          \
	} while (0)

	ADD_FIELD(PG_DIAG_SEVERITY, severity_name(edata->elevel), false);
	ADD_FIELD(PG_DIAG_SEVERITY_NONLOCALIZED, severity_name(edata->elevel), false);
	ADD_FIELD(PG_DIAG_SQLSTATE, unpack_sql_state(edata->sqlerrcode), false);
	ADD_FIELD(PG_DIAG_MESSAGE_PRIMARY, edata->message ? edata->message : "missing error text",
			  true);
	ADD_FIELD(PG_DIAG_MESSAGE_DETAIL, edata->detail, true);
	ADD_FIELD(PG_DIAG_MESSAGE_HINT, edata->hint, true);
	/* no cursor position: it would point into a query text the client does not have */
	/* the statement of a trigger function that failed in the load, and where */
	if (edata->internalpos > 0)
	{
		snprintf(internalpos, sizeof(internalpos), "%d", edata->internalpos);
		ADD_FIELD(PG_DIAG_INTERNAL_POSITION, internalpos, false);
	}
	ADD_FIELD(PG_DIAG_INTERNAL_QUERY, edata->internalquery, true);
	ADD_FIELD(PG_DIAG_CONTEXT, edata->context, true);
	ADD_FIELD(PG_DIAG_SCHEMA_NAME, edata->schema_name, false);
	ADD_FIELD(PG_DIAG_TABLE_NAME, edata->table_name, false);
	ADD_FIELD(PG_DIAG_COLUMN_NAME, edata->column_name, false);
	ADD_FIELD(PG_DIAG_DATATYPE_NAME, edata->datatype_name, false);
	ADD_FIELD(PG_DIAG_CONSTRAINT_NAME, edata->constraint_name, false);
	ADD_FIELD(PG_DIAG_SOURCE_FILE, edata->filename, false);
	if (edata->lineno > 0)
	{
		snprintf(lineno, sizeof(lineno), "%d", edata->lineno);
		ADD_FIELD(PG_DIAG_SOURCE_LINE, lineno, false);
	}
	ADD_FIELD(PG_DIAG_SOURCE_FUNCTION, edata->funcname, false);
#undef ADD_FIELD

	for (int i = 0; i < count; i++)
		total += 2 + strlen(fields[i].value);
	while (total > PAIMON_SINK_ERROR_SIZE)
	{
		int longest = -1;
		Size length;
		int keep;

		for (int i = 0; i < count; i++)
			if (fields[i].cuttable && strlen(fields[i].value) > 2 * marker_length &&
				(longest < 0 || strlen(fields[i].value) > strlen(fields[longest].value)))
				longest = i;
		/* the fields that are never cut are far below the size: it cannot happen */
		if (longest < 0)
			elog(ERROR, "paimon_sink committer error does not fit in %d bytes",
				 PAIMON_SINK_ERROR_SIZE);
		length = strlen(fields[longest].value);
		keep = (int) Max((Size) 0,
						 length - Min(length, total - PAIMON_SINK_ERROR_SIZE + marker_length));
		keep = pg_mbcliplen(fields[longest].value, (int) length, keep);
		fields[longest].value = psprintf("%.*s%s", keep, fields[longest].value, CUT_MARKER);
		total -= length - strlen(fields[longest].value);
	}

	for (int i = 0; i < count; i++)
	{
		Size length = strlen(fields[i].value) + 1;

		*out++ = fields[i].code;
		memcpy(out, fields[i].value, length);
		out += length;
	}
	*out++ = '\0';
	Assert(out - buffer == total);
	return (uint32) (out - buffer);
}

/*
 * request_set_error stores edata in the request: an error (ERROR or
 * above) makes the request failed with edata's SQLSTATE; a warning or
 * notice is shown to the requester of a request that succeeded.
 */
void
request_set_error(CommitterRequest *request, const ErrorData *edata)
{
	if (edata->elevel >= ERROR)
		request->sqlerrcode = edata->sqlerrcode ? edata->sqlerrcode : ERRCODE_INTERNAL_ERROR;
	request->error_length = encode_error(edata, request->error);
}

/*
 * request_error_message returns (palloc'd) the primary message of the
 * error or warning a request carries, or an empty string.
 */
char *
request_error_message(const CommitterRequest *request)
{
	const char *p = request->error;
	const char *end = request->error + request->error_length;

	while (p < end && *p != '\0')
	{
		char code = *p++;

		if (code == PG_DIAG_MESSAGE_PRIMARY)
			return pstrdup(p);
		p += strlen(p) + 1;
	}
	return pstrdup("");
}

/*
 * request_encode_error writes edata into buffer (PAIMON_SINK_ERROR_SIZE
 * bytes) as request_set_error does, for an error area of another kind (a
 * loader's); returns the bytes written.
 */
uint32
request_encode_error(const ErrorData *edata, char *buffer)
{
	return encode_error(edata, buffer);
}

/*
 * request_throw_error raises the error (or emits the warning) encoded in
 * error (length bytes, as encode_error writes it) with every field it
 * had, its context included; one without a context gets context_if_none.
 * A FATAL becomes an ERROR: it ended the process that had it, not this
 * one.  The caller's own error context callbacks add theirs, as for any
 * error it raises.
 */
void
request_throw_error(const char *error, uint32 length, const char *context_if_none)
{
	StringInfoData fields;
	ErrorData edata;

	initStringInfo(&fields);
	appendBinaryStringInfo(&fields, error, length);
	pq_parse_errornotice(&fields, &edata);
	edata.elevel = Min(edata.elevel, ERROR);
	if (edata.context == NULL)
		edata.context = pstrdup(context_if_none);
	ThrowErrorData(&edata);
	pfree(fields.data);
}

/*
 * relay_error raises in the requester the error (or emits the warning) the
 * committer stored in the request.  An error keeps every field the
 * committer had, its context included (what the committer was doing:
 * "committing checkpoint ..."); one without a context gets a line saying
 * where it comes from.
 */
static void
relay_error(const CommitterRequest *request)
{
	char *database_name = get_database_name(MyDatabaseId);

	request_throw_error(request->error, request->error_length,
						psprintf("relayed from the paimon_sink committer of database \"%s\"",
								 database_name ? database_name : "?"));
}

/* What becomes of a request whose wait gave up while it was queued. */
#define OUTCOME_QUEUED                                                                             \
	"The request stays queued and is served if a committer goes on, as a cancelled call's is; "    \
	"its outcome then shows in the sinks view. prepare_commit, commit and checkpoint are "         \
	"idempotent: retry the call."

/* What becomes of a request whose wait gave up while it was served. */
#define OUTCOME_RUNNING                                                                            \
	"The committer was serving the request: it finishes if the committer goes on, and its "        \
	"outcome then shows in the sinks view. prepare_commit, commit and checkpoint are idempotent: " \
	"retry the call."

/*
 * committer_submit queues a request for a database's committer and waits for
 * its outcome, which it copies back into *request; an error of the committer
 * is raised again here whole (relay_error).  Both waits (for a free slot, and
 * for the answer) are bounded: once the committer has shown no progress, or
 * none served, for paimon_sink.committer_timeout, the wait ends with
 * ERRCODE_QUERY_CANCELED (liveness_check_committer).  A wait that ends
 * early (cancelled, or given up so) leaves the request to run or finish on
 * its own (it is not undone), as the README promises.
 */
void
committer_submit(int database_index, CommitterRequest *request)
{
	DatabaseEntry *db = shared_database(database_index);
	CommitterRequest *slot = NULL;
	PGPROC *committer = NULL;
	TimestampTz progress_at = GetCurrentTimestamp();

	for (;;)
	{
		long nap;

		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
		{
			if (db->requests[i].state == REQUEST_FREE)
			{
				slot = &db->requests[i];
				memcpy(slot, request, offsetof(CommitterRequest, error));
				slot->state = REQUEST_QUEUED;
				slot->seq = ++db->next_request_seq;
				slot->requester = MyProc;
				slot->abandoned = false;
				slot->sqlerrcode = 0;
				slot->error_length = 0;
				break;
			}
		}
		committer = db->committer_proc;
		LWLockRelease(PaimonSinkState->lock);
		if (slot != NULL)
			break;
		nap = liveness_check_committer(db, false, &progress_at, "a free request slot",
									   "Nothing was queued: retry the call.");
		ConditionVariableTimedSleep(&db->request_done, nap, wait_event_for(WAIT_REQUEST_SLOT));
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
	if (committer != NULL)
		SetLatch(&committer->procLatch);

	PG_TRY();
	{
		for (;;)
		{
			bool done;
			bool running;
			long nap;

			ConditionVariablePrepareToSleep(&db->request_done);
			LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
			done = slot->state == REQUEST_DONE;
			running = slot->state == REQUEST_RUNNING;
			if (done)
			{
				memcpy(request, slot, offsetof(CommitterRequest, error) + slot->error_length);
				slot->state = REQUEST_FREE;
			}
			LWLockRelease(PaimonSinkState->lock);
			if (done)
				break;
			nap = liveness_check_committer(db, running, &progress_at, "this request",
										   running ? OUTCOME_RUNNING : OUTCOME_QUEUED);
			ConditionVariableTimedSleep(&db->request_done, nap,
										wait_event_for(WAIT_COMMITTER_REQUEST));
			CHECK_FOR_INTERRUPTS();
		}
		ConditionVariableCancelSleep();
	}
	PG_CATCH();
	{
		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		/*
		 * A wait cancelled, or ended by paimon_sink.committer_timeout,
		 * leaves the request to run (queued) or finish (running) all the
		 * same, as the README promises; the committer frees it then.
		 */
		if (slot->state == REQUEST_DONE)
			slot->state = REQUEST_FREE;
		else
			slot->abandoned = true;
		LWLockRelease(PaimonSinkState->lock);
		PG_RE_THROW();
	}
	PG_END_TRY();
	ConditionVariableBroadcast(&db->request_done);

	if (request->error_length > 0)
		relay_error(request);
}

StaticAssertDecl(PAIMON_SINK_REQUESTS_PER_DATABASE <= 64, "riders is a 64-bit mask of slots");

/* waiting tells whether requests of sink_id wait for the parallel commit in flight (under the lock). */
static bool
waiting(DatabaseEntry *db, int32 sink_id)
{
	for (int i = 0; i < db->waiting_count; i++)
		if (db->waiting_sinks[i] == sink_id)
			return true;
	return false;
}

/*
 * request_next takes the oldest queued request of db whose sink does not
 * wait for the parallel commit in flight: marks it running and copies it
 * into *copy (its error area left empty); *slot gets its index, for
 * request_finish.  A checkpoint() takes the other queued checkpoint()
 * calls of its sink along: *riders gets their slots, a mask.  They ride on
 * it (one barrier, prepare and commit for all) and get its answer; their
 * rows were committed before they queued, so before the barrier, which
 * starts after they are taken.  Returns false when none is queued.
 */
bool
request_next(DatabaseEntry *db, CommitterRequest *copy, int *slot, uint64 *riders)
{
	CommitterRequest *oldest = NULL;

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
	{
		CommitterRequest *request = &db->requests[i];

		if (request->state == REQUEST_QUEUED && (oldest == NULL || request->seq < oldest->seq) &&
			!waiting(db, request->sink_id))
		{
			oldest = request;
			*slot = i;
		}
	}
	*riders = 0;
	if (oldest != NULL)
	{
		oldest->state = REQUEST_RUNNING;
		memcpy(copy, oldest, offsetof(CommitterRequest, error));
		copy->sqlerrcode = 0;
		copy->error_length = 0;
		for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE && oldest->kind == REQUEST_CHECKPOINT;
			 i++)
		{
			CommitterRequest *request = &db->requests[i];

			if (request->state == REQUEST_QUEUED && request->kind == REQUEST_CHECKPOINT &&
				request->sink_id == oldest->sink_id)
			{
				request->state = REQUEST_RUNNING;
				*riders |= UINT64CONST(1) << i;
			}
		}
	}
	LWLockRelease(PaimonSinkState->lock);
	return oldest != NULL;
}

/* answer answers one request with outcome, or frees it when abandoned (under the lock). */
static void
answer(CommitterRequest *request, const CommitterRequest *outcome)
{
	if (request->abandoned)
		request->state = REQUEST_FREE;
	else
	{
		uint64 seq = request->seq;
		PGPROC *requester = request->requester;

		memcpy(request, outcome, offsetof(CommitterRequest, error) + outcome->error_length);
		request->seq = seq;
		request->requester = requester;
		request->abandoned = false;
		request->state = REQUEST_DONE;
	}
}

/*
 * request_finish answers the request in slot, and those riding on it
 * (riders, the mask request_next gave), with outcome (results and error)
 * and wakes the requesters; an abandoned request is freed instead.
 */
void
request_finish(DatabaseEntry *db, int slot, uint64 riders, const CommitterRequest *outcome)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	answer(&db->requests[slot], outcome);
	for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
		if (i != slot && (riders & (UINT64CONST(1) << i)))
			answer(&db->requests[i], outcome);
	LWLockRelease(PaimonSinkState->lock);
	ConditionVariableBroadcast(&db->request_done);
}

/*
 * request_defer puts the request in slot and its riders back in the queue,
 * unserved, and makes the requests of sink_id wait for the parallel commit
 * in flight (request_wait).
 */
void
request_defer(DatabaseEntry *db, int slot, uint64 riders, int32 sink_id)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
		if (i == slot || (riders & (UINT64CONST(1) << i)))
			db->requests[i].state = REQUEST_QUEUED;
	if (!waiting(db, sink_id) && db->waiting_count < PAIMON_SINK_REQUESTS_PER_DATABASE)
		db->waiting_sinks[db->waiting_count++] = sink_id;
	LWLockRelease(PaimonSinkState->lock);
}

/*
 * request_wait makes the requests of sink_id wait for the parallel commit
 * in flight: request_next leaves them queued.
 */
void
request_wait(DatabaseEntry *db, int32 sink_id)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	if (!waiting(db, sink_id) && db->waiting_count < PAIMON_SINK_REQUESTS_PER_DATABASE)
		db->waiting_sinks[db->waiting_count++] = sink_id;
	LWLockRelease(PaimonSinkState->lock);
}

/* request_wait_end lets every waiting sink's requests be served again. */
void
request_wait_end(DatabaseEntry *db)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	db->waiting_count = 0;
	LWLockRelease(PaimonSinkState->lock);
}

/* request_any_queued tells whether a request of db waits for the committer. */
bool
request_any_queued(DatabaseEntry *db)
{
	bool queued = false;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
		queued = queued || db->requests[i].state == REQUEST_QUEUED;
	LWLockRelease(PaimonSinkState->lock);
	return queued;
}

/*
 * request_fail_running answers the requests the exiting committer was
 * serving with a connection failure (their outcome is not known) and
 * frees the abandoned ones; queued requests, abandoned or not, wait for
 * the next committer.  It raises no error (an exit callback).
 */
void
request_fail_running(DatabaseEntry *db)
{
	static char failure[PAIMON_SINK_ERROR_SIZE];
	uint32 failure_length;
	ErrorData edata;

	memset(&edata, 0, sizeof(edata));
	edata.elevel = ERROR;
	edata.sqlerrcode = ERRCODE_CONNECTION_FAILURE;
	edata.message = "the paimon_sink committer stopped while serving this request";
	edata.detail = "Its outcome is not known: it may or may not have completed.";
	edata.hint = "Retry the call: prepare and commit are idempotent.";
	failure_length = encode_error(&edata, failure);

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
	{
		CommitterRequest *request = &db->requests[i];

		if (request->state == REQUEST_RUNNING && request->abandoned)
			request->state = REQUEST_FREE;
		else if (request->state == REQUEST_RUNNING)
		{
			request->state = REQUEST_DONE;
			request->sqlerrcode = edata.sqlerrcode;
			memcpy(request->error, failure, failure_length);
			request->error_length = failure_length;
		}
	}
	LWLockRelease(PaimonSinkState->lock);
	ConditionVariableBroadcast(&db->request_done);
}
