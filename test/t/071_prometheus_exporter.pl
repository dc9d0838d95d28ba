# contrib/prometheus/queries.yaml in Debian's prometheus-postgres-exporter:
# the exporter runs on 127.0.0.1 (a free port) as an unprivileged OS user,
# connected over the unix socket as a role that is only a member of
# pg_monitor, with nothing but the file's queries; this test reads /metrics
# over HTTP and checks every metric the file declares against the views it
# stands for: its # TYPE (counter or gauge, as the file's usage says), its
# # HELP, its labels (the file's LABEL columns, one series per row of the
# view) and its value (NULL exported as NaN).  Values are read between two
# reads of the views: a value the views held still must be exported as it
# is, one that moved (a time, an age) must lie between the two.  Under a
# load (pgbench into a sink, checkpoints every few hundred ms) the counters
# lie between the reads too; after the load, everything; after a crash
# restart (the exporter keeps running and reconnects), the sinks' counters
# are those of before the crash; after reset_sink_stats() by the pg_monitor
# role, they are zero and stats_reset moved.  test/check installs the
# package (test/lib/cluster.sh); without its binary the test says so and
# skips.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Spec;
use HTTP::Tiny;
use IPC::Run;
use Time::HiRes qw(usleep);
use PaimonSinkTest qw(ledger_setup start_load stop_load writers_ready source_dir);

my ($exporter) = grep { -x $_ }
  map { File::Spec->catfile($_, 'prometheus-postgres-exporter') } (split(/:/, $ENV{PATH}), '/usr/bin');
plan skip_all => 'prometheus-postgres-exporter is not installed (Debian package '
  . 'prometheus-postgres-exporter; test/check installs it as root)'
  unless defined $exporter;
plan skip_all => 'the exporter is not started as root: run the TAP files as an unprivileged user'
  if $> == 0;

my $yaml = File::Spec->catfile(source_dir(), '..', 'contrib', 'prometheus', 'queries.yaml');

# The file's queries: namespace => [ [column, usage, description], ... ] in
# its order (the file keeps to this simple layout: a namespace, its query,
# then "- column:" entries with usage and description).
my (%declared, @namespaces, $ns, $column);
open my $fh, '<', $yaml or die "$yaml: $!";
while (my $line = <$fh>)
{
	if ($line =~ /^(\w+):\s*$/) { $ns = $1; push @namespaces, $ns; $declared{$ns} = []; next; }
	if (defined $ns && $line =~ /^\s+- (\w+):\s*$/) { push @{ $declared{$ns} }, [ $1, undef, undef ]; next; }
	if (defined $ns && $line =~ /^\s+usage:\s*"(\w+)"/) { $declared{$ns}[-1][1] = $1; next; }
	if (defined $ns && $line =~ /^\s+description:\s*"(.*)"\s*$/) { $declared{$ns}[-1][2] = $1; next; }
}
close $fh;

# What each metric stands for, written from the views: per namespace one
# statement whose columns are the file's, in its order (labels as text, NULL
# for NaN).  A metric added to the file without its line here fails below.
my %from_views = (
	paimon_sink_sink => q{
		SELECT current_database(), s.sink_name, s.commit_user, s.commits, s.rows_committed,
			s.bytes_committed, s.failures, s.skipped_as_committed,
			extract(epoch FROM s.last_commit_time), extract(epoch FROM now() - s.last_commit_time),
			s.last_committed_checkpoint, s.pending_checkpoints,
			extract(epoch FROM now() - s.oldest_pending_prepared_at),
			s.staged_files, s.staged_rows, s.staged_bytes,
			s.open_files, s.open_rows, s.open_bytes, extract(epoch FROM now() - s.oldest_open_at),
			s.load_ms_p50 / 1000, s.load_ms_p99 / 1000, s.load_ms_max / 1000, s.load_samples,
			(SELECT c.interval_ms / 1000.0 FROM paimon_sink.checkpoint_schedule c
			  JOIN paimon_sink.sinks d USING (sink_name)
			  WHERE c.sink_name = s.sink_name AND d.default_commit_user = s.commit_user),
			extract(epoch FROM s.stats_reset)
		FROM paimon_sink.sink_stats s},
	paimon_sink_in_doubt => q{
		SELECT current_database(), (SELECT count(*) FROM paimon_sink.in_doubt WHERE ours),
			(SELECT count(*) FROM paimon_sink.in_doubt WHERE NOT ours),
			coalesce((SELECT extract(epoch FROM now() - min(prepared)) FROM paimon_sink.in_doubt WHERE ours), 0)},
	paimon_sink_writer => q{
		SELECT current_database(), writer, CASE WHEN ready THEN 1 ELSE 0 END,
			CASE WHEN fenced THEN 1 ELSE 0 END, fences, rows_staged, bytes_staged, files_open,
			queues_in_use, streams, fsyncs, handoffs
		FROM paimon_sink.writers},
	paimon_sink_schedule => q{
		SELECT current_database(), sink_name, interval_ms / 1000.0, checkpoints, overdue,
			last_late_ms / 1000.0, max_late_ms / 1000.0
		FROM paimon_sink.checkpoint_schedule});

