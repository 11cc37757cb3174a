# tests/lib/stack.sh — start and stop the components of a bindery stack.
#
# Sourced by ./dev and by end-to-end tests that stop and restart MariaDB or
# Azurite under a running responder.  Bash only.  Everything a stack owns lives
# in one state directory (STACK_VAR: var/ for ./dev up, var/test/ for
# ./dev test, $BINDERY_TEST_VAR inside tests):
#
#   ports.env     the ports chosen once (DB_PORT BLOB_PORT HTTP_PORT APACHE_PORT
#                 TLS_BLOB_PORT APACHE_POOL_PORT)
#   secrets.env   generated passwords and tokens (mode 0600)
#   run/NAME.pid  one PID file per component we started (written by the
#                 process itself just before it execs the real program)
#   run/          sockets;  log/ logs;  db/ MariaDB datadir;  azurite/ blobs
#   www.path      the directory Apache's www-data reads the responder from
#                 (and where the pool, bindery.fcgi --listen, has its socket)
#
# Components are stopped by the PID in their PID file, never by name, and a
# PID is only trusted when /proc/PID/cmdline still names the program and this
# state directory (so a recycled PID is never signalled).
#
# Use:  . tests/lib/stack.sh; stack_init "$BINDERY_TEST_VAR"
#       stack_mariadb_stop; ...; stack_mariadb_start
#       stack_azurite_stop; ...; stack_azurite_start

STACK_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STACK_ACCOUNT=devstoreaccount1
# Azurite's well-known development key (public, documented by Microsoft).
STACK_ACCOUNT_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
STACK_WWW_USER=www-data

stack_log() { printf '%s\n' "stack: $*" >&2; }

# stack_init DIR: use DIR as the state directory; load remembered ports and secrets.
stack_init() {
	mkdir -p "$1"
	STACK_VAR=$(cd "$1" && pwd)
	STACK_RUN=$STACK_VAR/run
	STACK_LOG=$STACK_VAR/log
	mkdir -p "$STACK_RUN" "$STACK_LOG" "$STACK_VAR/tmp"
	STACK_SOCK=$STACK_RUN/mysqld.sock
	DB_PORT='' BLOB_PORT='' HTTP_PORT='' APACHE_PORT='' TLS_BLOB_PORT='' APACHE_POOL_PORT=''
	# shellcheck disable=SC1091
	[ -f "$STACK_VAR/ports.env" ] && . "$STACK_VAR/ports.env"
	# shellcheck disable=SC1091
	[ -f "$STACK_VAR/secrets.env" ] && . "$STACK_VAR/secrets.env"
	return 0
}

stack_mariadbd() { command -v mariadbd 2>/dev/null || echo /usr/sbin/mariadbd; }
stack_lighttpd_bin() { command -v lighttpd 2>/dev/null || echo /usr/sbin/lighttpd; }
stack_apache_bin() { command -v apache2 2>/dev/null || echo /usr/sbin/apache2; }

# stack_port_free PORT: true when nothing listens on 127.0.0.1/any:PORT.
stack_port_free() {
	[ -z "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

# stack_port NAME START: the port remembered as NAME in ports.env; otherwise
# the first free port from START + STACK_PORT_OFFSET (never 10100-10199,
# never one listed in STACK_AVOID_PORTS or already remembered), saved.
# Prints nothing; sets NAME.  ./dev test runs its lanes' tests side by side,
# each lane with its own offset: a test's "free" port is not another lane's
# between its check here and its server's bind.
stack_port() {
	local name=$1 p=$(($2 + ${STACK_PORT_OFFSET:-0})) used cur
	cur=${!name:-}
	if [ -n "$cur" ]; then
		return 0
	fi
	used=" ${STACK_AVOID_PORTS:-} ${DB_PORT:-} ${BLOB_PORT:-} ${HTTP_PORT:-} ${APACHE_PORT:-} ${TLS_BLOB_PORT:-}"
	used+=" ${APACHE_POOL_PORT:-} "
	while :; do
		if [ "$p" -ge 10100 ] && [ "$p" -le 10199 ]; then
			p=10200
		fi
		case $used in *" $p "*) p=$((p + 1)); continue ;; esac
		stack_port_free "$p" && break
		p=$((p + 1))
		[ "$p" -lt 65000 ] || { stack_log "no free port for $name"; return 1; }
	done
	printf -v "$name" '%s' "$p"
	stack_save_ports
}

# stack_forget_port NAME: drop a remembered port (it is taken by someone else).
stack_forget_port() {
	printf -v "$1" '%s' ''
	stack_save_ports
}

stack_save_ports() {
	printf 'DB_PORT=%s\nBLOB_PORT=%s\nHTTP_PORT=%s\nAPACHE_PORT=%s\nTLS_BLOB_PORT=%s\nAPACHE_POOL_PORT=%s\n' \
		"${DB_PORT:-}" "${BLOB_PORT:-}" "${HTTP_PORT:-}" "${APACHE_PORT:-}" "${TLS_BLOB_PORT:-}" \
		"${APACHE_POOL_PORT:-}" >"$STACK_VAR/ports.env.tmp" && mv "$STACK_VAR/ports.env.tmp" "$STACK_VAR/ports.env"
}

stack_random_hex() { od -An -tx1 -N"${1:-16}" /dev/urandom | tr -d ' \n'; }

# stack_secrets: generate DB_PASSWORD, DB_MIGRATE_PASSWORD, DEMO_TOKEN,
# OTHER_TOKEN once (secrets.env, 0600).
stack_secrets() {
	DB_PASSWORD=${DB_PASSWORD:-$(stack_random_hex 16)}
	DB_MIGRATE_PASSWORD=${DB_MIGRATE_PASSWORD:-$(stack_random_hex 16)}
	DEMO_TOKEN=${DEMO_TOKEN:-$(stack_random_hex 20)}
	OTHER_TOKEN=${OTHER_TOKEN:-$(stack_random_hex 20)}
	# Written every time: the values may have been loaded from a state
	# directory that was since wiped (./dev test starts from a clean one).
	(umask 077 && printf 'DB_PASSWORD=%s\nDB_MIGRATE_PASSWORD=%s\nDEMO_TOKEN=%s\nOTHER_TOKEN=%s\n' \
		"$DB_PASSWORD" "$DB_MIGRATE_PASSWORD" "$DEMO_TOKEN" "$OTHER_TOKEN" >"$STACK_VAR/secrets.env.new" &&
		mv "$STACK_VAR/secrets.env.new" "$STACK_VAR/secrets.env")
}

# stack_render SRC DST KEY=VALUE...: copy SRC to DST replacing each @KEY@;
# DST is left untouched (mtime too) when its content would not change.
# @CONFDIR@ (where the web server configs find the pages of conf/) is this
# tree's conf/ unless a KEY says otherwise.
stack_render() {
	local src=$1 dst=$2 kv k v script=
	shift 2
	set -- "$@" CONFDIR="$STACK_TOP/conf"	# after the caller's: the first s||| wins
	for kv in "$@"; do
		k=${kv%%=*}
		v=${kv#*=}
		v=$(printf '%s' "$v" | sed -e 's/[\\|&]/\\&/g')
		script+="s|@${k}@|${v}|g;"
	done
	sed -e "$script" "$src" >"$dst.tmp" || return 1
	if grep -n '@[A-Z_]*@' "$dst.tmp" | grep -v '^[0-9]*:[[:space:]]*[#;]' >/dev/null; then
		stack_log "unreplaced placeholder in $dst:"
		grep -n '@[A-Z_]*@' "$dst.tmp" | grep -v '^[0-9]*:[[:space:]]*[#;]' >&2
		rm -f "$dst.tmp"
		return 1
	fi
	if cmp -s "$dst.tmp" "$dst"; then
		rm -f "$dst.tmp"
	else
		mv -f "$dst.tmp" "$dst"
	fi
}

# --- processes -------------------------------------------------------------

# stack_pid NAME: print the PID of component NAME if it is alive and ours.
# The pool (bindery.fcgi --listen) runs from the www dir, which may be a
# directory of /tmp (stack_www_dir): its command line names that instead.
stack_pid() {
	local name=$1 pid marker state cmd ours=$STACK_VAR
	[ -f "$STACK_RUN/$name.pid" ] || return 1
	read -r pid <"$STACK_RUN/$name.pid" 2>/dev/null || return 1
	case $pid in '' | *[!0-9]*) return 1 ;; esac
	[ -r "/proc/$pid/cmdline" ] || return 1
	state=$(sed -e 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] || return 1
	case $name in
	mariadb) marker=mariadbd ;;
	azurite) marker=azurite-blob ;;
	lighttpd) marker=lighttpd ;;
	apache | apache-pool) marker=apache2 ;;
	pool)
		marker=bindery.fcgi
		[ -f "$STACK_VAR/www.path" ] && read -r ours <"$STACK_VAR/www.path"
		[ -n "$ours" ] || return 1 ;;
	*) marker=$name ;;
	esac
	# The process may exit between the checks: silence the redirect itself.
	cmd=$({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null)
	case $cmd in *"$marker"*) ;; *) return 1 ;; esac
	case $cmd in *"$ours"*) ;; *) return 1 ;; esac
	printf '%s\n' "$pid"
}

