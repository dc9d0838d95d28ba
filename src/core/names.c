/*-------------------------------------------------------------------------
 *
 * names.c
 *	  Commit users, checkpoint ids and the gids of the committer's prepared
 *	  transactions.
 *
 * A commit user is validated where it first comes in (a setting, a
 * function argument), so that a gid carrying it is never too long (GIDSIZE)
 * nor ambiguous.  A checkpoint id is validated where it comes in (a
 * function argument) and again where the committer takes the request:
 * an id no checkpoint can have must never reach a step that seals, drops
 * or commits.  A gid is parsed strictly: recovery finishes a prepared
 * transaction only when its gid reads back as exactly what gid_build wrote,
 * among the other proofs recovery.c asks for.
 *
 *-------------------------------------------------------------------------
 */
#include <inttypes.h>

#include "postgres.h"

#include "mb/pg_wchar.h"

#include "core/guc.h"
#include "core/names.h"

/* Between a gid's commit user and its random suffix: no commit user has it. */
#define GID_NONCE_SEPARATOR "~"

/* Between a loader gid's commit user and its part number: no commit user has it. */
#define GID_PART_SEPARATOR "/"

#define COMMIT_USER_CHARACTERS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-"

/*
 * paimon_sink_commit_user_is_valid checks a commit user: 1 to 64
 * characters of [A-Za-z0-9._:-], so that a gid carrying it is never too
 * long or malformed.  *problem receives a sentence when it is not valid.
 */
bool
paimon_sink_commit_user_is_valid(const char *commit_user, const char **problem)
{
	size_t length = commit_user ? strlen(commit_user) : 0;

	if (length == 0)
	{
		*problem = "A commit user must not be empty.";
		return false;
	}
	if (length > PAIMON_SINK_COMMIT_USER_MAXLEN)
	{
		*problem = "A commit user has at most 64 characters.";
		return false;
	}
	if (strspn(commit_user, COMMIT_USER_CHARACTERS) != length)
	{
		*problem =
			"A commit user consists of the characters A-Z, a-z, 0-9, '.', '_', ':' and '-' only.";
		return false;
	}
	return true;
}

/*
 * paimon_sink_shown returns a name given as an argument as a message shows
 * it: whole when it is at most PAIMON_SINK_SHOWN_MAX bytes, else cut there
 * (at a character boundary) and ended with "...".  An argument may be any
 * text; a message that quoted 10 kB of it would bury what it says.
 */
const char *
paimon_sink_shown(const char *name)
{
	size_t length;

	if (name == NULL)
		return "";
	length = strlen(name);
	if (length <= PAIMON_SINK_SHOWN_MAX)
		return name;
	return psprintf("%.*s...", pg_mbcliplen(name, (int) length, PAIMON_SINK_SHOWN_MAX), name);
}

/*
 * paimon_sink_check_commit_user raises ERRCODE_INVALID_PARAMETER_VALUE for
 * an invalid commit user.
 */
void
paimon_sink_check_commit_user(const char *commit_user)
{
	const char *problem;

	if (!paimon_sink_commit_user_is_valid(commit_user, &problem))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("invalid commit user \"%s\"", paimon_sink_shown(commit_user)),
						errdetail("%s", problem),
						errhint("Use a stable identifier of the writing job, such as a UUID.")));
}

/*
 * paimon_sink_check_checkpoint_id raises ERRCODE_INVALID_PARAMETER_VALUE
 * for a checkpoint id that no valid call given for use can carry: ids
 * start at 1 (Flink's and Paimon's checkpoint ids do), a restore may name
 * 0 (a job restored from before its first checkpoint), and the highest id
 * is end_input()'s (Paimon's END_INPUT_CHECKPOINT_ID), never prepared by
 * prepare_commit().  Refused before anything is sealed, dropped or
 * committed, so the message says that nothing changed.
 */
void
paimon_sink_check_checkpoint_id(int64 checkpoint_id, CheckpointIdUse use)
{
	int64 lowest = use == CHECKPOINT_ID_RESTORE ? 0 : 1;

	if (checkpoint_id < lowest)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint id %lld is out of range", (long long) checkpoint_id),
				 use == CHECKPOINT_ID_RESTORE
					 ? errdetail("A job restores from a checkpoint it completed, whose id is 1 or "
								 "more, or from 0 when it completed none. Nothing was changed.")
					 : errdetail("Checkpoint ids start at 1, as Flink's and Paimon's do: no "
								 "checkpoint has id %lld. Nothing was changed.",
								 (long long) checkpoint_id),
				 errhint("Pass the job's checkpoint id; paimon_sink.last_commit() tells the last "
						 "one committed.")));
	if (use == CHECKPOINT_ID_PREPARE && checkpoint_id == PAIMON_SINK_END_INPUT_CHECKPOINT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint id %lld is reserved for the end of input",
						(long long) checkpoint_id),
				 errdetail("paimon_sink.end_input() prepares and commits it, as Paimon's committer "
						   "does its END_INPUT checkpoint. Nothing was changed."),
				 errhint("Call paimon_sink.end_input() to end the input, or prepare a lower "
						 "checkpoint id.")));
}

/*
 * build_gid writes into gid (GIDSIZE bytes) "paimon_sink:D:S:N:U~R", or
 * with part >= 0 "paimon_sink:D:S:N:U/P~R", R 16 random hexadecimal
 * digits drawn here.  Raises ERRCODE_INTERNAL_ERROR when no random bytes
 * can be had.
 */