is(join(',', sort @namespaces), join(',', sort keys %from_views),
	'every query of queries.yaml is checked here, and only those');
for my $n (@namespaces)
{
	my @bad = grep { !defined $_->[1] || $_->[1] !~ /^(LABEL|GAUGE|COUNTER)$/ || !defined $_->[2] || $_->[2] eq '' }
	  @{ $declared{$n} };
	is(join(',', map { $_->[0] } @bad), '', "$n: each column a LABEL, GAUGE or COUNTER with a description");
}

# --- a cluster with sinks: s under load, p checkpointed periodically, and a
# job whose commit failed (its checkpoint pending), after a skipped commit
my $node = PostgreSQL::Test::Cluster->new('exporter');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;
ledger_setup($node);
ok(writers_ready($node, 'postgres'), 'writers serve');
$node->safe_psql('postgres', q{
	CREATE TABLE p_target (id int, note text);
	SELECT sink_name FROM paimon_sink.create_sink('p', 'p_target', checkpoint_interval => '1 hour');
	CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF NEW.note = 'refused' THEN RAISE EXCEPTION 'refused row %', NEW.id; END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER refuse BEFORE INSERT ON target FOR EACH ROW EXECUTE FUNCTION refuse();
	CREATE ROLE exporter_mon LOGIN IN ROLE pg_monitor;
});
$node->safe_psql('postgres', q{
	SET paimon_sink.commit_user = 'job';
	INSERT INTO s VALUES (1, 0, 'job');
	SELECT count(*) FROM paimon_sink.prepare_commit('s', 'job', 1);
	SELECT count(*) FROM paimon_sink.commit('s', 'job', 1);
	SELECT count(*) FROM paimon_sink.commit('s', 'job', 1);
	INSERT INTO s VALUES (2, 0, 'refused');
	SELECT count(*) FROM paimon_sink.prepare_commit('s', 'job', 2);
});
my ($ret) = $node->psql('postgres', "SELECT count(*) FROM paimon_sink.commit('s', 'job', 2)");
isnt($ret, 0, 'the job\'s second commit fails: a failure, its checkpoint pending');

# --- the exporter, with nothing but the file's queries: its built-in
# metrics and every collector it has switched off (their names change between
# versions: 0.11's bgwriter is 0.13's stat_bgwriter; read from --help)
my ($help, $help_err) = ('', '');
IPC::Run::run([ $exporter, '--help' ], '<', \undef, '>', \$help, '2>', \$help_err);
my @collectors = map { "--no-collector.$_" }
  ("$help$help_err" =~ /^\s+--collector\.(\w+)\s/mg);
my ($version, $version_err) = ('', '');
IPC::Run::run([ $exporter, '--version' ], '<', \undef, '>', \$version, '2>', \$version_err);
note("$version$version_err" =~ /^(.*)$/m ? $1 : 'no version', '; switched off: ', join(' ', @collectors));
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $exporter_log = $node->basedir . '/exporter.log';
my $exporter_run;
{
	local $ENV{DATA_SOURCE_NAME} = sprintf('host=%s port=%d user=exporter_mon dbname=postgres sslmode=disable',
		$node->host, $node->port);
	$exporter_run = IPC::Run::start(
		[ $exporter, "--web.listen-address=127.0.0.1:$port", "--extend.query-path=$yaml",
			'--disable-default-metrics', '--disable-settings-metrics', @collectors, '--log.level=warn' ],
		'<', \undef, '>', $exporter_log, '2>&1');
}
sub exporter_output { return -e $exporter_log ? slurp_file($exporter_log) : ''; }
my $http = HTTP::Tiny->new(timeout => 10);

