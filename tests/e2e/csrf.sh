#!/usr/bin/env bash
# CSRF under web-server authentication: when lighttpd or
# Apache authenticates the caller itself (REMOTE_USER; the test stack does it
# for requests carrying Basic credentials, see stack_add_webauth in tests/lib/stack.sh), a
# write must come from our own origin (Sec-Fetch-Site, else Origin, else
# Referer).  Requests without any of those (curl, scripts) pass, reads pass,
# bearer-token requests are not affected.  Then, as CGI, the two
# configuration keys: [auth] public_origin and trusted_proxies.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_WEBAUTH \
	BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET BINDERY_CONFIG BINDERY_TEST_BIN
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'csrf payload\n' >"$work/body"
run="csrf-$$-$RANDOM"
basic=(-u "$BINDERY_TEST_WEBAUTH")
plain=(-H 'Content-Type: text/plain' --data-binary "@$work/body")

# stored NAME: how many documents (any status) and intents carry NAME.
stored() {
	sql "SELECT COUNT(*) FROM documents WHERE name = $(sql_quote "$1")"
}

# refused WHAT NAME: the last answer was 403 forbidden JSON and NAME left no row.
refused() {
	is "$HTTP_CODE" 403 "$1: 403"
	is "$(jfield "$HTTP_BODY" error)" forbidden "$1: error forbidden"
	like "$HTTP_CTYPE" '^application/json' "$1: a JSON answer"
	is "$(stored "$2")" 0 "$1: nothing in the database"
}

for server in lighttpd apache; do
	if [ $server = lighttpd ]; then url=$BINDERY_TEST_LIGHTTPD_URL; else url=$BINDERY_TEST_APACHE_URL; fi
	n="$run-$server"

	req POST "$url/documents?name=$n-cross" "${basic[@]}" "${plain[@]}" -H 'Sec-Fetch-Site: cross-site'
	refused "$server: Sec-Fetch-Site cross-site POST" "$n-cross"
	req POST "$url/documents?name=$n-site" "${basic[@]}" "${plain[@]}" -H 'Sec-Fetch-Site: same-site'
	refused "$server: Sec-Fetch-Site same-site POST" "$n-site"
	req POST "$url/documents?name=$n-evil" "${basic[@]}" "${plain[@]}" -H 'Origin: http://evil.example'
	refused "$server: Origin http://evil.example" "$n-evil"
	req POST "$url/documents?name=$n-null" "${basic[@]}" "${plain[@]}" -H 'Origin: null'
	refused "$server: Origin null" "$n-null"
	req POST "$url/documents?name=$n-ref" "${basic[@]}" "${plain[@]}" -H 'Referer: http://evil.example/a.html'
	refused "$server: only a foreign Referer" "$n-ref"
	# X-Forwarded-Host from a peer that is not a trusted proxy names nothing.
	req POST "$url/documents?name=$n-xfh" "${basic[@]}" "${plain[@]}" -H 'Origin: http://evil.example' \
		-H 'X-Forwarded-Host: evil.example' -H 'X-Forwarded-Proto: http'
	refused "$server: X-Forwarded-Host from an untrusted peer is ignored" "$n-xfh"

	req POST "$url/documents?name=$n-same" "${basic[@]}" "${plain[@]}" -H 'Sec-Fetch-Site: same-origin'
	is "$HTTP_CODE" 201 "$server: Sec-Fetch-Site same-origin POST is 201"
	same=$(jfield "$HTTP_BODY" id)
	is "$(sql "SELECT owner FROM documents WHERE id = ${same:-0}")" alice \
		"$server: ... owned by the user the server authenticated"
	req POST "$url/documents?name=$n-origin" "${basic[@]}" "${plain[@]}" -H "Origin: $url"
	is "$HTTP_CODE" 201 "$server: an Origin equal to the server's is 201"
	origin=$(jfield "$HTTP_BODY" id)
	req POST "$url/documents?name=$n-curl" "${basic[@]}" "${plain[@]}"
	is "$HTTP_CODE" 201 "$server: no Origin, no Sec-Fetch-Site (curl) is 201"
	curl_id=$(jfield "$HTTP_BODY" id)
	req POST "$url/documents?name=$n-bearer" -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
		"${plain[@]}" -H 'Sec-Fetch-Site: cross-site' -H 'Origin: http://evil.example'
	is "$HTTP_CODE" 201 "$server: a bearer-token request with cross-site headers is unaffected"
	bearer=$(jfield "$HTTP_BODY" id)

	# Reads change nothing: a cross-site GET is answered.
	req GET "$url/documents/${same:-0}" "${basic[@]}" -H 'Sec-Fetch-Site: cross-site' \
		-H 'Origin: http://evil.example'
	is "$HTTP_CODE" 200 "$server: a cross-site GET is 200"

	# DELETE and PUT are writes too.
	req DELETE "$url/documents/${same:-0}" "${basic[@]}" -H 'Sec-Fetch-Site: cross-site'
	is "$HTTP_CODE" 403 "$server: a cross-site DELETE is 403"
	is "$(sql "SELECT status FROM documents WHERE id = ${same:-0}")" ready "$server: ... the document stays"
	req PUT "$url/documents/${same:-0}/content" "${basic[@]}" -H 'Content-Type: text/plain' \
		--data-binary 'replaced' -H 'Origin: http://evil.example'
	is "$HTTP_CODE" 403 "$server: a cross-site PUT is 403"
	is "$(sql "SELECT version FROM documents WHERE id = ${same:-0}")" 1 "$server: ... the bytes stay"

	for id in "$same" "$origin" "$curl_id"; do
		req DELETE "$url/documents/${id:-0}" "${basic[@]}" -H 'Sec-Fetch-Site: same-origin'
		is "$HTTP_CODE" 204 "$server: a same-origin DELETE of $id is 204"
	done
	req DELETE "$url/documents/${bearer:-0}" -H "Authorization: Bearer $BINDERY_TEST_TOKEN"
	is "$HTTP_CODE" 204 "$server: the bearer document is deleted"
