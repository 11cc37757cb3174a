#!/usr/bin/env bash
# An upload the web server does not hand over whole is never acknowledged.
#
# Through lighttpd and Apache mod_fcgid, with the shipped configs: a body over
# the limit (curl's default Expect: 100-continue, without it, and chunked), a
# Content-Length over the limit with a 1-byte body, and a body that ends
# before its Content-Length, sent by a raw socket that then half-closes
# (tests/tools/short_body.py).  Each must be refused (413; 400 bad_body in
# JSON for the short body under Apache) and leave nothing behind: no row in
# MariaDB, no new blob in Azurite.  (The plain-CGI servers: tests/e2e/cgi.sh.)
#
# Why it needs a test of its own: when Apache refuses a body over
# LimitRequestBody, mod_fcgid still runs the responder, with CONTENT_LENGTH=0
# and an empty stdin -- indistinguishable from an empty upload -- so the
# responder cannot see the refusal; conf/apache-fcgid.conf answers 413 itself
# before mod_fcgid runs.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/chaos.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET
chaos_need_stack	# az_list: Azurite looked at directly
command -v python3 >/dev/null || missing "python3 is not installed (./dev installs it)"
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN" -H 'Content-Type: application/octet-stream')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t="lim-$$-$RANDOM"

# 70,000,000 bytes: over max_upload (64 MiB) and over Apache's
# LimitRequestBody (64 MiB + 64 KiB).  Random, so no layer can compress it.
head -c 70000000 /dev/urandom >"$work/big"
printf 'x' >"$work/one"
printf 'abc' >"$work/three"

# rows NAME: how many document rows (pending or ready) carry NAME.
rows() { sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$1")"; }
chaos_snapshot "$work/blobs.before" || bail_out "cannot list Azurite"

for server in lighttpd apache; do
	case $server in
	lighttpd) url=$BINDERY_TEST_LIGHTTPD_URL ;;
	apache) url=$BINDERY_TEST_APACHE_URL ;;
	esac

	n=$t-$server-expect
	req POST "$url/documents?name=$n" "${auth[@]}" --data-binary "@$work/big"
	is "$HTTP_CODE" 413 "$server: 70 MB with Expect: 100-continue is 413"
	is "$(rows "$n")" 0 "$server: ... and no document row"

	n=$t-$server-noexpect
	req POST "$url/documents?name=$n" "${auth[@]}" -H 'Expect:' --data-binary "@$work/big"
	is "$HTTP_CODE" 413 "$server: 70 MB without Expect is 413"
	is "$(rows "$n")" 0 "$server: ... and no document row"

	n=$t-$server-chunked
	req POST "$url/documents?name=$n" "${auth[@]}" -H 'Transfer-Encoding: chunked' \
		--data-binary "@$work/big"
	# lighttpd streams bodies to the responder (stream-request-body = 1) and
	# FastCGI needs a CONTENT_LENGTH, so it refuses a chunked body it has
	# not read whole with 411 before bindery sees it.
	if [ "$server" = lighttpd ]; then
		like "$HTTP_CODE" '^41[13]$' "$server: 70 MB chunked is refused ($HTTP_CODE)"
	else
		is "$HTTP_CODE" 413 "$server: 70 MB chunked is 413"
	fi
	is "$(rows "$n")" 0 "$server: ... and no document row"

	n=$t-$server-cl-lie
	REQ_TIMEOUT=20 req POST "$url/documents?name=$n" "${auth[@]}" -H 'Content-Length: 70000000' \
		--data-binary "@$work/one"
	is "$HTTP_CODE" 413 "$server: Content-Length 70000000 with a 1-byte body is 413"
	if [ "$server" = apache ]; then
		is "$HTTP_CTYPE" application/json "$server: ... answered in JSON"
		like "$HTTP_BODY" '"error":"too_large"' "$server: ... with the API's error code"
	fi
	is "$(rows "$n")" 0 "$server: ... and no document row"

	# The client gives up after 3 bytes of a declared 1000: whatever the
	# server does then, nothing may be acknowledged or stored.
	n=$t-$server-short
	REQ_TIMEOUT=3 req POST "$url/documents?name=$n" "${auth[@]}" -H 'Content-Length: 1000' \
		--data-binary "@$work/three"
	unlike "$HTTP_CODE" '^2' "$server: a body that ends before its Content-Length is not acknowledged ($HTTP_CODE)"
	sleep 1
	is "$(rows "$n")" 0 "$server: ... and no document row"

	# The body ends for good: 3 bytes of a declared 1000, then the client
	# half-closes.  Under Apache, mod_fcgid answered that with its own 500
	# until conf/apache-fcgid.lua; lighttpd drops a connection whose client
	# closed mid-body without an answer (bindery's 400 never reaches it).
	n=$t-$server-halfclose
	python3 "$here/../tools/short_body.py" "$url/documents?name=$n" 1000 "$work/three" "$work/hc" \
		"Authorization: Bearer $BINDERY_TEST_TOKEN" 'Content-Type: application/octet-stream'
	code=$(<"$work/hc.code")
	if [ "$server" = apache ]; then
		is "$code" 400 "$server: a body that ends before its Content-Length (half-closed) is 400"
		is "$(sed -n 's/^content-type: *//p' "$work/hc.headers" | tr -d '\r')" application/json \
			"$server: ... answered in JSON"
		like "$(tr -d '\0' <"$work/hc.body")" '"error":"bad_body"' "$server: ... bad_body"
	else
		like "$code" '^(000|400)$' "$server: a body that ends before its Content-Length (half-closed) is 400 or dropped ($code)"
		[ "$code" = 000 ] || like "$(tr -d '\0' <"$work/hc.body")" '"error":"bad_body"' "$server: ... bad_body"
	fi
	sleep 1
	is "$(rows "$n")" 0 "$server: ... and no document row"

	# The same path still takes a body that fits.
	n=$t-$server-fits
	req POST "$url/documents?name=$n" "${auth[@]}" --data-binary "@$work/three"
	is "$HTTP_CODE" 201 "$server: a 3-byte body is stored"
	like "$HTTP_BODY" '"size":3[,}]' "$server: ... with its 3 bytes"
	id=$(jfield "$HTTP_BODY" id)
	sql "SELECT blob_name FROM documents WHERE id = '$id'" >>"$work/blobs.fits"
	req DELETE "$url/documents/$id" -H "Authorization: Bearer $BINDERY_TEST_TOKEN"
	is "$HTTP_CODE" 204 "$server: ... and deleted again"
done

# Nothing any refused request sent stayed in storage: the only blobs new
# since the start are the two 3-byte documents' (deleted above, kept
# retired until their grace ends).
chaos_snapshot "$work/blobs.after" || bail_out "cannot list Azurite"
comm -13 "$work/blobs.before" "$work/blobs.after" >"$work/blobs.new"
sort "$work/blobs.fits" >"$work/blobs.want"
ok 'cmp -s "$work/blobs.new" "$work/blobs.want"' \
	"Azurite: no blob from a refused body (new: $(tr '\n' ' ' <"$work/blobs.new"))"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE '$t-%'")" 0 "MariaDB: no document row of this test is left"
done_testing
