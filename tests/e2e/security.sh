#!/usr/bin/env bash
# Hostile input through lighttpd: SQL metacharacters are data, odd paths and
# names are refused, oversize headers are refused, and a second request with an
# Idempotency-Key still in progress gets 409 instead of a second upload.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET
url=$BINDERY_TEST_LIGHTTPD_URL
tok=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
auth=("${tok[@]}" -H 'Content-Type: application/octet-stream')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'payload' >"$work/p"
t="sec-$$-$RANDOM"

# SQL metacharacters in every field are only ever data (all SQL is prepared).
evil="$t x'); DROP TABLE documents; -- \"%"
enc=$(printf '%s' "$evil" | od -An -tx1 -v | tr -s ' \n' ' ' | sed 's/ \([0-9a-f][0-9a-f]\)/%\1/g; s/ //g')
req POST "$url/documents?name=$enc" "${tok[@]}" -H "Idempotency-Key: k'$t\"--;" \
	-H "Content-Type: text/plain'; DROP TABLE blobs; --" --data-binary "@$work/p"
is "$HTTP_CODE" 201 "a name, key and type full of SQL are accepted as data"
id=$(jfield "$HTTP_BODY" id)
is "$(sql "SELECT name FROM documents WHERE id = $id")" "$evil" "... stored byte for byte"
is "$(sql "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN ('documents','blobs')")" 2 \
	"... and both tables are still there"
req GET "$url/documents?limit=1&after=1%20OR%201=1"
is "$HTTP_CODE" 400 "SQL in a cursor is a 400, not a query"

# Names: traversal, NUL, overlong UTF-8, 10 KB.
long=$(head -c 10240 /dev/zero | tr '\0' 'n')
for bad in '..%2F..%2Fetc%2Fpasswd' 'a%00b' '%C0%AE%C0%AE' '%E0%80%AF' 'a%5Cb'; do
	req POST "$url/documents?name=$bad" "${auth[@]}" --data-binary "@$work/p"
	is "$HTTP_CODE" 400 "name '${bad:0:24}' is refused with 400"
done
# A 10 KB name: the server refuses the request line itself, or bindery does.
req POST "$url/documents?name=$long" "${auth[@]}" --data-binary "@$work/p"
like "$HTTP_CODE" '^(400|414|431)$' "a 10 KB name is refused ($HTTP_CODE)"
req POST "$url/documents" "${auth[@]}" -F "name=$long" -F "file=@$work/p"
is "$HTTP_CODE" 400 "a 10 KB name in a form is refused with 400 by bindery"
# Paths that try to escape the routes.
for p in '/documents/../../etc/passwd' '/documents/1/../../x' '/documents//1' '/documents/1%2F..' '/./healthz'; do
	code=$(curl -s --path-as-is -o /dev/null -w '%{http_code}' "$url$p")
	is "$code" 404 "path $p is 404"
done

# Oversize headers are refused, never echoed.
big=$(head -c 16384 /dev/zero | tr '\0' 'A')
req POST "$url/documents?name=$t-bighdr" -H "Authorization: Bearer $big" --data-binary "@$work/p"
ok '[ "$HTTP_CODE" = 401 ] || [ "$HTTP_CODE" = 431 ] || [ "$HTTP_CODE" = 400 ]' \
	"a 16 KB Authorization header is refused ($HTTP_CODE)"
unlike "$HTTP_BODY" 'AAAAAAAA' "... and not echoed back"
req POST "$url/documents?name=$t-bigkey" "${auth[@]}" -H "Idempotency-Key: $(head -c 300 /dev/zero | tr '\0' k)" \
	--data-binary "@$work/p"
is "$HTTP_CODE" 400 "a 300-byte Idempotency-Key is 400"

# A second request with a key still in progress: 409, never a second upload.
# lighttpd streams the body, so a slow sender keeps the first request open.
head -c 400000 /dev/urandom >"$work/slow.bin"
curl -s -o "$work/first" -w '%{http_code}' --limit-rate 100K "${auth[@]}" -H "Idempotency-Key: slow-$t" \
	--data-binary "@$work/slow.bin" "$url/documents?name=$t-slow" >"$work/first.code" &
slow=$!
sleep 1.5
req POST "$url/documents?name=$t-slow" "${auth[@]}" -H "Idempotency-Key: slow-$t" --data-binary "@$work/slow.bin"
is "$HTTP_CODE" 409 "a second request with the same key in progress is 409"
is "$(printf '%s' "$HTTP_BODY" | sed -n 's/.*"error":"\([a-z_]*\)".*/\1/p')" idempotency_in_progress "... idempotency_in_progress"
like "$(header retry-after)" '^[0-9]+$' "... with Retry-After"
wait "$slow"
is "$(cat "$work/first.code")" 201 "the first request finishes with 201"
req POST "$url/documents?name=$t-slow" "${auth[@]}" -H "Idempotency-Key: slow-$t" --data-binary "@$work/slow.bin"
is "$HTTP_CODE" 201 "a retry after it finished answers 201"
is "$(jfield "$HTTP_BODY" id)" \
	"$(jfield "$(<"$work/first")" id)" "... with the first request's document"
is "$(sql "SELECT COUNT(*) FROM blobs b JOIN documents d ON d.id = b.document_id WHERE d.name = '$t-slow'")" 1 \
	"one blob was ever registered for the key"

# The page's upload form works without JavaScript: 303 back to the page.
printf 'form' >"$work/form.txt"
code=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -H "Authorization: Bearer $BINDERY_TEST_TOKEN" \
	-H 'Accept: text/html,application/xhtml+xml' -F "name=$t-nojs" -F "file=@$work/form.txt" "$url/documents")
like "$code" '^303 .*/\?created=[0-9]+$' "a browser form post is answered 303 to the page, naming the new document"
req GET "$url/documents?limit=1000"
like "$HTTP_BODY" "\"$t-nojs\"" "... and the document exists"
done_testing
