# The extension lends no rights through search_path (CVE-2018-1058's
# lesson): an unprivileged role that owns a database plants, in a schema on
# its own search_path, in pg_temp, in a public it may create in and in a
# schema named like the superuser ("$user"), functions, aggregates,
# operators, types with casts and relations named like every one the
# extension's SQL names (read from the C source, not listed here), each
# recording current_user and trying ALTER ROLE ... SUPERUSER.  It also sets
# its database's search_path, which the workers connect with.  Then it and
# a superuser call every SQL function of the extension, and the test
# drives every worker path: writes, periodic checkpoints, commits (append
# and upsert, with a trigger on the target), recover, end of input,
# in-doubt recovery, writer restarts, orphan removal, expiry, drop_sink and
# DROP EXTENSION.  Nothing planted ever runs; the role stays what it was.
#
# First, without a server: every statement in the C source names its
# functions, operators, types and relations with their schema.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(sql_statements sql_problems sql_names writers_ready start_node);

# --- every statement of the extension is schema-qualified
my @statements = sql_statements();
my %files = map { $_->[0] => 1 } @statements;
cmp_ok(scalar(@statements), '>=', 60, scalar(@statements) . ' SQL statements found in the C source');
for my $file (
	qw(metadata/metadata.c committer/recovery.c api/foreign_table.c apply/upsert_merge.c
	api/utility_hook.c))
{
	ok($files{$file}, "statements of $file are read");
}
my @unqualified;
for my $statement (@statements)
{
	push @unqualified, map { "$statement->[0]:$statement->[1]: $_" } sql_problems($statement->[2]);
}
is(join("\n", @unqualified), '', 'every statement names its objects with their schema');
ok(scalar(sql_problems("SELECT a FROM committable WHERE b::text = max(c) AND d LIKE \$1")) >= 5,
	'and the check finds an unqualified relation, cast, operator, function and LIKE');

my %names = sql_names();
note("the extension's SQL names: " . join('; ', map { "$_: @{$names{$_}}" } sort keys %names));
cmp_ok(scalar(@{ $names{functions} }), '>=', 10, 'functions to plant look-alikes of');
cmp_ok(scalar(@{ $names{operators} }), '>=', 5, 'operators too');
cmp_ok(scalar(@{ $names{types} }), '>=', 3, 'types too');
cmp_ok(scalar(@{ $names{relations} }), '>=', 8, 'relations too');

# --- the cluster
my $node = start_node('search_path', q{
log_min_messages = warning
paimon_sink.snapshots_retained = 1
paimon_sink.snapshot_retention = 0
paimon_sink.orphan_removal_interval = '1s'
paimon_sink.orphan_file_age = 0
});
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');

# Statements of the test itself, with nothing planted on their path.
sub clean
{
	my ($sql, $db) = @_;
	return $node->safe_psql($db // 'victim', "SET search_path = pg_catalog;\n$sql");
}

# A statement as a role sees it with its own, attacked search_path:
# returns (exit code, stdout, stderr).
sub as_role
{
	my ($role, $sql) = @_;
	my ($out, $err) = ('', '');
	my $ret = $node->psql('victim', $sql, stdout => \$out, stderr => \$err,
		extra_params => [ '-U', $role, '-v', 'VERBOSITY=verbose' ]);
	return ($ret, $out, $err);
}

$node->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE DATABASE victim OWNER mallory;
});
clean(q{
	CREATE EXTENSION paimon_sink;
	-- as in a cluster upgraded from before PostgreSQL 15
	GRANT CREATE ON SCHEMA public TO PUBLIC;
	GRANT EXECUTE ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text, boolean, boolean, boolean) TO mallory;
	-- the superuser's sinks: a trigger on the target that calls lower() on varchar
	CREATE TABLE public.su_t (id int PRIMARY KEY, v varchar(20), v_lower text);
	CREATE FUNCTION public.su_lower() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		NEW.v_lower := lower(NEW.v);
		RETURN NEW;
	END $$;
	CREATE TRIGGER su_lower BEFORE INSERT OR UPDATE ON public.su_t FOR EACH ROW EXECUTE FUNCTION public.su_lower();
	CREATE TABLE public.su_kv (k varchar(10) PRIMARY KEY, v int);
	CREATE TABLE public.su_p (id int);
	CREATE TABLE public.su_gone (id int);
});

