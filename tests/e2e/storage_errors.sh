#!/usr/bin/env bash
# Storage refusing a request bindery built is not the client's fault.
#
# A lighttpd of its own runs bindery.fcgi with a bindery.conf whose [storage]
# endpoint is tests/tools/faultproxy in front of the stack's Azurite.  The
# proxy answers one Put Blob, Put Block or Put Block List with a 400 and an
# Azure error code (Md5Mismatch, InvalidBlockList, InvalidHeaderValue): the
# client must get 502 storage_error in JSON (never 400 bad_body), the log
# must name the service's error code and request id, and after
#   bindery sweep --older-than 0 --force
# nothing of the attempt may be left in MariaDB or Azurite (checked directly,
# tests/lib/chaos.sh).  A body that really ends early stays 400 bad_body.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/faultproxy.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
[ -x "$FAULTPROXY" ] || bail_out "tests/tools/faultproxy is not built"
[ -x "$CHAOS_BIN/bindery.fcgi" ] || bail_out "bindery.fcgi not found"
[ -x "$(command -v lighttpd || echo /usr/sbin/lighttpd)" ] || bail_out "lighttpd is not installed"

work=$(mktemp -d)
PROXY_PID=
. "$top/tests/lib/stack.sh"
cleanup() {
	stack_private_lighttpd_stop
	[ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
RUN=se$$x$RANDOM
blob_port=${BINDERY_TEST_BLOB_ENDPOINT#http://127.0.0.1:}
blob_port=${blob_port%%/*}

proxy_start "$work" -t "127.0.0.1:$blob_port" || bail_out "faultproxy did not start"
sed -e "s|^endpoint = .*|endpoint = http://127.0.0.1:$PROXY_PORT/${BINDERY_TEST_BLOB_ACCOUNT}|" \
	"$BINDERY_CONFIG" >"$work/proxy.conf"
grep -q "^endpoint = http://127.0.0.1:$PROXY_PORT/" "$work/proxy.conf" ||
	bail_out "the stack's bindery.conf has no [storage] endpoint line to point at the proxy"
# The CLI's config: the stack's services directly, short sweep leases.
{ cat "$BINDERY_CONFIG"; grep -q '^\[sweep\]' "$BINDERY_CONFIG" || printf '\n[sweep]\nlease = 1\n'; } >"$work/cli.conf"
chmod 0600 "$work/proxy.conf" "$work/cli.conf"

# Our own lighttpd: the stack's responder reads the stack's config, whose
# storage is not behind the proxy.
stack_private_lighttpd "$BINDERY_TEST_VAR/storerr-lighttpd" lighttpd.conf "$work/proxy.conf" "$CHAOS_BIN" \
	18280 || bail_out "private lighttpd did not start"
URL=http://127.0.0.1:$HTTP_PORT
RESPONDER_LOG=$STACK_LOG/lighttpd.out	# the responder's stderr

head -c 20000 /dev/urandom >"$work/small.bin"
head -c 9000000 /dev/urandom >"$work/large.bin"	# three 4 MiB blocks: Put Block, Put Block List
head -c 7000 /dev/urandom >"$work/new.bin"

# send METHOD PATH FILE: FILE through our lighttpd; sets HTTP_CODE, HTTP_BODY.
send() {
	req "$1" "$URL$2" "${CHAOS_AUTH[@]}" -H 'Content-Type: application/x-storerr' \
		--data-binary "@$3"
}

# refused DESC MODE METHOD PATH FILE NAME: the proxy refuses one request
# (MODE: "fail 400 1 MATCH CODE"); the client gets 502 storage_error, the log
# names CODE and the proxy's request id, and after a sweep nothing of NAME's
# attempt is left.
n_case=0
refused() {
	local desc=$1 mode=$2 method=$3 path=$4 file=$5 name=$6 code failed0 rid problems
	n_case=$((n_case + 1))
	chaos_snapshot "$work/before"
	sql "SELECT name FROM blobs" | sort >"$work/rows.before"
	code=${mode##* }
	failed0=$(proxy_stat failed)
	proxy_mode "$mode"
	send "$method" "$path" "$file"
	proxy_mode pass
	is "$(($(proxy_stat failed) - failed0))" 1 "$desc: the proxy refused one request with 400 $code"
	is "$HTTP_CODE" 502 "$desc: the client gets 502, not 400"
	is "$HTTP_CTYPE" application/json "$desc: ... in JSON"
	is "$(jfield "$HTTP_BODY" error)" storage_error "$desc: ... error storage_error"
	rid=faultproxy-$(proxy_stat failed)
	ok 'grep -q -- "$code.*$rid" "$RESPONDER_LOG"' \
		"$desc: the log names the service's error code and request id ($code, $rid)"
	: >"$work/sweep.log"
	chaos_sweep "$work/cli.conf" "$work/sweep.log"
	problems=$(chaos_verify "$name" "$work/before")
	# chaos_verify looks at documents and blobs; the attempt's registry row
	# is a row that was not there before and is not a live document's.
	sql "SELECT name FROM blobs WHERE state <> 'committed'" | sort | comm -13 "$work/rows.before" - |
		sed -e 's/^/registry row left: /' >"$work/rows.left"
	problems=$problems$(cat "$work/rows.left")
	is "$problems" "" "$desc: after the sweep, nothing of the attempt is left"
	[ -z "$problems" ] || sed -e 's/^/#   sweep: /' "$work/sweep.log"
}

# rows NAME: document rows (any status) named NAME.
rows() { sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$1")"; }

n=$RUN-put-blob
refused "Put Blob answered 400 Md5Mismatch" "fail 400 1 PUT Md5Mismatch" \
	POST "/documents?name=$n" "$work/small.bin" "$n"
is "$(rows "$n")" 0 "Put Blob answered 400: no document row"

n=$RUN-put-block
refused "Put Block answered 400 Md5Mismatch" "fail 400 1 comp=block& Md5Mismatch" \
	POST "/documents?name=$n" "$work/large.bin" "$n"
is "$(rows "$n")" 0 "Put Block answered 400: no document row"

n=$RUN-block-list
refused "Put Block List answered 400 InvalidBlockList" "fail 400 1 comp=blocklist InvalidBlockList" \
	POST "/documents?name=$n" "$work/large.bin" "$n"
is "$(rows "$n")" 0 "Put Block List answered 400: no document row"

# A replace refused by storage keeps the document as it was.
n=$RUN-replace
send POST "/documents?name=$n" "$work/small.bin"
is "$HTTP_CODE" 201 "replace: the document to replace is created"
id=$(jfield "$HTTP_BODY" id)
refused "a replace's Put Blob answered 400 InvalidHeaderValue" "fail 400 1 PUT InvalidHeaderValue" \
	PUT "/documents/${id:-0}/content" "$work/new.bin" "$n"
got=$(curl -s -m 60 "$URL/documents/${id:-0}/content" | sha)
is "$got" "$(sha "$work/small.bin")" "replace refused by storage: the document keeps its bytes"

# The client's own body ending early is still the client's fault: bindery
# reads 10 of a declared 100 bytes and never gets to a storage answer.
n=$RUN-short
printf '0123456789' >"$work/ten"
CGI_PROGRAM=$CHAOS_BIN/bindery.fcgi cgi_run "$work/short.out" "$work/proxy.conf" POST \
	"/documents?name=$n" CONTENT_LENGTH=100 CONTENT_TYPE=application/x-storerr \
	HTTP_AUTHORIZATION="Bearer $BINDERY_TEST_TOKEN" <"$work/ten"
is "$CGI_CODE" 400 "a body that ends before its Content-Length: still 400"
is "$(jfield "$(cgi_body "$work/short.out")" error)" bad_body "... bad_body"
is "$(rows "$n")" 0 "... and no document row"

ok '! grep -q -- "$BINDERY_TEST_BLOB_KEY" "$RESPONDER_LOG"' "the responder's log holds no account key"
done_testing
