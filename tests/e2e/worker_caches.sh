#!/usr/bin/env bash
# What a FastCGI worker caches for speed, and when it gives it back.
#
# A worker keeps the statements it has prepared for the next request.  A
# body that can fill every block in flight (block_size x blocks_in_flight,
# or a body of unknown length) is what the peak-memory figure is about, so
# before such a body the worker closes its statements (on the server too:
# COM_STMT_CLOSE, counted in the server's Com_stmt_close) and trims its
# heap; a smaller body keeps them.  (lighttpd refuses a body of unknown
# length with 411, so that case is not reached here.)  Through lighttpd, whose "fair" balancing
# hands one request at a time to the same (first idle) worker, so the
# small creates that fill the cache and the large one that empties it meet
# the same process; the other workers stay idle and close nothing.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET BINDERY_CONFIG
url=$BINDERY_TEST_LIGHTTPD_URL
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
run=wc$$x$RANDOM
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

conf_get() { sed -n "s/^$1 = //p" "$BINDERY_CONFIG" | tail -n 1; }
size_bytes() {
	case $1 in
	*[Kk]) echo $((${1%?} * 1024)) ;; *[Mm]) echo $((${1%?} * 1048576)) ;; *) echo "$1" ;;
	esac
}
block=$(size_bytes "$(conf_get block_size)") inflight=$(conf_get blocks_in_flight)
block=${block:-4194304} inflight=${inflight:-4}
pipeline=$((block * inflight))
closes() { sql "SHOW GLOBAL STATUS LIKE 'Com_stmt_close'" | cut -f2; }

# create NAME FILE [CURL-ARGS...]: 201 expected; the id in ID
create() {
	local name=$1 file=$2
	shift 2
	req POST "$url/documents?name=$name" "${auth[@]}" -H 'Content-Type: application/octet-stream' \
		-H 'Expect:' --data-binary "@$file" "$@"
	ID=$(jfield "$HTTP_BODY" id)
}

printf 'small\n' >"$work/small"
head -c 1048576 /dev/urandom >"$work/mid"
head -c "$pipeline" /dev/urandom >"$work/full"

for i in 1 2 3; do create "$run-warm-$i" "$work/small"; done
is "$HTTP_CODE" 201 "three small creates: the worker has its statements cached"
before=$(closes)
create "$run-mid" "$work/mid"
is "$HTTP_CODE" 201 "a 1 MiB create (less than the $((pipeline / 1048576)) MiB in flight) answered 201"
after=$(closes)
is "$after" "$before" "... and closed no statement: Com_stmt_close stayed at $before"

before=$after
create "$run-full" "$work/full"
is "$HTTP_CODE" 201 "a create of $((pipeline / 1048576)) MiB (every block in flight) answered 201"
full_id=$ID
after=$(closes)
ok "[ $after -gt $before ]" "... its worker closed its cached statements first (Com_stmt_close $before -> $after)"
curl -s -o "$work/back" "${auth[@]}" "$url/documents/$full_id/content"
is "$(sha "$work/back")" "$(sha "$work/full")" "... and its bytes read back whole"

create "$run-after" "$work/small"
is "$HTTP_CODE" 201 "a small create after them prepares again and answers 201"
req GET "$url/documents/$ID"
is "$HTTP_CODE" 200 "... and reads back"

done_testing