# --- mallory's schema, side table and recorder, and a better match for the
# superuser's trigger than pg_catalog's lower(text) and = (all hers)
$node->safe_psql('victim', qq{
	SET search_path = pg_catalog;
	CREATE SCHEMA mallory;
	CREATE SCHEMA "$superuser";
	GRANT USAGE ON SCHEMA mallory, "$superuser" TO PUBLIC;
	CREATE TABLE mallory.hijacks (what text, who name, at timestamptz DEFAULT now());
	GRANT SELECT, INSERT ON mallory.hijacks TO PUBLIC;
	CREATE FUNCTION mallory.hijack(what text) RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog AS \$\$
	BEGIN
		RAISE WARNING 'paimon_sink_hijack: % ran as %', what, current_user;
		INSERT INTO mallory.hijacks (what, who) VALUES (what, current_user);
		BEGIN
			EXECUTE 'ALTER ROLE mallory SUPERUSER';
		EXCEPTION WHEN OTHERS THEN NULL;
		END;
	END \$\$;
	CREATE FUNCTION mallory.hijack_bool(what text) RETURNS bool LANGUAGE plpgsql SET search_path = pg_catalog AS \$\$
	BEGIN
		PERFORM mallory.hijack(what);
		RETURN true;
	END \$\$;
	-- a relation's look-alike: records when read, even when empty
	CREATE FUNCTION mallory.hijack_rows(what text, model anyelement) RETURNS SETOF anyelement
		LANGUAGE plpgsql SET search_path = pg_catalog AS \$\$
	BEGIN
		PERFORM mallory.hijack(what);
		RETURN QUERY EXECUTE format('SELECT * FROM %s', pg_typeof(model));
	END \$\$;
	CREATE TABLE mallory.m_t (id int PRIMARY KEY, v pg_catalog.text);
	CREATE TABLE mallory.m_kv (k int PRIMARY KEY, v pg_catalog.text);
	CREATE TABLE mallory.m_gone (id int);
	CREATE FUNCTION public.lower(character varying) RETURNS text LANGUAGE plpgsql AS \$\$
	BEGIN
		PERFORM mallory.hijack('function public.lower(character varying)');
		RETURN NULL;
	END \$\$;
	CREATE FUNCTION mallory.varchar_eq(character varying, character varying) RETURNS bool LANGUAGE plpgsql AS \$\$
	BEGIN
		PERFORM mallory.hijack('operator public.=(character varying, character varying)');
		RETURN NULL;
	END \$\$;
	CREATE OPERATOR public.= (LEFTARG = character varying, RIGHTARG = character varying,
		FUNCTION = mallory.varchar_eq);
}, extra_params => [ '-U', 'mallory' ]);

