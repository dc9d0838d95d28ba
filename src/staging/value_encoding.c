/*-------------------------------------------------------------------------
 *
 * value_encoding.c
 *	  A column value in COPY's binary format (its length, then the bytes
 *	  of the type's send function), the format of staged rows.
 *
 * A session staging a million rows called a send function for each of
 * their values, and each call built a bytea of its own (a 1 kB buffer,
 * then a copy into the row): at 4 columns, the calls, their allocations
 * and the copies were a third of the INSERT's time.  The built-in types
 * whose send function only byte-swaps or copies the datum are written
 * here directly, exactly as that function writes them; every other type
 * (numeric, arrays, jsonb, composites, a user's type) still goes through
 * its send function.  The choice is made by the send function itself, so
 * a domain over a built-in type takes its base type's way.  Text-like
 * values are written as stored: rows are encoded in the database encoding
 * (fdw.c switches a converting client encoding off meanwhile), in which
 * textsend copies them unchanged too.  Regress types compares each way
 * with the source, value by value.
 *
 * One type is written in another encoding: xml_send declares the client
 * encoding in the value unless it is UTF-8 (or SQL_ASCII), and xml_recv
 * keeps a declaration in the value it stores, so an xml value staged in a
 * LATIN1 database's encoding came back into the target with an encoding
 * declaration it did not have (PostgreSQL's binary COPY does the same).
 * Outside a UTF-8 or SQL_ASCII database its send function runs with the
 * client encoding switched to UTF-8: the value is staged as UTF-8 with no
 * declaration, which xml_recv reads as UTF-8 and converts to the database
 * encoding.  TAP 042 holds it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "port/pg_bswap.h"
#include "utils/fmgroids.h"
#include "utils/uuid.h"

#include "core/pg_compat.h"
#include "staging/value_encoding.h"

/*
 * value_encoding_of returns how values of a type with the given send
 * function are written: directly for the built-in send functions named
 * below, by the function otherwise (for xml, in UTF-8 where the database
 * encoding is another: the session's conversion to UTF-8 is prepared here,
 * so a transaction must be open).  Raises ERRCODE_FEATURE_NOT_SUPPORTED
 * when the database encoding has no conversion to UTF-8.
 */
ValueEncoding
value_encoding_of(Oid send_function)
{
	switch (send_function)
	{
		case F_XML_SEND:
			if (GetDatabaseEncoding() == PG_UTF8 || GetDatabaseEncoding() == PG_SQL_ASCII)
				return ENCODE_BY_SEND_FUNCTION;
			if (PrepareClientEncoding(PG_UTF8) < 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("no conversion from %s to UTF8 for the xml values of a sink",
								GetDatabaseEncodingName()),
						 errdetail("Xml values are staged in UTF-8 outside a UTF-8 database."),
						 errhint("Create the default conversion with CREATE DEFAULT CONVERSION.")));
			return ENCODE_XML_AS_UTF8;
		case F_INT2SEND:
			return ENCODE_INT16;
		case F_INT4SEND:
		case F_OIDSEND:
		case F_DATE_SEND:
			return ENCODE_INT32;
		case F_INT8SEND:
		case F_TIME_SEND:
		case F_TIMESTAMP_SEND:
		case F_TIMESTAMPTZ_SEND:
			return ENCODE_INT64;
		case F_FLOAT4SEND:
			return ENCODE_FLOAT4;
		case F_FLOAT8SEND:
			return ENCODE_FLOAT8;
		case F_BOOLSEND:
			return ENCODE_BOOL;
		case F_TEXTSEND:
		case F_VARCHARSEND:
		case F_BPCHARSEND:
		case F_BYTEASEND:
			return ENCODE_VARLENA_BYTES;
		case F_UUID_SEND:
			return ENCODE_UUID;
		default:
			return ENCODE_BY_SEND_FUNCTION;
	}
}

/* append_field appends a field: its length in network order, then its bytes. */
static inline void
append_field(StringInfo line, const void *bytes, uint32 length)
{
	uint32 network_length = pg_hton32(length);

	enlargeStringInfo(line, sizeof(network_length) + length);
	memcpy(line->data + line->len, &network_length, sizeof(network_length));
	memcpy(line->data + line->len + sizeof(network_length), bytes, length);
	line->len += sizeof(network_length) + length;
	line->data[line->len] = '\0';
}

/*
 * value_encoding_append appends a non-NULL value to a row being encoded,
 * as a field of COPY's binary format; send_function is the type's (used
 * only by ENCODE_BY_SEND_FUNCTION).  A value stored compressed or out of
 * line is detoasted in the current memory context.  Raises what the send
 * function raises.
 */
void
value_encoding_append(StringInfo line, ValueEncoding encoding, FmgrInfo *send_function, Datum value)
{
	switch (encoding)
	{
		case ENCODE_INT16:
		{
			uint16 n = pg_hton16((uint16) DatumGetInt16(value));

			append_field(line, &n, sizeof(n));
			return;
		}
		case ENCODE_INT32:
		{
			uint32 n = pg_hton32((uint32) DatumGetInt32(value));

			append_field(line, &n, sizeof(n));
			return;
		}
		case ENCODE_INT64:
		{
			uint64 n = pg_hton64((uint64) DatumGetInt64(value));

			append_field(line, &n, sizeof(n));
			return;
		}
		case ENCODE_FLOAT4:
		{
			/* float4send's pq_sendfloat4: the bits, in network order */
			union
			{
				float4 f;
				uint32 i;
			} bits;

			bits.f = DatumGetFloat4(value);
			bits.i = pg_hton32(bits.i);
			append_field(line, &bits.i, sizeof(bits.i));
			return;
		}
		case ENCODE_FLOAT8:
		{
			union
			{
				float8 f;
				uint64 i;
			} bits;

			bits.f = DatumGetFloat8(value);
			bits.i = pg_hton64(bits.i);
			append_field(line, &bits.i, sizeof(bits.i));
			return;
		}
		case ENCODE_BOOL:
		{
			char b = DatumGetBool(value) ? 1 : 0;

			append_field(line, &b, 1);
			return;
		}
		case ENCODE_VARLENA_BYTES:
		{
			struct varlena *bytes =
				pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value));

			append_field(line, VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes));
			return;
		}
		case ENCODE_UUID:
			append_field(line, DatumGetUUIDP(value)->data, UUID_LEN);
			return;
		case ENCODE_BY_SEND_FUNCTION:
		{
			bytea *bytes = SendFunctionCall(send_function, value);

			append_field(line, VARDATA(bytes), VARSIZE(bytes) - VARHDRSZ);
			return;
		}
		case ENCODE_XML_AS_UTF8:
		{
			int client_encoding = pg_get_client_encoding();
			bytea *volatile bytes = NULL;

			/* prepared by value_encoding_of: no catalog access either way */
			if (SetClientEncoding(PG_UTF8) < 0)
				elog(ERROR, "could not switch to UTF8 for an xml value");
			PG_TRY();
			{
				bytes = SendFunctionCall(send_function, value);
			}
			PG_FINALLY();
			{
				if (SetClientEncoding(client_encoding) < 0)
					elog(FATAL, "could not restore the client encoding \"%s\"",
						 pg_encoding_to_char(client_encoding));
			}
			PG_END_TRY();
			append_field(line, VARDATA(bytes), VARSIZE(bytes) - VARHDRSZ);
			return;
		}
	}
	elog(ERROR, "unknown value encoding %d", (int) encoding);
}
