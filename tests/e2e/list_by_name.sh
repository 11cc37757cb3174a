#!/usr/bin/env bash
# GET /documents?name=EXACT: the ready document of that
# name as a list answer, {"documents":[doc] or [],"next":null}, through
# lighttpd AND Apache mod_fcgid.  Names compare exactly (utf8mb4_nopad_bin:
# "a.txt", "A.txt" and "a.txt " are three names), percent-decoded; a
# pending document is not listed; a bad name, or name beside limit/after,
# is a 400 in JSON.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET
command -v jq >/dev/null || missing "jq is not installed (./dev installs it)"

work=$(mktemp -d)
slow_pid=
cleanup() {
	[ -z "$slow_pid" ] || kill "$slow_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
raw=(-H 'Content-Type: text/plain')
printf 'lower\n' >"$work/lower.txt"
printf 'upper\n' >"$work/upper.txt"
printf 'unicode\n' >"$work/unicode.txt"
head -c 300000 /dev/urandom >"$work/slow.bin"

# create URL NAME FILE: POST the file under NAME; prints the new id.
create() {
	req POST "$1/documents?name=$(urlenc "$2")" "${auth[@]}" "${raw[@]}" --data-binary "@$3"
	[ "$HTTP_CODE" = 201 ] || { diag "create '$2': $HTTP_CODE $HTTP_BODY"; return 1; }
	jfield "$HTTP_BODY" id
}
# answer: the last answer as "STATUS docs=ID,ID..." (the listed ids), or
# "STATUS not-a-list" when its body is no list answer.
answer() {
	printf '%s %s' "$HTTP_CODE" "$(printf '%s' "$HTTP_BODY" |
		jq -r '"docs=" + ([.documents[].id] | join(","))' 2>/dev/null || echo not-a-list)"
}
# shape: 1 when the last answer is exactly {"documents":[...],"next":null}.
shape() { printf '%s' "$HTTP_BODY" | jq -r '(keys == ["documents","next"]) and (.next == null)'; }