# --- the look-alikes, in every schema a search_path may reach
sub sql_array
{
	return 'ARRAY[' . join(', ', map { my $v = $_; $v =~ s/'/''/g; "'$v'" } @_) . ']::text[]';
}
my $functions = sql_array(@{ $names{functions} });
my $operators = sql_array(@{ $names{operators} });
my $types = sql_array(@{ $names{types} });
my $relations = sql_array(@{ $names{relations} });

# plant(SCHEMAS, TEMP): a DO block that plants look-alikes in each schema
# (TEMP: domains and views in pg_temp, which lives as long as the session)
# and returns how many it planted and what it could not.
sub plant_block
{
	my ($schemas, $temp) = @_;
	return qq{
SET search_path = pg_catalog, pg_temp;
DO \$plant\$
DECLARE
	schemas text[] := $schemas;
	functions text[] := $functions;
	operators text[] := $operators;
	types text[] := $types;
	relations text[] := $relations;
	temp boolean := $temp;
	s text;
	f record;
	o record;
	t text;
	r text;
	src text;
	home text;
	n int := 0;
	planted int := 0;
	failed text[] := '{}';
	what text;
BEGIN
	FOREACH s IN ARRAY schemas LOOP
		IF NOT temp THEN
			-- functions and aggregates: every overload pg_catalog has
			FOR f IN SELECT p.proname, p.prokind, p.proretset,
					pg_get_function_identity_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS result
				FROM pg_proc p
				WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname = ANY (functions)
			LOOP
				n := n + 1;
				what := format('%s %I.%I(%s)', CASE f.prokind WHEN 'a' THEN 'aggregate' ELSE 'function' END,
					s, f.proname, f.args);
				BEGIN
					IF f.prokind = 'a' THEN
						EXECUTE format('CREATE FUNCTION mallory.%I(text%s) RETURNS text LANGUAGE plpgsql AS %L',
							'step_' || n, CASE WHEN f.args = '' THEN '' ELSE ', ' || f.args END,
							format('BEGIN PERFORM mallory.hijack(%L); RETURN NULL; END', what));
						EXECUTE format('CREATE AGGREGATE %I.%I(%s) (SFUNC = mallory.%I, STYPE = text)',
							s, f.proname, CASE WHEN f.args = '' THEN '*' ELSE f.args END, 'step_' || n);
					ELSE
						EXECUTE format('CREATE FUNCTION %I.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
							s, f.proname, f.args, f.result,
							format('BEGIN PERFORM mallory.hijack(%L); RETURN%s; END', what,
								CASE WHEN f.proretset OR f.result = 'void' THEN '' ELSE ' NULL' END));
					END IF;
					planted := planted + 1;
				EXCEPTION WHEN OTHERS THEN
					failed := failed || (what || ': ' || SQLERRM);
				END;
			END LOOP;
			-- operators: every overload pg_catalog has
			FOR o IN SELECT op.oprname, op.oprleft, format_type(op.oprleft, NULL) AS l,
					format_type(op.oprright, NULL) AS r
				FROM pg_operator op
				WHERE op.oprnamespace = 'pg_catalog'::regnamespace AND op.oprname = ANY (operators)
			LOOP
				n := n + 1;
				what := format('operator %I.%s(%s, %s)', s, o.oprname, o.l, o.r);
				BEGIN
					EXECUTE format('CREATE FUNCTION mallory.%I(%s) RETURNS bool LANGUAGE plpgsql AS %L',
						'op_' || n, concat_ws(', ', CASE WHEN o.oprleft <> 0 THEN o.l END, o.r),
						format('BEGIN PERFORM mallory.hijack(%L); RETURN NULL; END', what));
					EXECUTE format('CREATE OPERATOR %I.%s (%sRIGHTARG = %s, FUNCTION = mallory.%I)',
						s, o.oprname, CASE WHEN o.oprleft <> 0 THEN format('LEFTARG = %s, ', o.l) ELSE '' END,
						o.r, 'op_' || n);
					planted := planted + 1;
				EXCEPTION WHEN OTHERS THEN
					failed := failed || (what || ': ' || SQLERRM);
				END;
			END LOOP;
		END IF;
		-- types: in mallory's schema a composite type with casts from what
		-- the extension casts; elsewhere a domain whose check records
		FOREACH t IN ARRAY types LOOP
			n := n + 1;
			BEGIN
				IF s = 'mallory' THEN
					what := format('type %I.%I', s, t);
					EXECUTE format('CREATE TYPE mallory.%I AS (v pg_catalog.%I)', t, t);
					FOREACH src IN ARRAY ARRAY['name', 'oid', 'text', 'regclass', 'regrole', 'regtype',
						'regcollation', 'integer', 'bigint', 'uuid', 'character varying'] LOOP
						n := n + 1;
						EXECUTE format('CREATE FUNCTION mallory.%I(%s) RETURNS mallory.%I LANGUAGE plpgsql AS %L',
							'cast_' || n, src, t,
							format('BEGIN PERFORM mallory.hijack(%L); RETURN NULL; END',
								format('cast (%s AS mallory.%I)', src, t)));
						EXECUTE format('CREATE CAST (%s AS mallory.%I) WITH FUNCTION mallory.%I(%s) AS IMPLICIT',
							src, t, 'cast_' || n, src);
						planted := planted + 1;
					END LOOP;
				ELSE
					what := format('domain %s.%I', s, t);
					EXECUTE format('CREATE DOMAIN %s.%I AS pg_catalog.%I CHECK (mallory.hijack_bool(%L))',
						CASE WHEN s = 'pg_temp' THEN 'pg_temp' ELSE quote_ident(s) END, t, t, what);
				END IF;
				planted := planted + 1;
			EXCEPTION WHEN OTHERS THEN
				failed := failed || (what || ': ' || SQLERRM);
			END;
		END LOOP;
		-- relations: views of the real ones that record when read
		FOREACH r IN ARRAY relations LOOP
			home := CASE WHEN to_regclass('paimon_sink.' || quote_ident(r)) IS NOT NULL THEN 'paimon_sink'
				WHEN to_regclass('pg_catalog.' || quote_ident(r)) IS NOT NULL THEN 'pg_catalog' END;
			CONTINUE WHEN home IS NULL;
			what := format('relation %s.%I', s, r);
			BEGIN
				EXECUTE format('CREATE VIEW %s.%I AS SELECT * FROM mallory.hijack_rows(%L, NULL::%I.%I)',
					CASE WHEN s = 'pg_temp' THEN 'pg_temp' ELSE quote_ident(s) END, r, what, home, r);
				planted := planted + 1;
			EXCEPTION WHEN OTHERS THEN
				failed := failed || (what || ': ' || SQLERRM);
			END;
		END LOOP;
	END LOOP;
	RAISE NOTICE 'planted % look-alikes; not planted: %', planted, array_length(failed, 1);
	PERFORM set_config('paimon_sink_test.planted', planted::text, false);
	PERFORM set_config('paimon_sink_test.failed', array_to_string(failed, E'\\n'), false);
END
\$plant\$;
};
}

my ($ret, $out, $err);
$ret = $node->psql('victim',
	"SET search_path = pg_catalog;\n"
	  . plant_block(sql_array('mallory', 'public', $superuser), 'false')
	  . "SELECT current_setting('paimon_sink_test.planted');\n"
	  . "SELECT current_setting('paimon_sink_test.failed');\n",
	stdout => \$out, stderr => \$err, extra_params => [ '-U', 'mallory' ]);
is($ret, 0, 'mallory plants her look-alikes') or diag($err);
my ($planted, @not_planted) = split /\n/, $out;
note("not planted (types plpgsql cannot take):\n" . join("\n", @not_planted));
cmp_ok($planted, '>=', 500, "$planted look-alikes planted in mallory, public and \"$superuser\"");
for my $name (@{ $names{functions} }, @{ $names{operators} })
{
	my $found = clean(qq{SELECT count(*) FROM (
		SELECT 1 FROM pg_proc WHERE proname = '$name' AND pronamespace = 'public'::regnamespace
		UNION ALL SELECT 1 FROM pg_operator WHERE oprname = '$name' AND oprnamespace = 'public'::regnamespace) x});
	ok($found > 0, "a look-alike of $name is planted");
}

# the database's search_path, which every worker connects with, puts hers first
$node->safe_psql('victim', 'ALTER DATABASE victim SET search_path = mallory, public, pg_catalog',
	extra_params => [ '-U', 'mallory' ]);
clean(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	WHERE datname = 'victim' AND backend_type IN ('paimon_sink committer', 'paimon_sink writer')});
ok(writers_ready($node, 'victim'), 'the workers start again under that search_path');

