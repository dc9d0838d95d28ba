# PaimonSinkPooler -- PgBouncer (Debian's package) in front of a TAP node,
# as production reaches PostgreSQL.
#
#   my $why = PaimonSinkPooler::missing();     # undef, or why there is none
#   my $pooler = PaimonSinkPooler->start($node, 'txn',
#       mode => 'transaction', pool_size => 2, users => ['job_user']);
#   my ($ret, $out, $err) = PaimonSinkTest::try_sql($pooler, 'SELECT 1');
#   my $session = $pooler->background_psql('postgres', on_error_stop => 0);
#   $pooler->pools;                            # SHOW POOLS, as hashes
#   $pooler->stop;                             # (also at exit)
#
# PgBouncer runs as the test's OS user in a short temp dir (its unix socket,
# configuration and pidfile; test/lib/cluster.sh's ps_cleanup stops one a
# killed test left behind, by its pidfile), listening on that socket only,
# passing every database to the node's socket; pool_mode session or
# transaction, default_pool_size server connections per (database, user);
# auth_type trust with an auth_file naming the users (the node's own trust
# on its socket does the rest); its log in the TAP log folder.  A pooler is
# a PostgreSQL::Test::Cluster for the client side only: psql, safe_psql,
# background_psql, poll_query_until and connstr reach the node through it
# (never start, stop or anything else of a server).
package PaimonSinkPooler;

use strict;
use warnings;
use parent -norequire, 'PostgreSQL::Test::Cluster';
use File::Basename qw(basename);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# Debian's package pgbouncer (test/lib/cluster.sh's PS_PACKAGES)
my $PGBOUNCER = '/usr/sbin/pgbouncer';
my @started;

# missing(): undef when PgBouncer can run here, else a sentence saying why
# not (for the test's skip_all).
sub missing
{
	return undef if -x $PGBOUNCER;
	return "$PGBOUNCER not found: install Debian's package pgbouncer "
	  . "(test/check does, as root, when it is missing)";
}

# start(CLASS, NODE, NAME, mode => MODE, pool_size => N, users => [...]):
# starts PgBouncer named NAME in front of the running NODE, in pool mode
# MODE (session, transaction; default transaction) with N server
# connections per pool (default 2), USERS (besides the test's OS user, the
# node's bootstrap superuser and the admin console's) allowed to log in;
# waits until it answers (the test dies with its log when it does not) and
# returns it.
sub start
{
	my ($class, $node, $name, %p) = @_;
	my $mode = $p{mode} // 'transaction';
	die "pool mode $mode: session or transaction"
	  unless $mode eq 'session' || $mode eq 'transaction';
	my $size = $p{pool_size} // 2;
	my $os_user = getpwuid($<);
	my $dir = PostgreSQL::Test::Utils::tempdir_short();
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $test = basename($0, '.pl');
	my $log = "$PostgreSQL::Test::Utils::log_path/${test}_pgbouncer_$name.log";
	my $self = bless {
		_name => "pgbouncer_$name",
		_host => $dir,
		_port => $port,
		_basedir => $dir,
		_logfile => $log,
		_install_path => $node->{_install_path},
		mode => $mode,
		pool_size => $size,
	}, $class;

	PostgreSQL::Test::Utils::append_to_file("$dir/userlist.txt",
		join('', map { "\"$_\" \"\"\n" } ($os_user, @{ $p{users} // [] })));
	PostgreSQL::Test::Utils::append_to_file("$dir/pgbouncer.ini", join("\n",
		'[databases]',
		'* = host=' . $node->host . ' port=' . $node->port,
		'',
		'[pgbouncer]',
		'listen_addr =',
		"listen_port = $port",
		"unix_socket_dir = $dir",
		'auth_type = trust',
		"auth_file = $dir/userlist.txt",
		"admin_users = $os_user",
		"pool_mode = $mode",
		"default_pool_size = $size",
		'max_client_conn = 200',
		# clients are refused this long after a failed server login
		'server_login_retry = 1',
		# a server connection is checked before it serves a client, so that
		# one a crash-restart ended is never handed out
		'server_check_delay = 0',
		"logfile = $log",
		"pidfile = $dir/pgbouncer.pid",
		''));
	# as a daemon (-d): it writes its pidfile, which stop() and
	# test/lib/cluster.sh's ps_stop_poolers read
	my $ret = system($PGBOUNCER, '-d', "$dir/pgbouncer.ini");
	my $tail = sub { return -f $log ? slurp_file($log) : ''; };
	die "PgBouncer $name did not start (exit $ret): " . $tail->() if $ret != 0;
	$self->{_pidfile} = "$dir/pgbouncer.pid";
	push @started, $self;
	for (my $i = 0; $self->psql('pgbouncer', 'SHOW VERSION') != 0; $i++)
	{
		die "PgBouncer $name does not answer after 30 s: " . $tail->() if $i >= 300;
		usleep(100_000);
	}
	note "PgBouncer $name: pool_mode $mode, default_pool_size $size, socket $dir port $port";
	return $self;
}

# mode(): the pool mode (session, transaction).
sub mode { return $_[0]->{mode}; }

# pool_size(): the server connections per pool.
sub pool_size { return $_[0]->{pool_size}; }

# pools(): SHOW POOLS of its admin console, one hash per pool (database,
# user, cl_active, cl_waiting, sv_active, sv_idle, sv_used, ...).
sub pools
{
	my ($self) = @_;
	my $out = $self->safe_psql('pgbouncer', 'SHOW POOLS', extra_params => [ '-F', "\t", '-P', 'tuples_only=off' ]);
	my ($head, @rows) = split /\n/, $out;
	my @names = split /\t/, $head;
	my @pools;
	for my $row (@rows)
	{
		next unless $row =~ /\t/;
		my %h;
		@h{@names} = split /\t/, $row, -1;
		push @pools, \%h;
	}
	return @pools;
}

# server_connections(USER): how many server connections the pool of
# database postgres and USER holds now (active, idle, used, tested, login).
sub server_connections
{
	my ($self, $user) = @_;
	my $n = 0;
	for my $pool ($self->pools)
	{
		next unless $pool->{database} eq 'postgres' && $pool->{user} eq $user;
		$n += $pool->{$_} // 0 for qw(sv_active sv_idle sv_used sv_tested sv_login);
	}
	return $n;
}

# clients(USER): how many clients of USER the pool of database postgres
# holds now (active: logged in, idle or served; waiting for a server
# connection).
sub clients
{
	my ($self, $user) = @_;
	my $n = 0;
	for my $pool ($self->pools)
	{
		next unless $pool->{database} eq 'postgres' && $pool->{user} eq $user;
		$n += $pool->{$_} // 0 for qw(cl_active cl_waiting);
	}
	return $n;
}

# stop(): ends PgBouncer (SIGTERM, its immediate shutdown; SIGKILL after
# 10 s), by its pidfile; harmless when it is not running.
sub stop
{
	my ($self) = @_;
	my $pidfile = delete $self->{_pidfile};
	return unless $pidfile && -f $pidfile;
	my $pid = slurp_file($pidfile);
	chomp $pid;
	return unless $pid =~ /^\d+$/ && kill(0, $pid);
	kill 'TERM', $pid;
	for (my $i = 0; $i < 100 && kill(0, $pid); $i++)
	{
		usleep(100_000);
	}
	kill 'KILL', $pid if kill(0, $pid);
	return;
}

# every pooler is stopped at exit, before the temp dirs are removed (this
# END block runs before File::Temp's, which was compiled first)
END
{
	my $exit_code = $?;
	$_->stop for @started;
	$? = $exit_code;
}

1;
