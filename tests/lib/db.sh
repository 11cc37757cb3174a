# tests/lib/db.sh — the test MariaDB, straight through the mariadb client
# (never through bindery's code).  Sourced after tests/lib/tap.sh.
#
#   sql "SELECT ..."             rows tab-separated, no header
#   sql_to VAR "SELECT ..."      the same rows into VAR (as VAR=$(sql ...))
#   sql_quote "$name"            a single-quoted SQL literal
#   sql_quote_to VAR "$name"     the same into VAR, no subshell
#   sql_session                  this shell's sql calls share one client
#
# Connects over BINDERY_TEST_DB_SOCKET to BINDERY_TEST_DB_NAME (default
# bindery) as root, who connects over the socket without a password: tests
# plant states, create scratch databases and read the server's status, which
# the runtime account BINDERY_TEST_DB_USER (rows only, sql/grants.sql) may
# not.  Tests that mean to act as that account connect as it themselves.

# sql QUERY: run QUERY on the test database; tab-separated rows, no header;
# status 1 (the client's message on stderr) when a statement failed.
sql() {
	if _sql_exchange "$1"; then
		printf '%s' "$_SQL_OUT"
		return "$_SQL_RC"
	fi
	mariadb --no-defaults --skip-ssl --protocol=socket --socket="$BINDERY_TEST_DB_SOCKET" -uroot \
		-N -B "${BINDERY_TEST_DB_NAME:-bindery}" -e "$1"
}

# sql_to VAR QUERY: what VAR=$(sql QUERY) would set, and sql's status,
# without the subshell when the session's client answers (a fork costs
# 3-4 ms of CPU here, and the crash matrix asks hundreds of questions).
# (Its one local is the reference: any other would hide a caller's
# variable of the same name from it.)
sql_to() {
	local -n _sql_to_var=$1
	if _sql_exchange "$2"; then
		while [[ $_SQL_OUT == *$'\n' ]]; do _SQL_OUT=${_SQL_OUT%$'\n'}; done
		_sql_to_var=$_SQL_OUT
		return "$_SQL_RC"
	fi
	_sql_to_var=$(sql "$2")
}

# _sql_exchange QUERY: QUERY through the session's client, where bash lets
# this shell reach it (the shell that called sql_session and its command and
# process substitutions): status 0 with the rows in _SQL_OUT and sql's
# status in _SQL_RC; status 1 when there is no session to ask.
_sql_exchange() {
	local q=$1 line out=''
	[ -n "${_SQL_CO_PID:-}" ] && { true >&"${_SQL_CO_W:-}"; } 2>/dev/null &&
		kill -0 "$_SQL_CO_PID" 2>/dev/null || return 1
	while [[ $q == *[\;[:space:]] ]]; do q=${q%?}; done	# one ';' follows
	printf '%s;\nSELECT "~sql-end~";\n' "$q" >&"$_SQL_CO_W"
	# The whole answer is read before any of it is printed: the reader of
	# a process substitution sees nothing (and so sends no query of its
	# own) until this exchange is over.
	while IFS= read -r line <&"$_SQL_CO_R"; do
		[ "$line" != '~sql-end~' ] || break
		out+=$line$'\n'
	done
	_SQL_OUT=$out _SQL_RC=0
	# The client writes a statement's error before it runs the marker.
	if [ -s "$_SQL_CO_ERR" ]; then
		cat "$_SQL_CO_ERR" >&2
		: >"$_SQL_CO_ERR"
		_SQL_RC=1
	fi
	return 0
}

# sql_session: from here on, this shell's sql calls go to one client, a
# coprocess, instead of a client each (27 ms of CPU a client here; the
# crash matrix sends 750 queries).  For a script that holds no transaction,
# lock or session variable across calls and never runs two process
# substitutions of sql at once; a pipeline or a background job (where bash
# closes the coprocess's descriptors) still starts a client of its own.
# After a failed statement the session goes on with the next call (the
# client runs --force); within one call, later statements still run.  It
# replaces `wait` with one whose bare form leaves the client out.
sql_session() {
	_SQL_CO_ERR=$(mktemp -p "${BINDERY_TEST_VAR:-/tmp}/tmp" sql-err.XXXXXX 2>/dev/null || mktemp) || return 1
	coproc _SQL_CO {
		exec mariadb --no-defaults --skip-ssl --protocol=socket --socket="$BINDERY_TEST_DB_SOCKET" \
			-uroot -N -B --force --unbuffered "${BINDERY_TEST_DB_NAME:-bindery}" 2>>"$_SQL_CO_ERR"
	}
	_SQL_CO_W=${_SQL_CO[1]} _SQL_CO_R=${_SQL_CO[0]}	# bash sets _SQL_CO_PID
	# A bare `wait` (for a script's background jobs) would wait for the
	# client too, which lives as long as the script: wait for the others.
	wait() {
		local p pids=()
		if [ $# -gt 0 ] || [ -z "${_SQL_CO_PID:-}" ]; then
			builtin wait "$@"
			return
		fi
		for p in $(jobs -p); do
			[ "$p" = "$_SQL_CO_PID" ] || pids+=("$p")
		done
		[ ${#pids[@]} -eq 0 ] || builtin wait "${pids[@]}"
		return 0
	}
}

# sql_quote TEXT: TEXT as a single-quoted SQL literal (names we generate are
# tame, but quote anyway).
sql_quote() {
	local s=${1//\\/\\\\}
	printf "'%s'" "${s//\'/\'\'}"
}

# sql_quote_to VAR TEXT: what VAR=$(sql_quote TEXT) sets, without the
# subshell (its one local is the reference).
sql_quote_to() {
	local -n _sql_quote_var=$1
	_sql_quote_var=${2//\\/\\\\}
	_sql_quote_var="'${_sql_quote_var//\'/\'\'}'"
}
