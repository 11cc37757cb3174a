#!/usr/bin/env bash
# tests/unit/api_doc.sh — what doc/api.md and doc/openapi.yaml say of the
# answers agrees with the sources:
#   - every error code a client can receive is documented: in doc/api.md's
#     error table (the section "The document JSON and errors") and in
#     doc/openapi.yaml's Error schema (or HealthFailed, for /healthz's own
#     two);
#   - a list's default and largest page (LIST_DEFAULT in app/handlers.c,
#     INPUT_LIST_MAX in app/input.h) are the numbers both documents give.
#
# The codes are read from the sources, so a new one cannot slip by:
#   - app/ and lib/: resp_error(r, STATUS, "code", ...) and
#     resp_error_retry(...), json_pack(..., "error", "code", "message", ...),
#     a row of answer.c's table { PROTO_X, API, STATUS, "code", ... }, and
#     "error", COND ? "code" : "code" (/healthz); each file is read as one
#     line, so a call split over lines is read whole;
#   - conf/: the web servers' own JSON error pages ("error":"code"), which a
#     client receives as well (uri_too_long, headers_too_large...).
# The reader must find each kind (a code of each is named below), and the
# check must fail on a table with a code taken out: a check that cannot fail
# proves nothing.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
cd "$top" || bail_out "cannot cd to $top"
export LC_ALL=C

work=$(mktemp -d) || bail_out "no temporary directory"
trap 'rm -rf "$work"' EXIT

# emitted: the codes, one a line, sorted.
emitted() {
	local f
	for f in app/*.c lib/*/*.c; do
		tr '\n\t' '  ' <"$f"
		echo
	done | grep -oE \
		'resp_error(_retry)? *\( *[a-z_]+ *, *[0-9]+ *, *"[a-z0-9_]+"|"error" *, *"[a-z0-9_]+" *, *"message"|\{ *PROTO_[A-Z_]+ *, *[A-Z_]+ *, *[0-9]+ *, *"[a-z0-9_]+"|"error" *, *[a-z_.>-]+ *\? *"[a-z0-9_]+" *: *"[a-z0-9_]+"' |
		grep -oE '"[a-z0-9_]+"' | tr -d '"' | grep -vxE 'error|message'
	cat conf/*.conf conf/*.html conf/*.lua 2>/dev/null | grep -oE '"error" *: *"[a-z0-9_]+"' |
		sed -E 's/.*"([a-z0-9_]+)"$/\1/'
}
emitted | sort -u >"$work/codes"

# api_table FILE: the section of doc/api.md that holds the error table.
api_table() {
	awk '/^## / { on = ($0 == "## The document JSON and errors") } on' "$1"
}
# openapi_errors FILE: the Error and HealthFailed schemas of doc/openapi.yaml.
openapi_errors() {
	awk '/^    [A-Za-z]+:$/ { on = ($1 == "Error:" || $1 == "HealthFailed:") } on' "$1"
}
# missing_from TEXT-FILE QUOTE: the codes TEXT-FILE does not name (as
# `code` with QUOTE=1, else as a word), space-separated.
missing_from() {
	local code out=''
	while IFS= read -r code; do
		if [ "$2" = 1 ]; then
			grep -qF "\`$code\`" "$1" || out="$out $code"
		else
			grep -qw -- "$code" "$1" || out="$out $code"
		fi
	done <"$work/codes"
	printf '%s\n' "${out# }"
}

n=$(wc -l <"$work/codes")
ok '[ "$n" -ge 45 ]' "the sources emit $n error codes"
for want in name_taken method_not_allowed bad_sha256 sha256_mismatch database_unavailable uri_too_long \
	headers_too_large; do
	ok 'grep -qx "$want" "$work/codes"' "... among them $want"
done
ok '! grep -qxE "error|warn|info|debug|ok" "$work/codes"' "... and no word that is not a code"

api_table doc/api.md >"$work/api"
openapi_errors doc/openapi.yaml >"$work/openapi"
ok '[ -s "$work/api" ] && [ -s "$work/openapi" ]' "the error table and the Error schema are found"
is "$(missing_from "$work/api" 1)" "" "every code is in doc/api.md's error table"
is "$(missing_from "$work/openapi" 0)" "" "every code is in doc/openapi.yaml's Error (or HealthFailed) schema"

# The check can fail: the table without name_taken and uri_too_long.
sed -e 's/`name_taken`//g' -e 's/`uri_too_long`//g' "$work/api" >"$work/api.less"
is "$(missing_from "$work/api.less" 1)" "name_taken uri_too_long" \
	"a table with two codes taken out fails, naming them"
grep -vwE 'name_taken|uri_too_long' "$work/openapi" >"$work/openapi.less"
is "$(missing_from "$work/openapi.less" 0)" "name_taken uri_too_long" \
	"... and so does an Error schema without them"

# A list's page size.
list_default=$(sed -n 's/^#define LIST_DEFAULT \([0-9]*\).*/\1/p' app/handlers.c)
list_max=$(sed -n 's/^#define INPUT_LIST_MAX \([0-9]*\).*/\1/p' app/input.h)
ok '[ -n "$list_default" ] && [ -n "$list_max" ]' "the list's default ($list_default) and largest ($list_max) page are read"
like "$(grep -F '| `GET /documents?limit=&after=` |' doc/api.md)" \
	"\`limit\` is 1 to $list_max, $list_default when absent" "doc/api.md gives them"
like "$(grep -F -A2 '      name: limit' doc/openapi.yaml)" \
	"1 to $list_max \\(default $list_default for the API" "doc/openapi.yaml's limit gives them"
like "$(grep -F -A3 '      name: limit' doc/openapi.yaml)" "maximum: $list_max}" "... and its schema's maximum"
done_testing