my $attacked = 'SET search_path = mallory, pg_temp, public, pg_catalog;';
my $temp_plants = plant_block(sql_array('pg_temp'), 'true');

# --- the look-alikes work: unqualified names, read as the attacked paths
# read them, run them (in a transaction rolled back, so nothing stays)
($ret, $out, $err) = as_role('mallory', qq{
	$temp_plants
	$attacked
	\\set ON_ERROR_ROLLBACK on
	BEGIN;
	SELECT count(*) IS NOT NULL FROM pg_catalog.pg_class;
	SELECT 1 = 1;
	SELECT pg_catalog.current_user()::text;
	SELECT 1 FROM committable;
	SELECT pg_catalog.string_agg(DISTINCT pg_catalog.split_part(what, ' ', 1), ',') FROM mallory.hijacks;
	ROLLBACK;
});
like($out, qr/^aggregate,cast,.*operator,relation$/m,
	'canary: an unqualified aggregate, operator, cast and relation run the look-alikes');
($ret, $out, $err) = as_role($superuser, q{
	BEGIN;
	INSERT INTO public.su_t (id, v) VALUES (1000, 'X');
	SELECT pg_catalog.count(*) FROM mallory.hijacks;
	ROLLBACK;
});
is($out, '1', 'canary: the superuser\'s own trigger runs mallory\'s lower() under the attacked search_path');
is(clean('SELECT count(*) FROM mallory.hijacks'), '0', 'the canaries left nothing');
my $log_offset = -s $node->logfile;

