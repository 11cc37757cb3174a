#!/usr/bin/env bash
# Every query's text is a string literal: the SQL argument of
# db_exec/db_exec_one/db_query and of a batch's DB_STEP* is a
# `static const char sql_*[]` (or a literal), never a buffer built at run
# time, so no value can become SQL.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}

# One python3 pass over every file (the shell loop it replaces started ten
# processes a file: 10 CPU seconds of a run).
read -r calls bad < <(cd "$top" && python3 - <<'PY'
import glob, re
call = re.compile(r'\bdb_(?:exec|exec_one|query)\([^,]+,\s*([^,]+)')
# A batch's steps name their SQL the same way (db.h, DB_STEP*).
step = re.compile(r'\bDB_STEP(?:0|_ONE|0_ONE|_ROW)?\(\s*([^,)]+)')
calls, bad = 0, []
for f in sorted(glob.glob('lib/**/*.c', recursive=True) + glob.glob('app/**/*.c', recursive=True)):
    if f == 'lib/registry/db.c':	# db.c defines them
        continue
    text = open(f, encoding='utf-8').read().replace('\n', ' ')
    for arg in call.findall(text) + step.findall(text):
        calls += 1
        arg = arg.strip()
        if re.match(r'sql_[a-z0-9_]*', arg):
            # Every sql_ identifier passed must be a literal of the same file.
            ident = re.match(r'sql_[a-z0-9_]+', arg).group(0)
            if not re.search(r'static const char ' + ident + r'\[\] *=', text):
                bad.append(f + ':' + ident + '(not a static literal)')
        elif arg == 'db_sql_commit':
            pass	# db.c's own "COMMIT", a batch's last step (db.h)
        elif not arg.startswith('"'):
            bad.append(f + ':' + arg)
print(calls, ' '.join(sorted(set(bad))))
PY
)
ok '[ "$calls" -gt 20 ]' "found the query calls ($calls)"
is "${bad:-}" "" "every query's SQL is a static literal"
# The only non-literal entry point takes whole migration files, and only migrate.c calls it.
users=$(cd "$top" && grep -rl --include='*.c' 'db_exec_script(' lib app | sort | grep -v '^lib/registry/db.c$' | tr '\n' ' ')
is "${users% }" "lib/registry/migrate.c" "only migrations run unparameterised SQL files"
done_testing
