#!/usr/bin/env bash
# A 200 MiB document through an Apache that takes 16 MiB per request:
# shared hosts cap a request's size, and mod_fcgid reads
# every body whole before bindery sees a byte, so large uploads under Apache
# go through tus, in chunks the host accepts.
#
# Its own Apache mod_fcgid, rendered from conf/apache-fcgid.conf with
# LimitRequestBody 16 MiB (and the <If Content-Length> 413 with it) and
# FcgidMaxRequestLen 16 MiB + 64 KiB, in front of the test stack's MariaDB
# and Azurite, with [limits] max_upload = 256M.  Why not the stack's own
# Apache: it runs the shipped sample (64 MiB, as max_upload), and
# body_limits.sh and api.sh check that relation through it.
#   - a plain POST /documents of 20 MiB is 413 in JSON, and stores nothing;
#   - a 20 MiB PATCH is 413 in JSON and moves the upload's offset not at all;
#   - a 200 MiB tus upload in 8 MiB PATCHes finishes: the document is ready
#     and its bytes are the file's (sha256sum of files).  200 MiB under
#     --long (BINDERY_TEST_LONG); by default 72 MiB, nine PATCHes: four
#     times the request limit and past the shipped sample's 64 MiB
#     (max_upload and LimitRequestBody), which is all the size shows.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/stack.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_TOKEN BINDERY_CONFIG BINDERY_TEST_BIN BINDERY_TEST_VAR BINDERY_TEST_DB_SOCKET
[ -x "$BINDERY_TEST_BIN/bindery.fcgi" ] || missing "$BINDERY_TEST_BIN/bindery.fcgi was not built"
[ "$(id -u)" = 0 ] || missing "Apache's User www-data needs root to start"
[ -f /usr/lib/apache2/modules/mod_fcgid.so ] || missing "apache2 with mod_fcgid is not installed"

limit=$((16 * 1024 * 1024))		# LimitRequestBody: 16 MiB
fcgid_limit=$((limit + 64 * 1024))	# FcgidMaxRequestLen: a little above it
chunk=$((8 * 1024 * 1024))		# one PATCH
total=$((72 * 1024 * 1024))		# the document (200 MiB under --long)
[ -z "${BINDERY_TEST_LONG:-}" ] || total=$((200 * 1024 * 1024))

work=$BINDERY_TEST_VAR/tus16-work	# not /tmp: 200 MiB does not belong there
cleanup() {
	stack_private_apache_stop
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -rf "$work" && mkdir -p "$work" || bail_out "cannot create $work"

# The stack's configuration with a document limit above 200 MiB.
sed -e 's/^max_upload = .*/max_upload = 256M/' "$BINDERY_CONFIG" >"$work/bindery.conf"
is "$(grep -c '^max_upload = 256M$' "$work/bindery.conf")" 1 "the responder's config says max_upload = 256M"
stack_private_apache "$BINDERY_TEST_VAR/tus16" "$work/bindery.conf" 18400 apache-16m ||
	bail_out "cannot make a private Apache ready"
conf=$STACK_PRIVATE_APACHE_CONF
# The sample's three numbers (LimitRequestBody and the <If> equal to it,
# FcgidMaxRequestLen): each must be there to be replaced.
is "$(grep -cE '^LimitRequestBody 67174400$|^<If "%\{HTTP:Content-Length\} -gt 67174400">$|^FcgidMaxRequestLen 67239936$' "$conf")" 3 \
	"conf/apache-fcgid.conf has the three limits this test lowers"
sed -i -e "s/67174400/$limit/g" -e "s/67239936/$fcgid_limit/g" "$conf"
is "$(grep -cE "^LimitRequestBody $limit\$|-gt $limit\">\$|^FcgidMaxRequestLen $fcgid_limit\$" "$conf")" 3 \
	"... lowered to 16 MiB (FcgidMaxRequestLen 16 MiB + 64 KiB)"
stack_apache_start "$conf" || bail_out "Apache (16 MiB) did not start (log in $STACK_LOG)"
url=http://127.0.0.1:$APACHE_PORT
note "Apache mod_fcgid with a 16 MiB request limit on $url"
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
tus=(-H 'Tus-Resumable: 1.0.0')
b64() { printf '%s' "$1" | base64 -w0; }
t="tus16-$$-$RANDOM"