for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"; do
	srv=${s%%=*} url=${s#*=}
	t="byname-$srv-$$-$RANDOM"
	lower=$(create "$url" "$t-a.txt" "$work/lower.txt")
	upper=$(create "$url" "$t-A.txt" "$work/upper.txt")
	# UTF-8 beyond Latin-1, a space, and the query's own '+' and '&'.
	uname="$t-Résumé ünïcødé 文書 a+b&c.txt"
	uni=$(create "$url" "$uname" "$work/unicode.txt")
	like "$lower $upper $uni" '^[0-9]+ [0-9]+ [0-9]+$' "$srv: three documents created"

	req GET "$url/documents?name=$(urlenc "$t-a.txt")"
	is "$HTTP_CODE" 200 "$srv: by name is 200"
	is "$(header content-type)" application/json "$srv: ... JSON"
	is "$(shape)" true "$srv: ... {\"documents\":[…],\"next\":null}"
	is "$(answer)" "200 docs=${lower:-none}" "$srv: ... exactly the document of that name"
	is "$(printf '%s' "$HTTP_BODY" | jq -r '.documents[0].name')" "$t-a.txt" "$srv: ... with its name"
	req GET "$url/documents/${lower:-none}"
	is "$(printf '%s' "$HTTP_BODY" | jq -c .)" \
		"$(curl -s "$url/documents?name=$(urlenc "$t-a.txt")" | jq -c '.documents[0]')" \
		"$srv: ... the same JSON as GET /documents/{id}"

	req GET "$url/documents?name=$(urlenc "$t-A.txt")"
	is "$(answer)" "200 docs=${upper:-none}" "$srv: the upper-case name finds the upper-case document only"
	req GET "$url/documents?name=$(urlenc "$t-a.TXT")"
	is "$HTTP_CODE" 200 "$srv: a case variant nobody stored is 200"
	is "$(answer)" "200 docs=" "$srv: ... with an empty list"
	is "$(shape)" true "$srv: ... and next null"
	req GET "$url/documents?name=$(urlenc "$t-a.txt ")"
	is "$(answer)" "200 docs=" "$srv: a trailing space is another name (empty list)"
	req GET "$url/documents?name=$t-a.txt+"
	is "$(answer)" "200 docs=" "$srv: ... also when the space is written '+'"
	req GET "$url/documents?name=$(urlenc " $t-a.txt")"
	is "$(answer)" "200 docs=" "$srv: a leading space is another name (empty list)"
	req GET "$url/documents?name=$(urlenc "$t-absent")"
	is "$HTTP_CODE" 200 "$srv: an absent name is 200"
	is "$HTTP_BODY" '{"documents":[],"next":null}' "$srv: ... {\"documents\":[],\"next\":null}"

	req GET "$url/documents?name=$(urlenc "$uname")"
	is "$(answer)" "200 docs=${uni:-none}" "$srv: a percent-encoded UTF-8 name with '+', '&' and a space finds its document"
	is "$(printf '%s' "$HTTP_BODY" | jq -r '.documents[0].name')" "$uname" "$srv: ... and its name reads back"
	# The same name in a form whose '+' means a space: another name.
	req GET "$url/documents?name=$(urlenc "$uname" | sed 's/%20/+/g; s/%2B/+/g')"
	is "$(answer)" "200 docs=" "$srv: '+' decodes to a space, not to itself"

	# --- refusals: 400 in JSON, nothing listed ---
	for bad in '' 'a%2Fb' 'x%01y' '%C0%AF' '%ED%A0%80' '..' 'a%ZZ' 'a%' 'a%2' \
		"$(printf 'n%.0s' {1..256})"; do
		req GET "$url/documents?name=$bad"
		case $srv:$bad in
		lighttpd:x%01y | lighttpd:%C0%AF)
			# lighttpd's own URL checks (server.http-parseopts defaults:
			# control characters, an overlong '/') refuse these
			# before bindery runs, with its own 400, which the sample
			# config makes the API's JSON (conf/lighttpd-error-400.html).
			is "$HTTP_CODE $(header content-type) $(jfield "$HTTP_BODY" error)" \
				"400 application/json bad_request" "$srv: name '$bad' is lighttpd's own 400, in JSON" ;;
		*)
			is "$HTTP_CODE $(header content-type) $(jfield "$HTTP_BODY" error)" \
				"400 application/json bad_name" "$srv: name '${bad:0:12}' is 400 bad_name in JSON" ;;
		esac
	done
	req GET "$url/documents?name=$(printf 'n%.0s' {1..255})"
	is "$HTTP_CODE $HTTP_BODY" '200 {"documents":[],"next":null}' "$srv: a 255-byte name is a name (200, empty)"
	req GET "$url/documents?name=$(urlenc "$t-a.txt")&name=$(urlenc "$t-A.txt")"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_name" "$srv: name given twice is 400 bad_name"
	req GET "$url/documents?name=$(urlenc "$t-a.txt")&limit=10"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_limit" "$srv: name with limit is 400 bad_limit"
	like "$(jfield "$HTTP_BODY" message)" 'name' "$srv: ... and the message says name and limit do not combine"
	req GET "$url/documents?after=1&name=$(urlenc "$t-a.txt")"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_cursor" "$srv: name with after is 400 bad_cursor"
	like "$(jfield "$HTTP_BODY" message)" 'name' "$srv: ... and the message says name and after do not combine"
	req GET "$url/documents?limit=2"
	is "$HTTP_CODE" 200 "$srv: the plain list still answers without name"
	is "$(printf '%s' "$HTTP_BODY" | jq '.documents | length')" 2 "$srv: ... a page of two"
done

# --- pending is not listed ---
# A real pending document: an upload whose body trickles in through lighttpd
# (which streams it to the responder), looked up through both servers while
# its row is pending, and again once it is ready.
url=$BINDERY_TEST_LIGHTTPD_URL
pname="byname-pending-$$-$RANDOM.bin"
curl -s -o "$work/slow.out" -w '%{http_code}' --limit-rate 50K "${auth[@]}" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$work/slow.bin" \
	"$url/documents?name=$pname" >"$work/slow.code" &
slow_pid=$!
status=
for _ in $(seq 1 50); do
	status=$(sql "SELECT status FROM documents WHERE name = $(sql_quote "$pname")")
	[ -n "$status" ] && break
	sleep 0.1
done
is "$status" pending "the trickled upload's document is pending"
for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"; do
	req GET "${s#*=}/documents?name=$pname"
	is "$HTTP_CODE $HTTP_BODY" '200 {"documents":[],"next":null}' "${s%%=*}: a pending document is not listed"
done
is "$(sql "SELECT status FROM documents WHERE name = $(sql_quote "$pname")")" pending \
	"... and it was still pending after both lookups"
wait "$slow_pid"
slow_pid=
is "$(cat "$work/slow.code")" 201 "the trickled upload finished (201)"
pid=$(jfield "$(cat "$work/slow.out")" id)
for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"; do
	req GET "${s#*=}/documents?name=$pname"
	is "$(answer)" "200 docs=${pid:-none}" "${s%%=*}: once ready it is listed by name"
done
done_testing