# --- mallory calls every function, with her search_path and pg_temp planted
($ret, $out, $err) = as_role('mallory', qq{
	$temp_plants
	$attacked
	\\set ON_ERROR_STOP 1
	SELECT sink_name FROM paimon_sink.create_sink('m_sink', 'mallory.m_t', buckets => 2);
	SELECT sink_name FROM paimon_sink.create_sink('m_kv_sink', 'mallory.m_kv', mode => 'upsert', buckets => 2);
	SELECT sink_name FROM paimon_sink.create_sink('m_gone_sink', 'mallory.m_gone');
	INSERT INTO mallory.m_sink VALUES (1, 'one'), (2, 'two');
	COPY mallory.m_sink FROM STDIN;
3	three
4	four
\\.
	SELECT row_count FROM paimon_sink.checkpoint('m_sink');
	INSERT INTO mallory.m_kv_sink VALUES (1, 'first'), (1, 'second'), (2, 'kept');
	INSERT INTO mallory.m_kv_sink (k, _row_kind) VALUES (2, '-D');
	SELECT row_count FROM paimon_sink.checkpoint('m_kv_sink');
	SET paimon_sink.commit_user = 'm-job';
	INSERT INTO mallory.m_sink VALUES (5, 'five');
	SELECT row_count FROM paimon_sink.prepare_commit('m_sink', 'm-job', 1);
	SELECT row_count FROM paimon_sink.commit('m_sink', 'm-job', 1);
	SELECT paimon_sink.last_committed_checkpoint('m_sink', 'm-job');
	INSERT INTO mallory.m_sink VALUES (6, 'discarded by recover');
	SELECT row_count FROM paimon_sink.prepare_commit('m_sink', 'm-job', 2);
	SELECT last_committed_checkpoint, discarded_checkpoints FROM paimon_sink.recover('m_sink', 'm-job', 1);
	SET paimon_sink.commit_user = 'm-bounded';
	INSERT INTO mallory.m_sink VALUES (7, 'seven');
	SELECT row_count FROM paimon_sink.end_input('m_sink', 'm-bounded');
	RESET paimon_sink.commit_user;
	SELECT paimon_sink.expire_snapshots('m_sink', 1, '0') IS NOT NULL;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.remove_orphan_files('m_sink', '0', true);
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.remove_orphan_files('m_sink', '0');
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.discard_missing_files('m_sink');
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.writer_status();
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.commit_progress();
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.fault_status();
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.in_doubt_status();
	SELECT paimon_sink.library_version() IS NOT NULL;
	SELECT paimon_sink.fdw_validator('{}', 0) IS NOT NULL;
	SELECT pg_catalog.count(*) IS NOT NULL FROM (SELECT * FROM paimon_sink.sinks UNION ALL SELECT * FROM paimon_sink.sinks) x;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.snapshots;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.pending_checkpoints;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.commit_stats;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.commit_progress;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.in_doubt;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.writers;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.faults;
	SELECT paimon_sink.drop_sink('m_gone_sink');
	\\set ON_ERROR_STOP 0
	SELECT paimon_sink.start_workers();
	SELECT paimon_sink.inject_fault('writer_after_ack', 'error');
	SELECT paimon_sink.release_fault('writer_after_ack');
	SELECT paimon_sink.clear_faults();
});
is($ret, 0, 'mallory\'s calls ran') or diag($err);
is($out, join("\n", qw(m_sink m_kv_sink m_gone_sink 4 4 1 1 1 1 1|1 1), ('t') x 18, ''),
	'each gave what it should');
is(scalar(() = $err =~ /ERROR:  42501: permission denied for function (start_workers|inject_fault|release_fault|clear_faults)/g),
	4, 'the functions she may not call refuse her (42501)') or diag($err);
is(clean("SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM mallory.m_t"),
	'1:one,2:two,3:three,4:four,5:five,7:seven', 'her sink committed her rows once, without the discarded one');
is(clean("SELECT string_agg(k || ':' || v, ',' ORDER BY k) FROM mallory.m_kv"), '1:second',
	'and her upsert sink the latest version of each key');