stack_alive() { stack_pid "$1" >/dev/null; }

# stack_spawn NAME LOG CMD...: start CMD detached (own session, stdin from
# /dev/null, output appended to LOG); the child writes run/NAME.pid itself.
stack_spawn() {
	local name=$1 log=$2 i
	shift 2
	rm -f "$STACK_RUN/$name.pid"
	setsid bash -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' \
		"$STACK_RUN/$name.pid" "$@" </dev/null >>"$log" 2>&1 &
	for i in $(seq 1 50); do
		[ -s "$STACK_RUN/$name.pid" ] && return 0
		sleep 0.1
	done
	stack_log "$name did not start (see $log)"
	return 1
}

# stack_stop NAME [SECONDS]: SIGTERM the component by PID, SIGKILL after SECONDS.
stack_stop() {
	local name=$1 limit=${2:-30} pid i
	if ! pid=$(stack_pid "$name"); then
		rm -f "$STACK_RUN/$name.pid"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < limit * 10; i++)); do
		stack_alive "$name" || break
		sleep 0.1
	done
	if stack_alive "$name"; then
		stack_log "$name (pid $pid) ignored SIGTERM for ${limit}s; sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.2
	fi
	rm -f "$STACK_RUN/$name.pid"
}

# stack_owns_port NAME PORT: true when the process NAME started listens on
# 127.0.0.1:PORT (its pid is among the socket's owners).
stack_owns_port() {
	local pid
	pid=$(stack_pid "$1") || return 1
	ss -ltnpH "( sport = :$2 )" 2>/dev/null | grep -q "pid=$pid,"
}