# scrape(): /metrics as { TYPE => {name => type}, HELP => {name => text},
# samples => {name => [ [ {labels}, value ], ... ]}, up => pg_up }
sub scrape
{
	my $res = $http->get("http://127.0.0.1:$port/metrics");
	return undef unless $res->{success};
	my %m = (TYPE => {}, HELP => {}, samples => {});
	for my $line (split /\n/, $res->{content})
	{
		if ($line =~ /^# TYPE (\S+) (\S+)$/) { $m{TYPE}{$1} = $2; next; }
		if ($line =~ /^# HELP (\S+) (.*)$/) { $m{HELP}{$1} = $2; next; }
		next if $line =~ /^#/;
		next unless $line =~ /^(\w+)(?:\{(.*)\})? (\S+)$/;
		my ($name, $labels, $value) = ($1, $2 // '', $3);
		my %l;
		while ($labels =~ /(\w+)="((?:[^"\\]|\\.)*)"/g) { $l{$1} = $2; }
		push @{ $m{samples}{$name} }, [ \%l, $value ];
	}
	$m{up} = $m{samples}{pg_up} ? $m{samples}{pg_up}[0][1] : undef;
	return \%m;
}

# scrape_ready(): waits (up to 60 s) for a scrape with the database up and
# the sinks' series in it
sub scrape_ready
{
	for (1 .. 120)
	{
		my $m = scrape();
		return $m if $m && defined $m->{up} && $m->{up} == 1 && $m->{samples}{paimon_sink_sink_commits};
		usleep(500_000);
	}
	return undef;
}

ok(defined scrape_ready(), 'the exporter serves /metrics with the sinks\' series')
  or diag('exporter output: ' . exporter_output());

# views(NS): the rows of the statement of namespace NS, read as the
# monitoring role: { label key => [ values ] }
sub views
{
	my ($n) = @_;
	my @cols = @{ $declared{$n} };
	my $rows = $node->safe_psql('postgres', $from_views{$n},
		extra_params => [ '-U', 'exporter_mon', '-F', "\t" ]);
	my %rows;
	for my $row (grep { $_ ne '' } split /\n/, $rows)
	{
		my @v = split /\t/, $row, -1;
		die "$n: the statement has " . scalar(@v) . ' columns, the file ' . scalar(@cols) if @v != @cols;
		my @key = map { "$cols[$_][0]=$v[$_]" } grep { $cols[$_][1] eq 'LABEL' } 0 .. $#cols;
		$rows{ join(',', @key) } = \@v;
	}
	return \%rows;
}

sub num { my ($v) = @_; return $v eq '' ? 'NaN' : $v; }

sub same
{
	my ($a, $b) = @_;
	return 1 if $a eq 'NaN' && $b eq 'NaN';
	return 0 if $a eq 'NaN' || $b eq 'NaN';
	return abs($a - $b) <= 1e-6 * (1 + abs($a));
}

# check(WHAT, COUNTERS_ONLY): reads the views, scrapes, reads the views
# again and compares every metric of the file; returns the problems found
# (a list of lines).  COUNTERS_ONLY (under load): the values of counters
# only, each between its two reads.
sub check
{
	my ($counters_only) = @_;
	my %before = map { $_ => views($_) } @namespaces;
	my $m = scrape() or return ('no answer from /metrics');
	my %after = map { $_ => views($_) } @namespaces;
	my @problems;
	for my $n (@namespaces)
	{
		my @cols = @{ $declared{$n} };
		my @labels = map { $_->[0] } grep { $_->[1] eq 'LABEL' } @cols;
		for my $i (grep { $cols[$_][1] ne 'LABEL' } 0 .. $#cols)
		{
			my ($col, $usage, $help) = @{ $cols[$i] };
			my $name = "${n}_$col";
			my $type = lc $usage;
			push @problems, "$name: # TYPE " . ($m->{TYPE}{$name} // 'missing') . ", not $type"
			  unless ($m->{TYPE}{$name} // '') eq $type;
			push @problems, "$name: # HELP differs" unless ($m->{HELP}{$name} // '') eq $help;
			my %got;
			for my $s (@{ $m->{samples}{$name} // [] })
			{
				my %l = %{ $s->[0] };
				delete $l{server};    # the exporter's own label
				my $keys = join(',', sort keys %l);
				push @problems, "$name: labels $keys, not " . join(',', sort @labels)
				  unless $keys eq join(',', sort @labels);
				$got{ join(',', map { "$_=" . ($l{$_} // '') } @labels) } = $s->[1];
			}
			next if $counters_only && $usage ne 'COUNTER';
			my %keys = (%{ $before{$n} }, %{ $after{$n} }, %got);
			for my $key (sort keys %keys)
			{
				if (!exists $got{$key})
				{
					push @problems, "$name\{$key\}: not exported"
					  if exists $before{$n}{$key} && exists $after{$n}{$key};
					next;
				}
				if (!exists $before{$n}{$key} || !exists $after{$n}{$key})
				{
					push @problems, "$name\{$key\}: exported, not in the view"
					  unless exists $before{$n}{$key} || exists $after{$n}{$key};
					next;
				}
				my ($a, $b, $v) = (num($before{$n}{$key}[$i]), num($after{$n}{$key}[$i]), $got{$key});
				next if same($a, $v) || same($b, $v);
				next if $a ne 'NaN' && $b ne 'NaN' && $v ne 'NaN'
				  && $v >= ($a < $b ? $a : $b) && $v <= ($a < $b ? $b : $a);
				push @problems, "$name\{$key\} = $v, the view $a then $b";
			}
		}
	}
	return @problems;
}

# check_ok(LABEL, COUNTERS_ONLY): check(), tried again for up to 10 s while it
# finds problems (a commit between the reads); one test
sub check_ok
{
	my ($label, $counters_only) = @_;
	my @problems;
	for (1 .. 20)
	{
		@problems = check($counters_only);
		last unless @problems;
		usleep(500_000);
	}
	is(join("\n", @problems), '', $label);
	return;
}

# the value of one series of the last scrape
sub metric
{
	my ($m, $name, %labels) = @_;
	for my $s (@{ $m->{samples}{$name} // [] })
	{
		return $s->[1] unless grep { ($s->[0]{$_} // '') ne $labels{$_} } keys %labels;
	}
	return undef;
}

my $own = $node->safe_psql('postgres', "SELECT default_commit_user FROM paimon_sink.sinks WHERE sink_name = 's'");

# --- under load
my $load = start_load($node, 1);
for my $round (1 .. 4)
{
	usleep(300_000);
	$node->safe_psql('postgres', "SELECT count(*) FROM paimon_sink.checkpoint('s')");
	check_ok("under load, round $round: types, help, labels, and the counters between two reads of the views", 1);
}
stop_load($load);
$node->safe_psql('postgres', "SELECT count(*) FROM paimon_sink.checkpoint('s')");
check_ok('after the load: every metric is its view\'s');
my $m = scrape();
cmp_ok(metric($m, 'paimon_sink_sink_commits', sink_name => 's', commit_user => $own), '>=', 4,
	'the load\'s commits are counted');
is(metric($m, 'paimon_sink_sink_failures', sink_name => 's', commit_user => 'job'), '1', 'the job\'s failure');
is(metric($m, 'paimon_sink_sink_skipped_as_committed', sink_name => 's', commit_user => 'job'), '1',
	'its skipped commit');
is(metric($m, 'paimon_sink_sink_pending_checkpoints', sink_name => 's', commit_user => 'job'), '1',
	'its pending checkpoint');
is(metric($m, 'paimon_sink_sink_seconds_since_last_commit', sink_name => 'p'), 'NaN',
	'a commit user that never committed: NaN');
is(metric($m, 'paimon_sink_schedule_interval_seconds', sink_name => 'p'), '3600', 'p\'s schedule');
my $commits = metric($m, 'paimon_sink_sink_commits', sink_name => 's', commit_user => $own);

# --- a crash restart, the exporter running on
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'writers serve after the crash');
ok(defined scrape_ready(), 'the exporter reconnects after the crash') or diag('exporter output: ' . exporter_output());
check_ok('after the crash: every metric is its view\'s');
$m = scrape();
is(metric($m, 'paimon_sink_sink_commits', sink_name => 's', commit_user => $own), $commits,
	'the commits counted before the crash are exported after it');
is(metric($m, 'paimon_sink_sink_failures', sink_name => 's', commit_user => 'job'), '1',
	'and the failure');

# --- a reset by the monitoring role
my $reset_before = metric($m, 'paimon_sink_sink_stats_reset_seconds', sink_name => 's', commit_user => $own);
usleep(10_000);
$node->safe_psql('postgres', 'SELECT paimon_sink.reset_sink_stats()', extra_params => [ '-U', 'exporter_mon' ]);
check_ok('after reset_sink_stats(): every metric is its view\'s');
$m = scrape();
is(join(',', map { $_->[1] } @{ $m->{samples}{paimon_sink_sink_commits} }),
	join(',', map { 0 } @{ $m->{samples}{paimon_sink_sink_commits} }), 'every commits counter is 0');
is(metric($m, 'paimon_sink_sink_failures', sink_name => 's', commit_user => 'job'), '0', 'failures too');
cmp_ok(metric($m, 'paimon_sink_sink_stats_reset_seconds', sink_name => 's', commit_user => $own), '>',
	$reset_before, 'stats_reset moved');

# --- stop what was started
$exporter_run->signal('TERM');
eval { $exporter_run->finish; };
$node->stop;
done_testing();