# --- the superuser calls every function, with the search_path mallory gave the database
($ret, $out, $err) = as_role($superuser, q{
	\set ON_ERROR_STOP 1
	SELECT sink_name FROM paimon_sink.create_sink('su_sink', 'public.su_t', buckets => 2);
	SELECT sink_name FROM paimon_sink.create_sink('su_kv_sink', 'public.su_kv', mode => 'upsert', buckets => 2);
	SELECT sink_name FROM paimon_sink.create_sink('su_p_sink', 'public.su_p', checkpoint_interval => '300 ms');
	SELECT sink_name FROM paimon_sink.create_sink('su_gone_sink', 'public.su_gone');
	INSERT INTO public.su_sink (id, v) SELECT g, 'Row' FROM pg_catalog.generate_series(1, 100) g;
	SELECT row_count FROM paimon_sink.checkpoint('su_sink');
	INSERT INTO public.su_kv_sink VALUES ('a', 1), ('a', 2), ('b', 3);
	SELECT row_count FROM paimon_sink.checkpoint('su_kv_sink');
	INSERT INTO public.su_kv_sink VALUES ('a', 4), ('c', 5);
	SELECT row_count FROM paimon_sink.checkpoint('su_kv_sink');
	SET paimon_sink.commit_user = 'su-job';
	INSERT INTO public.su_sink (id, v) VALUES (101, 'Job');
	SELECT row_count FROM paimon_sink.prepare_commit('su_sink', 'su-job', 1);
	SELECT row_count FROM paimon_sink.commit('su_sink', 'su-job', 1);
	INSERT INTO public.su_sink (id, v) VALUES (102, 'Discarded');
	SELECT row_count FROM paimon_sink.prepare_commit('su_sink', 'su-job', 2);
	SELECT last_committed_checkpoint, discarded_checkpoints FROM paimon_sink.recover('su_sink', 'su-job', 1, 'restore');
	SET paimon_sink.commit_user = 'su-bounded';
	INSERT INTO public.su_sink (id, v) VALUES (103, 'Bounded');
	SELECT row_count FROM paimon_sink.end_input('su_sink', 'su-bounded');
	RESET paimon_sink.commit_user;
	SELECT paimon_sink.last_committed_checkpoint('su_sink', 'su-job');
	SELECT paimon_sink.expire_snapshots('su_sink', 1, '0') IS NOT NULL;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.remove_orphan_files('su_sink', '0', true);
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.remove_orphan_files('su_sink', '0');
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.discard_missing_files('su_sink', 'su-job');
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.writer_status();
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.commit_progress();
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.fault_status();
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.in_doubt_status();
	SELECT paimon_sink.library_version() IS NOT NULL;
	SELECT paimon_sink.fdw_validator('{}', 0) IS NOT NULL;
	SELECT paimon_sink.start_workers() IS NOT NULL;
	SELECT paimon_sink.inject_fault('writer_after_ack', 'error') IS NOT NULL;
	SELECT paimon_sink.release_fault('writer_after_ack') IS NOT NULL;
	SELECT paimon_sink.clear_faults() IS NOT NULL;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.in_doubt;
	SELECT pg_catalog.count(*) IS NOT NULL FROM paimon_sink.commit_stats;
	SELECT paimon_sink.drop_sink('su_gone_sink');
});
is($ret, 0, 'the superuser\'s calls ran') or diag($err);
is($out, join("\n", qw(su_sink su_kv_sink su_p_sink su_gone_sink 100 3 2 1 1 1 1|1 1 1), ('t') x 16, ''),
	'each gave what it should');
is(clean("SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || count(*) FILTER (WHERE v_lower = lower(v)) FROM public.su_t"),
	'102 102 102', 'the commits ran the trigger, with pg_catalog\'s lower()');
is(clean("SELECT string_agg(k || ':' || v, ',' ORDER BY k) FROM public.su_kv"), 'a:4,b:3,c:5',
	'the upsert commits matched varchar keys with pg_catalog\'s =');

# --- worker paths: a periodic checkpoint
$node->safe_psql('victim', 'INSERT INTO public.su_p_sink SELECT pg_catalog.generate_series(1, 10)');
ok($node->poll_query_until('victim', 'SELECT pg_catalog.count(*) OPERATOR(pg_catalog.=) 10 FROM public.su_p'),
	'a periodic checkpoint commits');