# stack_wait_http URL SECONDS NAME: wait until URL answers any HTTP status.
stack_wait_http() {
	local url=$1 limit=$2 name=$3 i code port
	port=${url#*://*:}
	port=${port%%/*}
	for ((i = 0; i < limit * 10; i++)); do
		# shellcheck disable=SC2086 # options, split on purpose
		code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' ${STACK_WAIT_CURL_OPTS:-} "$url" \
			2>/dev/null) || code=000
		# An answer counts only from our own process: another stack may
		# have taken the port between the check and our bind, and then
		# this one would quietly talk to the other's server.
		[ "$code" != 000 ] && stack_owns_port "$name" "$port" && return 0
		stack_alive "$name" || { stack_log "$name exited while starting"; return 1; }
		sleep 0.1
	done
	stack_log "$name: no answer from $url after ${limit}s"
	return 1
}

# --- MariaDB ---------------------------------------------------------------

# --skip-ssl: root over the local socket; the client's TLS handshake with
# the server (which offers TLS) cost 40 ms of CPU a call, and the tests
# make thousands (tests/lib/db.sh's sql too).
stack_mysql() {
	mariadb --no-defaults --skip-ssl --protocol=socket --socket="$STACK_SOCK" -uroot "$@"
}

# stack_mariadb_tls: a CA and a server certificate for 127.0.0.1 signed by it,
# in $STACK_VAR/db-tls (made once), so clients can try [database] tls =
# verify against the stack's MariaDB.  TLS stays optional for clients.
stack_mariadb_tls() {
	local d=$STACK_VAR/db-tls
	[ -s "$d/server-cert.pem" ] && [ -s "$d/ca.pem" ] && return 0
	mkdir -p "$d" && chmod 0755 "$d"
	{
		openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=bindery test CA" \
			-keyout "$d/ca-key.pem" -out "$d/ca.pem" &&
		openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
			-keyout "$d/server-key.pem" -out "$d/server.csr" &&
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$d/san.ext" &&
		openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca-key.pem" \
			-CAcreateserial -days 3650 -extfile "$d/san.ext" -out "$d/server-cert.pem"
	} >"$STACK_LOG/mariadb-tls.log" 2>&1 || {
		stack_log "cannot make MariaDB's test certificate:"; tail -n 5 "$STACK_LOG/mariadb-tls.log" >&2; return 1; }
	chmod 0644 "$d/ca.pem" "$d/server-cert.pem"
}

# STACK_MARIADB_EXTRA (an array, empty by default) adds mariadbd options
# (tests/lib/cluster.sh: wsrep); STACK_MARIADB_WAIT is how many tenths of a
# second to wait for it to answer (default 300).
STACK_MARIADB_EXTRA=()
stack_mariadb_start() {
	local user i
	stack_alive mariadb && return 0
	stack_mariadb_tls || return 1
	user=$(id -un)
	if [ ! -d "$STACK_VAR/db/mysql" ]; then
		rm -rf "$STACK_VAR/db"
		mkdir -p "$STACK_VAR/db"
		# A temporary directory of its own: two bootstraps at once in
		# /tmp (./dev test's lanes) collide on their temporary tables.
		mariadb-install-db --no-defaults --datadir="$STACK_VAR/db" --user="$user" \
			--auth-root-authentication-method=normal --skip-test-db --tmpdir="$STACK_VAR/tmp" \
			>"$STACK_LOG/mariadb-install.log" 2>&1 || {
			stack_log "mariadb-install-db failed:"; tail -n 20 "$STACK_LOG/mariadb-install.log" >&2; return 1; }
	fi
	if [ -z "${DB_PORT:-}" ] || ! stack_port_free "$DB_PORT"; then
		[ -n "${DB_PORT:-}" ] && stack_log "port $DB_PORT is taken; choosing another for MariaDB"
		stack_forget_port DB_PORT
		stack_port DB_PORT "${STACK_DB_PORT_START:-3307}" || return 1
	fi
	rm -f "$STACK_SOCK"
	stack_spawn mariadb "$STACK_LOG/mariadb.out" "$(stack_mariadbd)" --no-defaults \
		--user="$user" --datadir="$STACK_VAR/db" --tmpdir="$STACK_VAR/tmp" --socket="$STACK_SOCK" \
		--port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
		--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
		--ssl-ca="$STACK_VAR/db-tls/ca.pem" --ssl-cert="$STACK_VAR/db-tls/server-cert.pem" \
		--ssl-key="$STACK_VAR/db-tls/server-key.pem" \
		--pid-file="$STACK_RUN/mariadbd.pid" --log-error="$STACK_LOG/mariadb.log" \
		"${STACK_MARIADB_EXTRA[@]}" || return 1
	for ((i = 0; i < ${STACK_MARIADB_WAIT:-300}; i++)); do
		if [ -S "$STACK_SOCK" ] && mariadb-admin --no-defaults --skip-ssl --socket="$STACK_SOCK" -uroot ping >/dev/null 2>&1; then
			return 0
		fi
		stack_alive mariadb || break
		sleep 0.1
	done
	stack_log "MariaDB did not start; last lines of $STACK_LOG/mariadb.log:"
	tail -n 20 "$STACK_LOG/mariadb.log" >&2 2>/dev/null
	return 1
}

stack_mariadb_stop() { stack_stop mariadb 60; }

# stack_mariadb_setup: database `bindery` and its two accounts, made by
# sql/grants.sql (the runbook doc/deploying.md gives admins) for the socket and TCP:
# `bindery` (DB_PASSWORD) reads and writes rows only, as the responder, sweep
# and audit do in production; `bindery_migrate` (DB_MIGRATE_PASSWORD) also
# holds the DDL `bindery migrate` needs.  The migration account may also
# create and drop scratch databases bindery_* for tests.
stack_mariadb_setup() {
	local h
	for h in localhost 127.0.0.1; do
		# The rendered script holds both passwords: owner-only, removed after.
		(umask 077 && stack_render "$STACK_TOP/sql/grants.sql" "$STACK_VAR/tmp/grants.sql" \
			DB_NAME=bindery HOST="$h" RUNTIME_USER=bindery RUNTIME_PASSWORD="$DB_PASSWORD" \
			MIGRATE_USER=bindery_migrate MIGRATE_PASSWORD="$DB_MIGRATE_PASSWORD") || return 1
		stack_mysql <"$STACK_VAR/tmp/grants.sql" || { rm -f "$STACK_VAR/tmp/grants.sql"; return 1; }
		rm -f "$STACK_VAR/tmp/grants.sql"
		echo "GRANT ALL PRIVILEGES ON \`bindery\\_%\`.* TO 'bindery_migrate'@'$h';" | stack_mysql || return 1
	done
	echo "FLUSH PRIVILEGES;" | stack_mysql
}

# --- Azurite ---------------------------------------------------------------

stack_blob_endpoint() { printf 'http://127.0.0.1:%s/%s' "$BLOB_PORT" "$STACK_ACCOUNT"; }

stack_connection_string() {
	printf 'DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;' \
		"$STACK_ACCOUNT" "$STACK_ACCOUNT_KEY" "$(stack_blob_endpoint)"
}

stack_azurite_start() {
	local bin=$STACK_TOP/node_modules/.bin/azurite-blob attempt
	stack_alive azurite && return 0
	[ -x "$bin" ] || { stack_log "$bin is missing (./dev up installs it)"; return 1; }
	if [ -z "${BLOB_PORT:-}" ] || ! stack_port_free "$BLOB_PORT"; then
		[ -n "${BLOB_PORT:-}" ] && stack_log "port $BLOB_PORT is taken; choosing another for Azurite"
		stack_forget_port BLOB_PORT
		stack_port BLOB_PORT "${STACK_BLOB_PORT_START:-10000}" || return 1
	fi
	mkdir -p "$STACK_VAR/azurite"
	# Azurite binds a second or two after it starts: another stack on this
	# machine can take the port in between.  Then ours exits (EADDRINUSE)
	# and we try once more on another port.
	local tried
	for attempt in 1 2; do
		stack_spawn azurite "$STACK_LOG/azurite.log" "$bin" --blobHost 127.0.0.1 \
			--blobPort "$BLOB_PORT" --location "$STACK_VAR/azurite" --disableTelemetry || return 1
		stack_wait_http "http://127.0.0.1:$BLOB_PORT/$STACK_ACCOUNT?comp=list" 60 azurite && return 0
		stack_stop azurite 20
		[ "$attempt" = 1 ] || break
		stack_log "Azurite did not take port $BLOB_PORT; choosing another"
		# Forgetting the port empties BLOB_PORT: count on from the one tried
		# (from $((BLOB_PORT + 1)) afterwards it was port 1).
		tried=$BLOB_PORT
		stack_forget_port BLOB_PORT
		stack_port BLOB_PORT "$((tried + 1))" || return 1
	done
	tail -n 20 "$STACK_LOG/azurite.log" >&2
	return 1
}

stack_azurite_stop() { stack_stop azurite 20; }

# stack_bench_target: the stack a benchmark measures, as conf (its
# bindery.conf) and bin (the directory of its programs): the one
# `./dev test --keep` exported (BINDERY_CONFIG, BINDERY_TEST_BIN), else
# var/test's, else the one ./dev up started.
stack_bench_target() {
	if [ -n "${BINDERY_CONFIG:-}" ] && [ -n "${BINDERY_TEST_BIN:-}" ]; then
		conf=$BINDERY_CONFIG bin=$BINDERY_TEST_BIN
	elif [ -r "$STACK_TOP/var/test/bindery.conf" ] && [ -x "$STACK_TOP/var/test-build/app/bindery.fcgi" ]; then
		conf=$STACK_TOP/var/test/bindery.conf bin=$STACK_TOP/var/test-build/app
	else
		conf=$STACK_TOP/var/bindery.conf bin=$STACK_TOP/var/build/app
	fi
}

# stack_bench_lighttpd BINDIR CONFIG MIB START-PORT: a benchmark's own
# lighttpd in STACK_VAR (the caller's stack_init) from conf/lighttpd.conf,
# serving BINDIR's bindery.fcgi with CONFIG on the first free port from
# START-PORT (HTTP_PORT; STACK_AVOID_PORTS holds the ports not to take),
# its request-body limit raised past a MIB document (unless MIB is empty).
# Status 1, saying why, when it did not start.
stack_bench_lighttpd() {
	local bindir=$1 config=$2 mib=$3
	HTTP_PORT=
	stack_port HTTP_PORT "$4" || { stack_log "no free port from $4"; return 1; }
	stack_render "$STACK_TOP/conf/lighttpd.conf" "$STACK_VAR/lighttpd.conf" PORT="$HTTP_PORT" \
		VAR="$STACK_VAR" BINDIR="$bindir" CONFIG="$config" || { stack_log "bad conf/lighttpd.conf"; return 1; }
	[ -z "$mib" ] || sed -i "s/^server.max-request-size = .*/server.max-request-size = $(((mib + 16) * 1024 + 64))/" \
		"$STACK_VAR/lighttpd.conf" || return 1
	stack_lighttpd_start "$STACK_VAR/lighttpd.conf" || { stack_log "lighttpd did not start"; return 1; }
}

# --- Azurite over TLS, addressed like a real account -------------------------

# The account-host name of the TLS Azurite: libcurl resolves any *.localhost
# name to the loopback address itself, so production's URL shape
# (https://ACCOUNT.blob.SUFFIX) runs on this machine.
STACK_TLS_BLOB_HOST=devstoreaccount1.blob.localhost

# stack_tls_certs: a CA made for this stack and a certificate it signed for
# $STACK_TLS_BLOB_HOST and 127.0.0.1 (not "localhost", so another name
# can show a host-name mismatch), in $STACK_VAR/azurite-tls-ca/.  Sets
# STACK_TLS_CA (the CA's PEM for [storage] ca_file).
stack_tls_certs() {
	local d=$STACK_VAR/azurite-tls-ca
	STACK_TLS_CA=$d/ca.pem
	[ -s "$d/server.pem" ] && [ -s "$STACK_TLS_CA" ] && return 0
	mkdir -p "$d" && chmod 0755 "$d" || return 1
	openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=bindery test CA $$" \
		-keyout "$d/ca.key" -out "$STACK_TLS_CA" -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>"$d/openssl.log" &&
	openssl req -newkey rsa:2048 -nodes -subj "/CN=$STACK_TLS_BLOB_HOST" -keyout "$d/server.key" \
		-out "$d/server.csr" 2>>"$d/openssl.log" &&
	printf 'subjectAltName=DNS:%s,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' "$STACK_TLS_BLOB_HOST" \
		>"$d/server.ext" &&
	openssl x509 -req -in "$d/server.csr" -CA "$STACK_TLS_CA" -CAkey "$d/ca.key" -CAcreateserial \
		-days 30 -extfile "$d/server.ext" -out "$d/server.pem" 2>>"$d/openssl.log" ||
		{ stack_log "cannot make the TLS certificates (see $d/openssl.log)"; return 1; }
	chmod 0644 "$STACK_TLS_CA" "$d/server.pem"
}

# stack_azurite_tls_start: a second Azurite, HTTPS only, with its own data,
# on TLS_BLOB_PORT; its endpoint is stack_tls_blob_endpoint.  It takes
# Entra ID bearer tokens too (--oauth basic: issuer prefix, audience and
# times checked, not signatures or roles), for tests/e2e/entra.sh.
stack_azurite_tls_start() {
	local bin=$STACK_TOP/node_modules/.bin/azurite-blob d=$STACK_VAR/azurite-tls-ca
	stack_alive azurite-tls && return 0
	stack_tls_certs || return 1
	if [ -z "${TLS_BLOB_PORT:-}" ] || ! stack_port_free "$TLS_BLOB_PORT"; then
		stack_forget_port TLS_BLOB_PORT
		stack_port TLS_BLOB_PORT "${STACK_TLS_BLOB_PORT_START:-10300}" || return 1
	fi
	mkdir -p "$STACK_VAR/azurite-tls"
	stack_spawn azurite-tls "$STACK_LOG/azurite-tls.log" "$bin" --blobHost 127.0.0.1 \
		--blobPort "$TLS_BLOB_PORT" --location "$STACK_VAR/azurite-tls" --disableTelemetry \
		--cert "$d/server.pem" --key "$d/server.key" --oauth basic || return 1
	STACK_WAIT_CURL_OPTS="--cacert $STACK_TLS_CA" \
		stack_wait_http "$(stack_tls_blob_endpoint)/?comp=list" 60 azurite-tls && return 0
	tail -n 20 "$STACK_LOG/azurite-tls.log" >&2
	return 1
}
stack_tls_blob_endpoint() { printf 'https://%s:%s' "$STACK_TLS_BLOB_HOST" "$TLS_BLOB_PORT"; }

# --- lighttpd --------------------------------------------------------------

# stack_lighttpd_start CONFIG: lighttpd -D -f CONFIG, serving on HTTP_PORT.
stack_lighttpd_start() {
	local conf=$1
	stack_alive lighttpd && return 0
	mkdir -p "$STACK_VAR/www"
	"$(stack_lighttpd_bin)" -tt -f "$conf" >"$STACK_LOG/lighttpd-check.log" 2>&1 || {
		stack_log "lighttpd rejects $conf:"; cat "$STACK_LOG/lighttpd-check.log" >&2; return 1; }
	stack_spawn lighttpd "$STACK_LOG/lighttpd.out" "$(stack_lighttpd_bin)" -D -f "$conf" || return 1
	stack_wait_http "http://127.0.0.1:$HTTP_PORT/" 30 lighttpd || {
		tail -n 20 "$STACK_LOG/lighttpd.out" "$STACK_LOG/lighttpd-error.log" >&2 2>/dev/null; return 1; }
}

stack_lighttpd_stop() { stack_stop lighttpd 20; }

# stack_test_conf OUT PREFIX [LINE...]: the test stack's bindery.conf
# ($BINDERY_CONFIG) with [storage] prefix = PREFIX (blobs of the test's own,
# which it can find, and sweep with --prefix) and then each LINE (such as
# '[limits]' 'body_idle_timeout = 3'), written to OUT with mode 0600.
# Status 1, with bindery's reason on stderr, when bindery does not load it.
stack_test_conf() {
	local out=$1 prefix=$2 err
	shift 2
	{
		cat "$BINDERY_CONFIG"
		printf '\n[storage]\nprefix = %s\n' "$prefix"
		printf '%s\n' "$@"
	} >"$out" && chmod 0600 "$out" || return 1
	err=$("$BINDERY_TEST_BIN/bindery" -c "$out" sweep --dry-run --older-than 999999 2>&1 >/dev/null) ||
		{ stack_log "$out does not load: $err"; return 1; }
}

# stack_private_lighttpd STATE-DIR TEMPLATE CONFIG BINDIR BASE-PORT: a
# lighttpd of a test's own from conf/TEMPLATE (lighttpd.conf for FastCGI,
# lighttpd-cgi.conf for CGI; lighttpd-pool.conf in front of a running pool,
# whose socket is then CONFIG, BINDIR unused), state in STATE-DIR (stack_init: STACK_VAR is
# that directory afterwards), on a free port from BASE-PORT that none of
# the test stack's ports ($BINDERY_TEST_VAR/ports.env) take, running
# BINDIR/bindery.fcgi with bindery.conf CONFIG.  Whatever an interrupted run
# left in STATE-DIR is stopped first.  Variables set for the call (such as
# BINDERY_FAILPOINTS_FILE=...) reach the responder.  Sets HTTP_PORT; stop it
# with stack_private_lighttpd_stop (a cleanup trap may call that at any
# time: it never stops the test stack's own lighttpd).  An optional sixth
# argument MOUNT (such as /docs) mounts the app there instead of at /, the
# way conf/lighttpd.conf documents it (its var.bindery_mount line).  Status
# 1, with a line on stderr, on failure.
stack_private_lighttpd() {
	local dir=$1 template=$2 config=$3 bindir=$4 base=$5 mount=${6:-}
	stack_init "$dir"
	STACK_PRIVATE_LIGHTTPD=$STACK_VAR
	stack_lighttpd_stop	# whatever an interrupted run left behind
	rm -f "$STACK_VAR/ports.env"
	HTTP_PORT=''
	STACK_AVOID_PORTS=$(sed -n 's/^[A-Z_]*=//p' "$BINDERY_TEST_VAR/ports.env" 2>/dev/null | tr '\n' ' ')
	stack_port HTTP_PORT "$base" || { stack_log "no free port from $base"; return 1; }
	mkdir -p "$STACK_VAR/www"
	stack_render "$STACK_TOP/conf/$template" "$STACK_VAR/lighttpd.conf" PORT="$HTTP_PORT" \
		VAR="$STACK_VAR" BINDIR="$bindir" CONFIG="$config" SOCKET="$config" ||
		{ stack_log "bad conf/$template"; return 1; }
	if [ -n "$mount" ]; then
		grep -q '^var\.bindery_mount = "/"$' "$STACK_VAR/lighttpd.conf" ||
			{ stack_log "conf/$template has no var.bindery_mount line to set"; return 1; }
		sed -i -e "s|^var\.bindery_mount = \"/\"\$|var.bindery_mount = \"$mount\"|" "$STACK_VAR/lighttpd.conf"
	fi
	stack_lighttpd_start "$STACK_VAR/lighttpd.conf" || { stack_log "lighttpd ($template) did not start"; return 1; }
}

# stack_private_servers NAME CONFIG BASE-PORT: a lighttpd (FastCGI) and an
# Apache mod_fcgid of a test's own, both serving bindery.conf CONFIG (state
# in $BINDERY_TEST_VAR/NAME-lighttpd and NAME-apache, ports from BASE-PORT
# and BASE-PORT + 10), started and answering /healthz.  Sets
# PRIVATE_LIGHTTPD_URL and PRIVATE_APACHE_URL; the caller's cleanup calls
# stack_private_lighttpd_stop and stack_private_apache_stop.  Status 1,
# with a line on stderr, on failure.
stack_private_servers() {
	local name=$1 config=$2 base=$3
	BINDERY_FAILPOINTS_FILE=/dev/null stack_private_lighttpd "$BINDERY_TEST_VAR/$name-lighttpd" lighttpd.conf \
		"$config" "$BINDERY_TEST_BIN" "$base" || return 1
	PRIVATE_LIGHTTPD_URL=http://127.0.0.1:$HTTP_PORT
	stack_private_apache "$BINDERY_TEST_VAR/$name-apache" "$config" $((base + 10)) "apache-$name" || return 1
	stack_apache_start "$STACK_PRIVATE_APACHE_CONF" || { stack_log "Apache ($name) did not start"; return 1; }
	PRIVATE_APACHE_URL=http://127.0.0.1:$APACHE_PORT
	stack_wait_healthz "$PRIVATE_LIGHTTPD_URL" 5 && stack_wait_healthz "$PRIVATE_APACHE_URL" 5
}

# stack_private_lighttpd_stop: stop the lighttpd stack_private_lighttpd
# started last, if any.
stack_private_lighttpd_stop() {
	[ -n "${STACK_PRIVATE_LIGHTTPD:-}" ] || return 0
	stack_init "$STACK_PRIVATE_LIGHTTPD"
	stack_lighttpd_stop
}

# stack_private_apache STATE-DIR CONFIG BASE-PORT NAME: a private Apache
# mod_fcgid of a test's own, made ready but not started: state in STATE-DIR
# (stack_init: STACK_VAR is that directory afterwards; whatever an
# interrupted run left there is stopped first), APACHE_PORT free from
# BASE-PORT and clear of the test stack's ports and of STACK_AVOID_PORTS,
# $BINDERY_TEST_BIN/bindery.fcgi with bindery.conf CONFIG in the www
# directory Apache's www-data reads (STACK_PRIVATE_APACHE_WWW), and
# conf/apache-fcgid.conf rendered to $STACK_VAR/NAME.conf
# (STACK_PRIVATE_APACHE_CONF).  The test changes what it needs in that file
# (checking each change took), starts it with stack_apache_start and calls
# stack_private_apache_stop from its cleanup.  Status 1, with a line on
# stderr, on failure.
stack_private_apache() {
	local dir=$1 config=$2 base=$3 name=$4 extra=${STACK_AVOID_PORTS:-}
	stack_init "$dir"
	STACK_PRIVATE_APACHE=$STACK_VAR
	stack_apache_stop	# whatever an interrupted run left behind
	rm -f "$STACK_VAR/ports.env"
	APACHE_PORT=''
	STACK_AVOID_PORTS="$(sed -n 's/^[A-Z_]*=//p' "$BINDERY_TEST_VAR/ports.env" 2>/dev/null | tr '\n' ' ') $extra"
	stack_port APACHE_PORT "$base" || { stack_log "no free port from $base"; return 1; }
	stack_www_prepare "$BINDERY_TEST_BIN" "$config" && STACK_PRIVATE_APACHE_WWW=$(stack_www_dir) ||
		{ stack_log "cannot prepare the www directory"; return 1; }
	STACK_PRIVATE_APACHE_CONF=$STACK_VAR/$name.conf
	stack_render "$STACK_TOP/conf/apache-fcgid.conf" "$STACK_PRIVATE_APACHE_CONF" PORT="$APACHE_PORT" \
		VAR="$STACK_VAR" RUNDIR="$STACK_PRIVATE_APACHE_WWW" BINDIR="$STACK_PRIVATE_APACHE_WWW/bin" \
		CONFIG="$STACK_PRIVATE_APACHE_WWW/bindery.conf" || { stack_log "bad conf/apache-fcgid.conf"; return 1; }
	stack_apache_sql_env "$STACK_PRIVATE_APACHE_CONF" "$STACK_PRIVATE_APACHE_WWW" || return 1
}

# stack_private_apache_stop: stop the Apache stack_private_apache made
# ready last, if any, and remove its www directory.
stack_private_apache_stop() {
	[ -n "${STACK_PRIVATE_APACHE:-}" ] || return 0
	stack_init "$STACK_PRIVATE_APACHE"
	stack_apache_stop
	stack_remove_www
}

# stack_cgi_prepare STATE-DIR BASE-PORT BIN CONFIG: the CGI servers of a
# test's own, made ready but not started: state in STATE-DIR (stack_init:
# STACK_VAR is that directory afterwards; whatever an interrupted run left
# there is stopped first), APACHE_PORT and HTTP_PORT = APACHE_PORT + 1 free
# and clear of the test stack's ports, the www directory Apache's www-data
# reads BIN/bindery.fcgi and CONFIG from (STACK_CGI_WWW), and
# $STACK_VAR/apache-cgid.conf and lighttpd-cgi.conf rendered from conf/.
# The caller may add to a config, then starts what it needs
# (stack_apache_start, stack_lighttpd_start) and calls stack_cgi_stop from
# its cleanup.  Status 1, with a line on stderr, on failure.
stack_cgi_prepare() {
	local dir=$1 base=$2 bin=$3 config=$4
	STACK_AVOID_PORTS=$(sed -n 's/^[A-Z_]*=//p' "$BINDERY_TEST_VAR/ports.env" 2>/dev/null | tr '\n' ' ')
	STACK_CGI_DIR=$dir
	stack_cgi_stop		# whatever an interrupted run left behind
	rm -f "$STACK_VAR/ports.env"
	APACHE_PORT='' HTTP_PORT=''
	stack_port APACHE_PORT "$base" && stack_port HTTP_PORT $((APACHE_PORT + 1)) ||
		{ stack_log "no free port from $base"; return 1; }
	stack_www_prepare "$bin" "$config" && STACK_CGI_WWW=$(stack_www_dir) ||
		{ stack_log "cannot prepare the www directory"; return 1; }
	stack_render "$STACK_TOP/conf/apache-cgid.conf" "$STACK_VAR/apache-cgid.conf" PORT="$APACHE_PORT" \
		VAR="$STACK_VAR" RUNDIR="$STACK_CGI_WWW" BINDIR="$STACK_CGI_WWW/bin" \
		CONFIG="$STACK_CGI_WWW/bindery.conf" || { stack_log "bad conf/apache-cgid.conf"; return 1; }
	stack_render "$STACK_TOP/conf/lighttpd-cgi.conf" "$STACK_VAR/lighttpd-cgi.conf" PORT="$HTTP_PORT" \
		VAR="$STACK_VAR" BINDIR="$bin" CONFIG="$config" || { stack_log "bad conf/lighttpd-cgi.conf"; return 1; }
}

# stack_cgi_stop: stop stack_cgi_prepare's servers, if any, and remove its
# www directory (a cleanup trap may call it at any time: it never touches
# the test stack's own servers).
stack_cgi_stop() {
	[ -n "${STACK_CGI_DIR:-}" ] || return 0
	stack_init "$STACK_CGI_DIR"
	stack_stop apache 30
	stack_stop lighttpd 20
	stack_remove_www
}

# --- Apache + mod_fcgid ----------------------------------------------------

# stack_www_dir: print a directory www-data can reach, holding what Apache's
# children need (the responder, its config, mod_fcgid's sockets and shared
# memory).  $STACK_VAR/www-apache when www-data can traverse to STACK_VAR;
# otherwise (a checkout under a private directory such as a mktemp -d or
# /root) a root-owned 0755 directory under /tmp, remembered in www.path.
stack_www_dir() {
	local d=
	[ -f "$STACK_VAR/www.path" ] && read -r d <"$STACK_VAR/www.path"
	if [ -n "$d" ] && [ -d "$d" ] && [ ! -L "$d" ] && [ "$(stat -c %u "$d")" = "$(id -u)" ]; then
		printf '%s\n' "$d"
		return 0
	fi
	if [ "$(id -u)" != 0 ] || runuser -u "$STACK_WWW_USER" -- test -x "$STACK_VAR" 2>/dev/null; then
		d=$STACK_VAR/www-apache
		mkdir -p "$d"
	else
		d=$(mktemp -d /tmp/bindery-www.XXXXXXXX) || return 1
	fi
	chmod 0755 "$d"
	printf '%s\n' "$d" >"$STACK_VAR/www.path"
	printf '%s\n' "$d"
}

# stack_www_prepare BINDIR CONFIG: copy bindery.fcgi, the config and
# conf/apache-fcgid.lua into the www dir (config 0640 root:www-data) and
# create mod_fcgid's directory.
stack_www_prepare() {
	local bindir=$1 config=$2 d
	d=$(stack_www_dir) || return 1
	mkdir -p "$d/bin" "$d/fcgid" "$d/tmp" "$d/metrics"
	cp -f "$bindir/bindery.fcgi" "$d/bin/bindery.fcgi.new" && mv -f "$d/bin/bindery.fcgi.new" "$d/bin/bindery.fcgi"
	chmod 0755 "$d/bin" "$d/bin/bindery.fcgi"
	cp -f "$config" "$d/bindery.conf"
	# conf/apache-fcgid.conf names its Lua helpers in the same directory.
	cp -f "$(dirname "${BASH_SOURCE[0]}")/../../conf/apache-fcgid.lua" "$d/apache-fcgid.lua" &&
		chmod 0644 "$d/apache-fcgid.lua" || return 1
	# The shipped migrations, which /metrics and /healthz compare the
	# applied schema with: the checkout's sql/ may be private (a clone
	# under mktemp -d), so www-data reads this copy (stack_apache_sql_env).
	mkdir -p "$d/sql" && chmod 0755 "$d/sql" &&
		cp -f "$(dirname "${BASH_SOURCE[0]}")/../../sql/"*.sql "$d/sql/" && chmod 0644 "$d/sql/"*.sql || return 1
	if [ "$(id -u)" = 0 ]; then
		chown "root:$STACK_WWW_USER" "$d/bindery.conf"
		chown "$STACK_WWW_USER:$STACK_WWW_USER" "$d/fcgid" "$d/tmp" "$d/metrics"
	fi
	# The shared counters ([metrics] counters_file): the web server's user
	# creates the file, or root hands it over (lib/base/counters.h).  A
	# stack starts them over: a file left by a build of another layout
	# would be refused (bindery_counters_up 0).
	rm -f "$d/metrics/counters"
	chmod 0750 "$d/metrics"
	chmod 0640 "$d/bindery.conf"
	chmod 0750 "$d/fcgid"
	chmod 0700 "$d/tmp"
}

# stack_apache_sql_env CONF WWWDIR: point the responders of a rendered
# conf/apache-fcgid.conf at the migrations stack_www_prepare copied (an
# installed bindery finds its own in its data directory).
stack_apache_sql_env() {
	printf '\n# Test stack: the migrations www-data can read.\nFcgidInitialEnv BINDERY_SQL_DIR %s/sql\n' "$2" >>"$1"
}

# stack_apache_start CONFIG [NAME PORT]: apache2 -f CONFIG -DFOREGROUND as
# component NAME (default apache) on PORT (default APACHE_PORT); its output
# in log/NAME.out, its ErrorLog log/NAME-error.log (as the conf/ templates
# name it).
stack_apache_start() {
	local conf=$1 name=${2:-apache} port=${3:-$APACHE_PORT}
	stack_alive "$name" && return 0
	"$(stack_apache_bin)" -t -f "$conf" >"$STACK_LOG/$name-check.log" 2>&1 || {
		stack_log "apache2 rejects $conf:"; cat "$STACK_LOG/$name-check.log" >&2; return 1; }
	stack_spawn "$name" "$STACK_LOG/$name.out" "$(stack_apache_bin)" -f "$conf" -DFOREGROUND || return 1
	stack_wait_http "http://127.0.0.1:$port/" 30 "$name" || {
		tail -n 20 "$STACK_LOG/$name.out" "$STACK_LOG/$name-error.log" >&2 2>/dev/null; return 1; }
}

stack_apache_stop() { stack_stop apache 30; }

# --- the pool: bindery.fcgi --listen, Apache mod_proxy_fcgi in front --------

# How many workers the stack's pool runs (conf/lighttpd.conf's max-procs).
STACK_POOL_WORKERS=4

# stack_pool_socket: the unix socket of this state directory's pool, in the
# www dir (stack_www_dir), where Apache's www-data reaches it.
stack_pool_socket() {
	local d
	d=$(stack_www_dir) || return 1
	printf '%s/pool/bindery.sock\n' "$d"
}

# stack_pool_start WORKERS [VAR=VALUE...]: the pool, as component "pool":
# the www dir's copy of bindery.fcgi (stack_www_prepare first) with its
# bindery.conf, --listen on stack_pool_socket, WORKERS workers, run as
# www-data as a system pool beside Apache is (its socket is 0660: Apache's
# children, www-data, connect), its output in log/pool.log.  Each VAR=VALUE
# goes into its environment (BINDERY_FAILPOINTS_FILE=...).  Returns once
# the socket is there.
stack_pool_start() {
	local workers=$1 www sock i as=()
	shift
	stack_alive pool && return 0
	www=$(stack_www_dir) || return 1
	sock=$www/pool/bindery.sock
	mkdir -p "$www/pool" && chmod 0750 "$www/pool" || return 1
	if [ "$(id -u)" = 0 ]; then
		chown "$STACK_WWW_USER:$STACK_WWW_USER" "$www/pool" || return 1
		as=(setpriv --reuid="$STACK_WWW_USER" --regid="$STACK_WWW_USER" --init-groups --)
	fi
	rm -f "$sock"
	stack_spawn pool "$STACK_LOG/pool.log" env BINDERY_SQL_DIR="$www/sql" "$@" "${as[@]}" \
		"$www/bin/bindery.fcgi" -c "$www/bindery.conf" --listen "unix:$sock" --workers "$workers" \
		--drain-seconds 10 || return 1
	for ((i = 0; i < 100; i++)); do
		[ -S "$sock" ] && stack_alive pool && return 0
		stack_alive pool || break
		sleep 0.1
	done
	stack_log "the pool did not listen on $sock:"
	tail -n 10 "$STACK_LOG/pool.log" >&2 2>/dev/null
	return 1
}

# stack_pool_stop: SIGTERM drains the pool (requests in flight finish,
# --drain-seconds at most), then it exits.
stack_pool_stop() { stack_stop pool 20; }

# stack_render_apache_pool OUT WORKERS: conf/apache-proxy-fcgi.conf for
# APACHE_POOL_PORT, in front of stack_pool_socket's WORKERS workers.
stack_render_apache_pool() {
	local sock
	sock=$(stack_pool_socket) || return 1
	stack_render "$STACK_TOP/conf/apache-proxy-fcgi.conf" "$1" PORT="$APACHE_POOL_PORT" \
		VAR="$STACK_VAR" SOCKET="$sock" WORKERS="$2"
}

# stack_private_pool STATE-DIR CONFIG WORKERS BASE-PORT [VAR=VALUE...]: a
# pool of a test's own and its Apache mod_proxy_fcgi, the pool started, the
# Apache made ready: state in STATE-DIR (stack_init: STACK_VAR is that
# directory afterwards; whatever an interrupted run left there is stopped
# first), $BINDERY_TEST_BIN/bindery.fcgi with bindery.conf CONFIG and WORKERS
# workers (each VAR=VALUE in its environment), APACHE_POOL_PORT free from
# BASE-PORT and clear of the test stack's ports and of STACK_AVOID_PORTS,
# conf/apache-proxy-fcgi.conf rendered to STACK_PRIVATE_POOL_CONF.  The test
# changes what it needs in that file, starts it with
# `stack_apache_start "$STACK_PRIVATE_POOL_CONF" apache-pool "$APACHE_POOL_PORT"`
# and calls stack_private_pool_stop from its cleanup.  Status 1, with a line
# on stderr, on failure.
stack_private_pool() {
	local dir=$1 config=$2 workers=$3 base=$4 extra=${STACK_AVOID_PORTS:-}
	shift 4
	stack_init "$dir"
	STACK_PRIVATE_POOL=$STACK_VAR
	stack_stop apache-pool 30	# whatever an interrupted run left behind
	stack_pool_stop
	rm -f "$STACK_VAR/ports.env"
	APACHE_POOL_PORT=''
	STACK_AVOID_PORTS="$(sed -n 's/^[A-Z_]*=//p' "$BINDERY_TEST_VAR/ports.env" 2>/dev/null | tr '\n' ' ') $extra"
	stack_port APACHE_POOL_PORT "$base" || { stack_log "no free port from $base"; return 1; }
	stack_www_prepare "$BINDERY_TEST_BIN" "$config" || { stack_log "cannot prepare the www directory"; return 1; }
	stack_pool_start "$workers" "$@" || { stack_log "the pool did not start (log in $STACK_LOG)"; return 1; }
	STACK_PRIVATE_POOL_CONF=$STACK_VAR/apache-pool.conf
	stack_render_apache_pool "$STACK_PRIVATE_POOL_CONF" "$workers" ||
		{ stack_log "bad conf/apache-proxy-fcgi.conf"; return 1; }
}

# stack_private_pool_stop: stop the Apache and the pool stack_private_pool
# started last, if any, and remove its www directory (a cleanup trap may
# call it at any time: it never touches the test stack's own).
stack_private_pool_stop() {
	[ -n "${STACK_PRIVATE_POOL:-}" ] || return 0
	stack_init "$STACK_PRIVATE_POOL"
	stack_stop apache-pool 30
	stack_pool_stop
	stack_remove_www
}

# stack_busy DIR: true when a component of state directory DIR (MariaDB,
# Azurite, lighttpd, Apache, the pool and its Apache) is running.  A DIR that was never started is
# not created; one that was becomes the current state directory
# (stack_init).
stack_busy() {
	local c
	[ -d "$1/run" ] || return 1
	stack_init "$1"
	for c in mariadb azurite azurite-tls lighttpd apache pool apache-pool; do
		stack_alive "$c" && return 0
	done
	return 1
}

# stack_stop_all: stop every component of this state directory, web servers
# first (the pool's Apache before the pool: no request arrives while it drains).
stack_stop_all() {
	stack_stop apache-pool 30
	stack_pool_stop
	stack_stop apache 30
	stack_stop lighttpd 20
	stack_stop azurite 20
	stack_stop azurite-tls 20
	stack_stop mariadb 60
}

# stack_remove_www: delete a /tmp www dir created for this state directory.
stack_remove_www() {
	local d=
	[ -f "$STACK_VAR/www.path" ] && read -r d <"$STACK_VAR/www.path"
	case $d in
	/tmp/bindery-www.*) [ -d "$d" ] && [ ! -L "$d" ] && rm -rf "$d" ;;
	esac
	rm -f "$STACK_VAR/www.path"
}

# --- a whole stack -----------------------------------------------------------
# stack_up starts every piece of a stack in STACK_VAR, configured: ./dev up
# (KIND dev), each lane of ./dev test (test) and ./dev bench (bench); the
# cluster (tests/lib/cluster.sh) renders its hosts with the same pieces.

# stack_write_config OUT socket|tcp [KIND]: render conf/bindery.conf.sample for the
# stack in STACK_VAR; 0640 root:www-data (www-data runs the responder under
# Apache).  KIND dev (./dev up) and test turn /metrics on; bench and none
# (a cluster's host) leave it as shipped.  Sets CONFIG_CHANGED=1 when the
# file's content changed.
stack_write_config() {
	local out=$1 mode=$2 kind=${3:-} tmp www
	tmp=$out.new
	rm -f "$tmp"
	stack_render "$STACK_TOP/conf/bindery.conf.sample" "$tmp" \
		DB_SOCKET="$STACK_SOCK" DB_PASSWORD="$DB_PASSWORD" \
		STORAGE_ENDPOINT="$(stack_blob_endpoint)" STORAGE_ACCOUNT="$STACK_ACCOUNT" \
		STORAGE_KEY="$STACK_ACCOUNT_KEY" \
		DEMO_TOKEN="$DEMO_TOKEN" || return 1
	if [ "$mode" = tcp ]; then
		sed -i -e "s|^socket = .*|host = 127.0.0.1\nport = $DB_PORT|" "$tmp"
	fi
	# Direct uploads on: the stack is what the page and the
	# tests upload through; stack_set_cors lets its origins PUT.
	# /metrics on, for any caller who may write (the demo token), its
	# counters in the www dir's metrics/, where www-data (Apache's
	# responders, the pool) and root (lighttpd's, the CLI) both reach.
	sed -i -e 's|^direct = false|direct = true|' "$tmp"
	if [ "$kind" = dev ] || [ "$kind" = test ]; then
		www=$(stack_www_dir) || return 1
		sed -i -e 's|^; enabled = false|enabled = true|' \
			-e "s|^; counters_file = .*|counters_file = $www/metrics/counters|" "$tmp"
		grep -q '^counters_file = ' "$tmp" || { stack_log "conf/bindery.conf.sample has no counters_file line"; return 1; }
	fi
	if [ "$kind" = test ]; then
		sed -i -e "s|^token = demo:.*|&\ntoken = other:$OTHER_TOKEN|" \
			-e 's|^request_deadline = .*|request_deadline = 30|' \
			-e 's|^sweep_cutoff = .*|sweep_cutoff = 200|' \
			-e 's|^heartbeat = .*|heartbeat = 5|' "$tmp"
	fi
	chmod 0640 "$tmp"
	if [ "$(id -u)" = 0 ] && getent group "$STACK_WWW_USER" >/dev/null; then
		chown "root:$STACK_WWW_USER" "$tmp"
	fi
	CONFIG_CHANGED=
	if cmp -s "$tmp" "$out"; then
		rm -f "$tmp"
	else
		mv -f "$tmp" "$out"
		CONFIG_CHANGED=1
	fi
}

# stack_set_cors BINDIR CONFIG: the Blob service's CORS rule for the three
# servers' origins (a browser's direct upload is a cross-origin PUT).
stack_set_cors() {
	"$1/bindery" -c "$2" cors "http://127.0.0.1:$HTTP_PORT" "http://localhost:$HTTP_PORT" \
		"http://127.0.0.1:$APACHE_PORT" "http://localhost:$APACHE_PORT" \
		"http://127.0.0.1:$APACHE_POOL_PORT" "http://localhost:$APACHE_POOL_PORT"
}

stack_render_lighttpd() { # OUT BINDIR CONFIG
	stack_render "$STACK_TOP/conf/lighttpd.conf" "$1" PORT="$HTTP_PORT" VAR="$STACK_VAR" \
		BINDIR="$2" CONFIG="$3"
}

stack_render_apache() { # OUT WWWDIR
	stack_render "$STACK_TOP/conf/apache-fcgid.conf" "$1" PORT="$APACHE_PORT" VAR="$STACK_VAR" \
		RUNDIR="$2" BINDIR="$2/bin" CONFIG="$2/bindery.conf" && stack_apache_sql_env "$1" "$2"
}

# stack_write_migrate_config CONFIG OUT: CONFIG with the migration account
# (bindery_migrate, DDL) in place of the runtime one: the only file
# `bindery migrate` runs with; everything else gets CONFIG (sql/grants.sql).
stack_write_migrate_config() {
	local conf=$1 out=$2
	(umask 077 && sed -e 's|^user = bindery$|user = bindery_migrate|' \
		-e "s|^password = .*|password = $DB_MIGRATE_PASSWORD|" "$conf" >"$out.new") || return 1
	grep -q '^user = bindery_migrate$' "$out.new" || { stack_log "no [database] user line in $conf"; return 1; }
	mv -f "$out.new" "$out"
}

stack_migrate() { # BINDIR CONFIG (the migration account's: stack_write_migrate_config)
	[ -x "$1/bindery" ] || { stack_log "$1/bindery was not built"; return 1; }
	"$1/bindery" -c "$2" migrate >"$STACK_LOG/migrate.log" 2>&1 || {
		stack_log "bindery migrate failed:"; tail -n 20 "$STACK_LOG/migrate.log" >&2; return 1; }
}

# stack_wait_healthz URL SECONDS: true once URL/healthz answers 200.
stack_wait_healthz() {
	local url=$1 limit=$2 i code
	for ((i = 0; i < limit * 5; i++)); do
		code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$url/healthz" 2>/dev/null) || code=000
		[ "$code" = 200 ] && return 0
		sleep 0.2
	done
	stack_log "$url/healthz answers $code"
	return 1
}

# stack_add_webauth LIGHTTPD_CONF APACHE_CONF WWWDIR [APACHE_CONF...]: the
# servers of the test stack authenticate requests that carry Basic
# credentials themselves (user alice, a fresh password), so tests can drive
# bindery under REMOTE_USER (tests/lib/webauth-*.conf); every APACHE_CONF
# after WWWDIR (the pool's Apache) the same way.  The user file for Apache
# lives in WWWDIR, where www-data can read it.
stack_add_webauth() {
	local lconf=$1 aconf=$2 www=$3 pw more
	pw=$(stack_random_hex 12)
	(umask 077 && printf 'alice:%s\n' "$pw" >"$STACK_VAR/webauth-users") || return 1
	printf 'alice:{SHA}%s\n' "$(printf '%s' "$pw" | openssl sha1 -binary | base64)" \
		>"$www/webauth-users" && chmod 0644 "$www/webauth-users" || return 1
	stack_render "$STACK_TOP/tests/lib/webauth-lighttpd.conf" "$STACK_VAR/webauth-lighttpd.conf" \
		USERFILE="$STACK_VAR/webauth-users" || return 1
	stack_render "$STACK_TOP/tests/lib/webauth-apache.conf" "$STACK_VAR/webauth-apache.conf" \
		USERFILE="$www/webauth-users" || return 1
	{ echo 'server.modules += ( "mod_auth", "mod_authn_file" )'; cat "$lconf" "$STACK_VAR/webauth-lighttpd.conf"; } \
		>"$lconf.new" && mv -f "$lconf.new" "$lconf" || return 1
	cat "$STACK_VAR/webauth-apache.conf" >>"$aconf" || return 1
	shift 3
	for more in "$@"; do
		cat "$STACK_VAR/webauth-apache.conf" >>"$more" || return 1
	done
}

# stack_up KIND BINDIR: the one start-up of a stack in STACK_VAR (stack_init
# and its ports' starting points first): MariaDB with the database and both
# accounts, Azurite, bindery.conf, the migration as the migration account;
# then, but for KIND bench (whose bench.sh starts its own web servers),
# storage CORS for the page's direct uploads, lighttpd and Apache mod_fcgid
# serving BINDIR's responder, and the pool (bindery.fcgi --listen, as
# www-data) with Apache mod_proxy_fcgi in front of it on APACHE_POOL_PORT.  KIND dev (./dev up): the database over its
# socket; a running web server restarts when STACK_RESTART is set, the
# responder was rebuilt or its config changed.  KIND test (a lane of
# ./dev test): production's shape of storage too (a second Azurite, HTTPS,
# an account-host URL), the database over TCP (Apache's www-data may not
# reach a socket inside the checkout), the web servers authenticating Basic
# users themselves, the responders reading a failpoints file; a port taken
# meanwhile (another run on this machine) is chosen again.  Messages go to
# stderr; status 1 when a piece did not start (STACK_VAR/log/ says why).
stack_up() {
	local kind=$1 bindir=$2 conf=$STACK_VAR/bindery.conf www try fp=
	stack_secrets
	stack_mariadb_start || { stack_log "MariaDB did not start"; return 1; }
	stack_mariadb_setup || { stack_log "could not create the database and its accounts"; return 1; }
	stack_azurite_start || { stack_log "Azurite did not start"; return 1; }
	if [ "$kind" = test ]; then
		stack_azurite_tls_start || { stack_log "the TLS Azurite did not start"; return 1; }
		stack_write_config "$conf" tcp test || return 1
	else
		stack_write_config "$conf" socket "$kind" || return 1
	fi
	[ -z "$CONFIG_CHANGED" ] || STACK_RESTART=1
	# Migrations as the migration account, everything else as the runtime
	# one (tests/integration/grants.sh proves the split).
	stack_write_migrate_config "$conf" "$STACK_VAR/bindery-migrate.conf" || return 1
	stack_migrate "$bindir" "$STACK_VAR/bindery-migrate.conf" || return 1
	[ "$kind" != bench ] || return 0
	stack_www_prepare "$bindir" "$conf" || return 1
	www=$(stack_www_dir) || return 1
	[ "$kind" != test ] || fp=$STACK_VAR/failpoints
	for try in 1 2 3; do
		stack_set_cors "$bindir" "$conf" || return 1
		stack_render_lighttpd "$STACK_VAR/lighttpd.conf" "$bindir" "$conf" || return 1
		stack_render_apache "$STACK_VAR/apache.conf" "$www" || return 1
		stack_render_apache_pool "$STACK_VAR/apache-pool.conf" "$STACK_POOL_WORKERS" || return 1
		if [ "$kind" = test ]; then
			stack_add_webauth "$STACK_VAR/lighttpd.conf" "$STACK_VAR/apache.conf" "$www" \
				"$STACK_VAR/apache-pool.conf" || return 1
			: >"$fp"
		fi
		# A rebuilt responder or a new config needs fresh FastCGI processes.
		if stack_alive lighttpd && { [ -n "${STACK_RESTART:-}" ] || [ "$bindir/bindery.fcgi" -nt "$STACK_RUN/lighttpd.pid" ] ||
			[ "$STACK_VAR/lighttpd.conf" -nt "$STACK_RUN/lighttpd.pid" ]; }; then
			stack_log "restarting lighttpd"
			stack_lighttpd_stop
		fi
		if stack_alive apache && { [ -n "${STACK_RESTART:-}" ] || [ "$bindir/bindery.fcgi" -nt "$STACK_RUN/apache.pid" ]; }; then
			stack_log "restarting Apache"
			stack_apache_stop
		fi
		# The pool is bindery.fcgi itself, and its Apache's config names
		# the socket and the workers.
		if stack_alive pool && { [ -n "${STACK_RESTART:-}" ] || [ "$bindir/bindery.fcgi" -nt "$STACK_RUN/pool.pid" ]; }; then
			stack_log "restarting the pool"
			stack_stop apache-pool 30
			stack_pool_stop
		fi
		if stack_alive apache-pool && { [ -n "${STACK_RESTART:-}" ] ||
			[ "$STACK_VAR/apache-pool.conf" -nt "$STACK_RUN/apache-pool.pid" ]; }; then
			stack_log "restarting the pool's Apache"
			stack_stop apache-pool 30
		fi
		# lighttpd hands its environment to the FastCGI processes it spawns
		# (the test build's responders read armed failpoints from fp); the
		# pool gets it the same way.
		BINDERY_FAILPOINTS_FILE=$fp stack_lighttpd_start "$STACK_VAR/lighttpd.conf" &&
			stack_apache_start "$STACK_VAR/apache.conf" &&
			stack_pool_start "$STACK_POOL_WORKERS" BINDERY_FAILPOINTS_FILE="$fp" &&
			stack_apache_start "$STACK_VAR/apache-pool.conf" apache-pool "$APACHE_POOL_PORT" && break
		[ "$kind" = test ] && [ "$try" -lt 3 ] && grep -qs 'Address already in use' "$STACK_LOG/lighttpd.out" \
			"$STACK_LOG/apache.out" "$STACK_LOG/apache-error.log" "$STACK_LOG/apache-pool.out" \
			"$STACK_LOG/apache-pool-error.log" || { stack_log "a web server did not start"; return 1; }
		stack_log "a web server's port was taken meanwhile; choosing new ports"
		stack_lighttpd_stop
		stack_apache_stop
		stack_stop apache-pool 30
		rm -f "$STACK_LOG/lighttpd.out" "$STACK_LOG/apache.out" "$STACK_LOG/apache-error.log" \
			"$STACK_LOG/apache-pool.out" "$STACK_LOG/apache-pool-error.log"
		stack_forget_port HTTP_PORT
		stack_forget_port APACHE_PORT
		stack_forget_port APACHE_POOL_PORT
		stack_port HTTP_PORT 18080 && stack_port APACHE_PORT 18090 && stack_port APACHE_POOL_PORT 18070 || return 1
	done
	stack_wait_healthz "http://127.0.0.1:$HTTP_PORT" 15 ||
		stack_log "warning: lighttpd's /healthz is not 200 yet; see ${STACK_LOG#"$STACK_TOP"/}/lighttpd*"
	stack_wait_healthz "http://127.0.0.1:$APACHE_PORT" 15 ||
		stack_log "warning: Apache's /healthz is not 200 yet; see ${STACK_LOG#"$STACK_TOP"/}/apache-error.log"
	stack_wait_healthz "http://127.0.0.1:$APACHE_POOL_PORT" 15 ||
		stack_log "warning: the pool's /healthz is not 200 yet; see ${STACK_LOG#"$STACK_TOP"/}/pool.log and apache-pool-error.log"
	return 0
}

# stack_test_env BINDIR: the test environment of the stack in STACK_VAR,
# exported and written to STACK_VAR/test.env, which tests/lib/timed.sh
# loads for each test it runs in that lane.
stack_test_env() { # BINDIR
	export BINDERY_CONFIG=$STACK_VAR/bindery.conf
	export BINDERY_TEST_BLOB_ENDPOINT
	BINDERY_TEST_BLOB_ENDPOINT=$(stack_blob_endpoint)
	export BINDERY_TEST_BLOB_ACCOUNT=$STACK_ACCOUNT
	export BINDERY_TEST_BLOB_KEY=$STACK_ACCOUNT_KEY
	# The same account over TLS (tests/e2e/tls_storage.sh, test_blob_tls.sh)
	export BINDERY_TEST_TLS_BLOB_ENDPOINT
	BINDERY_TEST_TLS_BLOB_ENDPOINT=$(stack_tls_blob_endpoint)
	export BINDERY_TEST_TLS_CA=$STACK_VAR/azurite-tls-ca/ca.pem
	export BINDERY_TEST_DB_SOCKET=$STACK_SOCK
	export BINDERY_TEST_DB_NAME=bindery
	export BINDERY_TEST_DB_PORT=$DB_PORT
	# The runtime account (the one BINDERY_CONFIG names) and the migration
	# account's configuration, for the tests that run `bindery migrate`.
	export BINDERY_TEST_DB_USER=bindery
	export BINDERY_TEST_DB_PASSWORD=$DB_PASSWORD
	export BINDERY_TEST_MIGRATE_CONFIG=$STACK_VAR/bindery-migrate.conf
	export BINDERY_TEST_DB_MIGRATE_USER=bindery_migrate
	export BINDERY_TEST_DB_MIGRATE_PASSWORD=$DB_MIGRATE_PASSWORD
	export BINDERY_TEST_DB_TLS_CA=$STACK_VAR/db-tls/ca.pem
	export BINDERY_TEST_LIGHTTPD_URL=http://127.0.0.1:$HTTP_PORT
	export BINDERY_TEST_APACHE_URL=http://127.0.0.1:$APACHE_PORT
	# Apache mod_proxy_fcgi in front of the pool (bindery.fcgi --listen),
	# its socket and its workers (a private Apache may use the same pool)
	export BINDERY_TEST_APACHE_POOL_URL=http://127.0.0.1:$APACHE_POOL_PORT
	export BINDERY_TEST_POOL_SOCKET
	BINDERY_TEST_POOL_SOCKET=$(stack_pool_socket) || return 1
	export BINDERY_TEST_POOL_WORKERS=$STACK_POOL_WORKERS
	export BINDERY_TEST_TOKEN=$DEMO_TOKEN
	export BINDERY_TEST_TOKEN_OTHER=$OTHER_TOKEN
	export BINDERY_TEST_VAR=$STACK_VAR
	# user:password that both servers authenticate themselves (stack_add_webauth)
	export BINDERY_TEST_WEBAUTH
	BINDERY_TEST_WEBAUTH=$(head -n 1 "$STACK_VAR/webauth-users" 2>/dev/null)
	export BINDERY_TEST_BIN=$1
	export STACK_PORT_OFFSET
	local v val
	# Single-quoted for /bin/sh; none of these values holds a quote.
	for v in BINDERY_CONFIG STACK_PORT_OFFSET "${!BINDERY_TEST_@}"; do
		[ "$v" != BINDERY_TEST_LANES ] || continue
		val=${!v}
		case $val in *"'"*) stack_log "$v holds a quote"; return 1 ;; esac
		printf "%s='%s'; export %s\n" "$v" "$val" "$v"
	done >"$STACK_VAR/test.env.new" && chmod 0600 "$STACK_VAR/test.env.new" &&
		mv -f "$STACK_VAR/test.env.new" "$STACK_VAR/test.env"
}
