/*-------------------------------------------------------------------------
 *
 * value_encoding.h
 *	  A column value in COPY's binary format, the staged files' format.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_VALUE_ENCODING_H
#define PAIMON_SINK_VALUE_ENCODING_H

#include "fmgr.h"
#include "lib/stringinfo.h"

/* How a column's values are written (value_encoding.c). */
typedef enum ValueEncoding
{
	ENCODE_BY_SEND_FUNCTION, /* any type: its send function */
	ENCODE_INT16,			 /* int2 */
	ENCODE_INT32,			 /* int4, oid, date */
	ENCODE_INT64,			 /* int8, time, timestamp, timestamptz */
	ENCODE_FLOAT4,
	ENCODE_FLOAT8,
	ENCODE_BOOL,
	ENCODE_VARLENA_BYTES, /* text, varchar, char, bytea: the value's bytes */
	ENCODE_UUID,
	ENCODE_XML_AS_UTF8 /* xml outside a UTF-8 or SQL_ASCII database: in UTF-8, undeclared */
} ValueEncoding;

extern ValueEncoding value_encoding_of(Oid send_function);
extern void value_encoding_append(StringInfo line, ValueEncoding encoding, FmgrInfo *send_function,
								  Datum value);

#endif /* PAIMON_SINK_VALUE_ENCODING_H */