# an in-doubt transaction, committed by the restarted committer
clean(q{SELECT paimon_sink.inject_fault('committer_after_prepare', 'fatal')});
$node->safe_psql('victim', q{INSERT INTO public.su_sink (id, v) VALUES (201, 'In doubt')});
$node->psql('victim', q{SELECT * FROM paimon_sink.checkpoint('su_sink')});
ok($node->poll_query_until('victim',
	"SELECT pg_catalog.count(*) OPERATOR(pg_catalog.=) 1 FROM public.su_t WHERE id OPERATOR(pg_catalog.=) 201"),
	'an in-doubt commit is finished by the restarted committer');
is(clean("SELECT count(*) FROM paimon_sink.in_doubt"), '0', 'nothing is left in doubt');

# writers restarted adopt their staged files
$node->safe_psql('victim', q{INSERT INTO public.su_sink (id, v) VALUES (202, 'Staged')});
clean(q{SELECT pg_terminate_backend(pid) FROM paimon_sink.writers});
ok(writers_ready($node, 'victim'), 'writers restart');
is(clean(q{SELECT row_count FROM paimon_sink.checkpoint('su_sink')}), '1', 'and adopt what was staged');

# scheduled orphan removal takes an unreferenced file
my $sink_id = clean(q{SELECT sink_id FROM paimon_sink.sinks WHERE sink_name = 'su_sink'});
my $dboid = clean(q{SELECT oid FROM pg_database WHERE datname = 'victim'});
my $orphan = $node->data_dir . "/pg_paimon_sink/$dboid/$sink_id/0a0b0c0d-0000-4000-8000-000000000042.stage";
open(my $fh, '>', $orphan) or die "cannot create $orphan: $!";
print $fh "orphan";
close $fh;
ok($node->poll_query_until('victim', "SELECT pg_catalog.pg_stat_file('$orphan', true) IS NULL"),
	'scheduled orphan removal takes an orphan file');

# expiry after commits keeps one snapshot per commit user at most
cmp_ok(clean(q{SELECT count(*) FROM paimon_sink.snapshots WHERE sink_name = 'su_sink'}), '<=', 3,
	'expiry after commits forgets old snapshots');

# a staged file of a pending checkpoint deleted by hand: discard_missing_files()
# forgets it (the committer's statement on the catalog), the rest commits
$node->safe_psql('victim', q{SET paimon_sink.commit_user = 'su-lost';
	INSERT INTO public.su_sink (id, v) VALUES (301, 'Kept');
	SET paimon_sink.writer_id = 1;
	INSERT INTO public.su_sink (id, v) VALUES (302, 'Lost')});
clean(q{SELECT count(*) FROM paimon_sink.prepare_commit('su_sink', 'su-lost', 1)});
my $lost = clean(q{SELECT file_name FROM paimon_sink.committable WHERE commit_user = 'su-lost' AND writer_id = 1});
unlink($node->data_dir . "/pg_paimon_sink/$dboid/$sink_id/$lost") or die "cannot remove $lost: $!";
($ret, $out, $err) = as_role($superuser, q{
	SELECT row_count FROM paimon_sink.discard_missing_files('su_sink', 'su-lost');
	SELECT row_count FROM paimon_sink.commit('su_sink', 'su-lost', 1);
});
is($out, "1\n1", 'discard_missing_files() forgets the missing file, and the rest commits') or diag($err);
is(clean(q{SELECT string_agg(v, ',') FROM public.su_t WHERE id IN (301, 302)}), 'Kept', 'without the lost row');

# drop_sink's staged files go once it commits
ok($node->poll_query_until('victim', 'SELECT pg_catalog.count(*) OPERATOR(pg_catalog.=) 0 FROM paimon_sink.dropped_sink'),
	'the committer removed the dropped sinks\' files');

# DROP EXTENSION, through its in-doubt check
($ret, $out, $err) = as_role($superuser, 'DROP EXTENSION paimon_sink CASCADE');
is($ret, 0, 'DROP EXTENSION runs its checks') or diag($err);

# --- nothing planted ever ran
is(clean('SELECT count(*) FROM mallory.hijacks'), '0', 'the side table is empty');
is(clean(q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f', 'mallory is not a superuser');
my $log = slurp_file($node->logfile);
my @ran = substr($log, $log_offset) =~ /(paimon_sink_hijack: [^\n]*)/g;
is(join("\n", @ran), '', 'no look-alike ran in any process');

done_testing();