head -c "$total" /dev/urandom >"$work/doc.bin" || bail_out "cannot write $work/doc.bin"
head -c $((20 * 1024 * 1024)) "$work/doc.bin" >"$work/20m.bin"

# --- a single request over the host's limit ---
req POST "$url/documents?name=$t-plain" "${auth[@]}" -H 'Content-Type: application/octet-stream' \
	--data-binary "@$work/20m.bin"
is "$HTTP_CODE $(header content-type) $(jfield "$HTTP_BODY" error)" "413 application/json too_large" \
	"a plain POST /documents of 20 MiB is 413 too_large in JSON"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$t-plain")")" 0 "... and stores nothing"

# --- the same document through tus ---
req POST "$url/uploads" "${auth[@]}" "${tus[@]}" -H 'Content-Length: 0' -H "Upload-Length: $total" \
	-H "Upload-Metadata: filename $(b64 "$t.bin"),filetype $(b64 application/octet-stream)"
is "$HTTP_CODE" 201 "POST /uploads for $((total / 1048576)) MiB is 201"
loc=$(header location)
like "$loc" '^/uploads/[0-9a-f]{32}$' "... with the upload's Location"

req PATCH "$url$loc" "${auth[@]}" "${tus[@]}" -H 'Content-Type: application/offset+octet-stream' \
	-H 'Upload-Offset: 0' --data-binary "@$work/20m.bin"
is "$HTTP_CODE $(header content-type) $(jfield "$HTTP_BODY" error)" "413 application/json too_large" \
	"a 20 MiB PATCH is 413 too_large in JSON"
offset_now() {
	curl -s -I -D - -o /dev/null "${auth[@]}" "${tus[@]}" "$url$loc" | tr -d '\r' |
		sed -n 's/^[Uu]pload-[Oo]ffset: *//p'
}
is "$(offset_now)" 0 "... and the upload's offset stays 0"

# 8 MiB PATCHes until the document is whole; each answer's Upload-Offset
# must be the bytes sent so far.  The loop stops at the first wrong answer.
off=0 doc= bad=
t0=$(date +%s%N)
while [ "$off" -lt "$total" ]; do
	dd if="$work/doc.bin" of="$work/chunk" bs="$chunk" skip=$((off / chunk)) count=1 status=none ||
		bail_out "cannot cut a chunk"
	len=$(stat -c %s "$work/chunk")
	REQ_TIMEOUT=300 req PATCH "$url$loc" "${auth[@]}" "${tus[@]}" \
		-H 'Content-Type: application/offset+octet-stream' -H "Upload-Offset: $off" \
		--data-binary "@$work/chunk"
	if [ "$HTTP_CODE" != 204 ] || [ "$(header upload-offset)" != $((off + len)) ]; then
		bad="the PATCH at $off answered $HTTP_CODE, Upload-Offset '$(header upload-offset)': $HTTP_BODY"
		break
	fi
	off=$((off + len))
	doc=$(header location)
done
ms=$((($(date +%s%N) - t0) / 1000000))
note "$((total / 1048576)) MiB in 8 MiB PATCHes through Apache took $ms ms ($((total * 1000 / 1048576 / (ms + 1))) MiB/s)"
ok '[ -z "$bad" ]' "every 8 MiB PATCH is 204 with Upload-Offset advanced by its length${bad:+ ($bad)}"
is "$off" "$total" "the PATCHes reached Upload-Length ($total bytes)"
like "$doc" '^/documents/[0-9]+$' "the last PATCH names the document"
id=${doc#/documents/}
is "$(sql "SELECT status, size FROM documents WHERE id = '$id'" | tr '\t' ' ')" "ready $total" \
	"the document is ready, $total bytes"
req GET "$url/documents?name=$t.bin"
is "$(jfield "$HTTP_BODY" id)" "${id:-none}" "GET /documents?name= finds it"
curl -s -m 300 -o "$work/got.bin" "$url$doc/content"
is "$(sha256sum <"$work/got.bin" | cut -d' ' -f1)" "$(sha256sum <"$work/doc.bin" | cut -d' ' -f1)" \
	"GET /documents/{id}/content gives the file's bytes (SHA-256 of the files)"
req GET "$url$doc"
is "$(jfield "$HTTP_BODY" sha256)" "$(sha256sum <"$work/doc.bin" | cut -d' ' -f1)" \
	"... and the document's sha256 is the file's"
req DELETE "$url$doc" "${auth[@]}"
is "$HTTP_CODE" 204 "the document is deleted again"
done_testing
