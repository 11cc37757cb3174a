#!/usr/bin/env bash
# Every query is a prepared statement whose text is a string literal: the SQL
# argument of db_exec/db_exec_one/db_query is a `static const char sql_*[]`
# (or a literal), never a buffer built at run time, so no value can become SQL.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}

files=$(cd "$top" && find lib app -name '*.c' | sort | grep -v "^lib/registry/db.c$")	# db.c defines them
calls=0 bad=""
for f in $files; do
	# "db_exec(db, X," -> X; the call may wrap, so join each file's lines first.
	while IFS= read -r arg; do
		calls=$((calls + 1))
		case $arg in
		sql_[a-z0-9_]*|\"*) ;;
		*) bad="$bad $f:$arg" ;;
		esac
	done < <(tr '\n' ' ' <"$top/$f" | grep -oE '\bdb_(exec|exec_one|query)\([^,]+,[[:space:]]*[^,]+' |
		sed -E 's/^db_[a-z_]+\([^,]+,[[:space:]]*//')
	# Every sql_ identifier passed must be defined as a literal in the same file.
	for id in $(tr '\n' ' ' <"$top/$f" | grep -oE '\bdb_(exec|exec_one|query)\([^,]+,[[:space:]]*sql_[a-z0-9_]+' |
		grep -oE 'sql_[a-z0-9_]+$' | sort -u); do
		grep -Eq "static const char $id\[\] *=" "$top/$f" || bad="$bad $f:$id(not a static literal)"
	done
done
ok '[ "$calls" -gt 20 ]' "found the query calls ($calls)"
is "${bad# }" "" "every query's SQL is a static literal"
# The only non-literal entry point takes whole migration files, and only migrate.c calls it.
users=$(cd "$top" && grep -rl --include='*.c' 'db_exec_script(' lib app | sort | grep -v '^lib/registry/db.c$' | tr '\n' ' ')
is "${users% }" "lib/registry/migrate.c" "only migrations run unparameterised SQL files"
done_testing