static void
build_gid(char *gid, Oid database_id, int32 sink_id, int64 checkpoint_id, const char *commit_user,
		  int part)
{
	uint64 nonce;
	char part_text[16] = "";

	if (!pg_strong_random(&nonce, sizeof(nonce)))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
						errmsg("could not generate a random gid suffix")));
	if (part >= 0)
		snprintf(part_text, sizeof(part_text), GID_PART_SEPARATOR "%d", part);
	snprintf(gid, GIDSIZE, "%s%u:%d:" INT64_FORMAT ":%s%s" GID_NONCE_SEPARATOR "%016" PRIx64,
			 PAIMON_SINK_GID_START, database_id, sink_id, checkpoint_id, commit_user, part_text,
			 nonce);
}

/*
 * gid_build writes into gid (GIDSIZE bytes) a new gid to prepare
 * checkpoint_id of commit_user of a sink in: "paimon_sink:D:S:N:U~R", R
 * 16 random hexadecimal digits.  Gids are the cluster's, and any role of
 * any database may prepare a transaction under any free one: without R,
 * a role could take a sink's next gid (all of D, S, N and U can be known)
 * and block its commits.  Recovery needs no R to know a transaction of
 * ours (see recovery.c); "~" cannot occur in a commit user.  The commit
 * user is valid (at most 64 characters), so it always fits.  Raises
 * ERRCODE_INTERNAL_ERROR when no random bytes can be had.
 */
void
gid_build(char *gid, Oid database_id, int32 sink_id, int64 checkpoint_id, const char *commit_user)
{
	build_gid(gid, database_id, sink_id, checkpoint_id, commit_user, -1);
}

/*
 * gid_build_loader writes into gid (GIDSIZE bytes) a new gid for the
 * prepared transaction of loader part "part" (0 to PAIMON_SINK_MAX_LOADERS
 * - 1) of a checkpoint: "paimon_sink:D:S:N:U/P~R".  It is no decision: the
 * checkpoint's own gid (gid_build) is, and recovery commits a loader's
 * transaction only once the checkpoint is committed (recovery.c).  "/"
 * cannot occur in a commit user.  Raises ERRCODE_INTERNAL_ERROR when no
 * random bytes can be had.
 */
void
gid_build_loader(char *gid, Oid database_id, int32 sink_id, int64 checkpoint_id,
				 const char *commit_user, int part)
{
	Assert(part >= 0 && part < PAIMON_SINK_MAX_LOADERS);
	build_gid(gid, database_id, sink_id, checkpoint_id, commit_user, part);
}

/* gid_has_prefix tells whether a gid starts as every gid of ours does; raises nothing. */
bool
gid_has_prefix(const char *gid)
{
	return strncmp(gid, PAIMON_SINK_GID_START, strlen(PAIMON_SINK_GID_START)) == 0;
}

/*
 * Read a run of decimal digits at *cursor that ends at the character end
 * and is at most max; moves *cursor past that character.  No sign, no
 * leading zero (but for 0 itself), no spaces: only what build_gid writes.
 */
static bool
parse_number(const char **cursor, char end, uint64 max, uint64 *value)
{
	const char *p = *cursor;
	uint64 result = 0;

	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] != end))
		return false;
	for (; *p >= '0' && *p <= '9'; p++)
	{
		if (result > (max - (uint64) (*p - '0')) / 10)
			return false;
		result = result * 10 + (uint64) (*p - '0');
	}
	if (*p != end)
		return false;
	*cursor = p + 1;
	*value = result;
	return true;
}

/*
 * gid_parse reads a gid that gid_build or gid_build_loader could have
 * written into *parts (part: the loader's part, -1 for a checkpoint's own
 * gid), or a checkpoint's gid without the random suffix (as libraries
 * before 0.2 wrote them); false for any other text, which is then nothing
 * of ours.  Raises nothing.
 */
bool
gid_parse(const char *gid, GidParts *parts)
{
	const char *cursor = gid;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	const char *problem;
	const char *end;
	uint64 database_id;
	uint64 sink_id;
	uint64 checkpoint_id;
	uint64 part = 0;
	bool loader = false;
	size_t length;

	if (!gid_has_prefix(gid))
		return false;
	cursor += strlen(PAIMON_SINK_GID_START);
	if (!parse_number(&cursor, ':', PG_UINT32_MAX, &database_id) ||
		!parse_number(&cursor, ':', PG_INT32_MAX, &sink_id) ||
		!parse_number(&cursor, ':', PG_INT64_MAX, &checkpoint_id))
		return false;
	/* the commit user ends at the part, the random suffix or the end */
	length = strcspn(cursor, GID_PART_SEPARATOR GID_NONCE_SEPARATOR);
	if (length > PAIMON_SINK_COMMIT_USER_MAXLEN)
		return false;
	memcpy(commit_user, cursor, length);
	commit_user[length] = '\0';
	if (!paimon_sink_commit_user_is_valid(commit_user, &problem))
		return false;
	end = cursor + length;
	if (*end == GID_PART_SEPARATOR[0])
	{
		/* a loader's gid always has its random suffix */
		end++;
		if (!parse_number(&end, GID_NONCE_SEPARATOR[0], PAIMON_SINK_MAX_LOADERS - 1, &part))
			return false;
		loader = true;
		end--;
	}
	if (*end == GID_NONCE_SEPARATOR[0])
	{
		if (strlen(end + 1) != 16 || strspn(end + 1, "0123456789abcdef") != 16)
			return false;
	}
	else if (*end != '\0')
		return false;
	parts->database_id = (Oid) database_id;
	parts->sink_id = (int32) sink_id;
	parts->checkpoint_id = (int64) checkpoint_id;
	parts->part = loader ? (int32) part : -1;
	strlcpy(parts->commit_user, commit_user, sizeof(parts->commit_user));
	return true;
}