done

# As CGI, with the two keys.  $work/conf says clients address
# https://docs.example.com (a load balancer in front) and trusts 10.0.0.0/8.
sed -e 's/^\[auth\]$/[auth]\npublic_origin = https:\/\/docs.example.com\//' "$BINDERY_CONFIG" >"$work/conf"
grep -q '^public_origin' "$work/conf" || bail_out "no [auth] section in $BINDERY_CONFIG"
chmod 600 "$work/conf"
sed -e 's/^\[auth\]$/[auth]\ntrusted_proxies = 10.0.0.0\/8, ::1/' "$BINDERY_CONFIG" >"$work/proxied"
chmod 600 "$work/proxied"
out=$work/out
cgi_post() { # CONF NAME VAR=VALUE...: a REMOTE_USER POST of $work/body as CGI
	local conf=$1 name=$2
	shift 2
	cgi_run "$out" "$conf" POST "/documents?name=$name" REMOTE_USER=alice CONTENT_TYPE=text/plain \
		CONTENT_LENGTH="$(stat -c %s "$work/body")" HTTP_HOST=127.0.0.1:8080 "$@" <"$work/body"
	HTTP_CODE=$CGI_CODE HTTP_BODY=$(cgi_body "$out")
	HTTP_CTYPE=$(tr -d '\r' <"$out" | sed -n '1,/^$/s/^Content-Type: *//p')
}
cleanup_ids=()
n="$run-cgi"
cgi_post "$BINDERY_CONFIG" "$n-cross" HTTP_SEC_FETCH_SITE=cross-site
refused "CGI: Sec-Fetch-Site cross-site" "$n-cross"
cgi_post "$BINDERY_CONFIG" "$n-host" HTTP_ORIGIN=http://127.0.0.1:8080
is "$HTTP_CODE" 201 "CGI: Origin equal to scheme://Host is 201"
cleanup_ids+=("$(jfield "$HTTP_BODY" id)")
cgi_post "$work/conf" "$n-pub" HTTP_ORIGIN=https://docs.example.com
is "$HTTP_CODE" 201 "CGI: with public_origin set, an Origin equal to it is 201"
cleanup_ids+=("$(jfield "$HTTP_BODY" id)")
cgi_post "$work/conf" "$n-pubhost" HTTP_ORIGIN=http://127.0.0.1:8080
refused "CGI: with public_origin set, the internal Host no longer counts" "$n-pubhost"
cgi_post "$work/conf" "$n-pubref" HTTP_REFERER=https://docs.example.com/
is "$HTTP_CODE" 201 "CGI: a Referer on public_origin is 201"
cleanup_ids+=("$(jfield "$HTTP_BODY" id)")

# Behind a trusted proxy its X-Forwarded-Host/-Proto say what clients addressed.
fwd=(HTTP_X_FORWARDED_HOST=docs.example.com HTTP_X_FORWARDED_PROTO=https HTTP_ORIGIN=https://docs.example.com)
cgi_post "$work/proxied" "$n-trusted" REMOTE_ADDR=10.9.8.7 "${fwd[@]}"
is "$HTTP_CODE" 201 "CGI: X-Forwarded-Host/-Proto from a trusted proxy count"
cleanup_ids+=("$(jfield "$HTTP_BODY" id)")
cgi_post "$work/proxied" "$n-untrusted" REMOTE_ADDR=192.0.2.9 "${fwd[@]}"
refused "CGI: ... from any other peer they do not" "$n-untrusted"
cgi_post "$BINDERY_CONFIG" "$n-noproxies" REMOTE_ADDR=10.9.8.7 "${fwd[@]}"
refused "CGI: ... nor without trusted_proxies" "$n-noproxies"

for id in "${cleanup_ids[@]}"; do
	cgi_run "$out" "$BINDERY_CONFIG" DELETE "/documents/${id:-0}" REMOTE_USER=alice </dev/null
	is "$CGI_CODE" 204 "CGI: cleaned up $id (no Origin: a script)"
done
done_testing
