#!/usr/bin/env bash
# Blobs that describe themselves (doc/design.md): the committing call of a
# create, a replace and a tus upload writes metadata naming the
# installation (the id the database keeps) and the document (id, version,
# owner, name, content type, creation time), the name percent-encoded UTF-8.
# Read back as the real service answers Get Blob Properties (a HEAD through
# a read SAS), and decoded the way doc/operating.md says.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
blobtool=${top_builddir:-$top}/tests/tools/blobtool
[ -x "$blobtool" ] || missing "blobtool is not built"
export BLOBTOOL_CONTAINER=$CHAOS_CONTAINER
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
RUN=st$$x$RANDOM
url=$BINDERY_TEST_LIGHTTPD_URL
head -c 3000 /dev/urandom >"$work/one"
head -c 5000 /dev/urandom >"$work/two"

# meta BLOB: the blob's x-ms-meta-* headers, "name=value" a line, lower-case names.
meta() {
	local sas
	sas=$("$blobtool" sas "$1" r 60) || return 1
	curl -sS -I "$sas" | tr -d '\r' | sed -n 's/^[Xx]-[Mm][Ss]-[Mm][Ee][Tt][Aa]-\([^:]*\): \(.*\)$/\1=\2/p' |
		awk -F= '{ printf "%s=%s\n", tolower($1), substr($0, length($1) + 2) }'
}
field() { sed -n "s/^$2=//p" "$1"; }
# RFC 3986 percent-decoding, as doc/operating.md describes it.
pct_decode() { local v=${1//\\/\\\\}; printf '%b' "${v//%/\\x}"; }
blob_of() { sql "SELECT blob_name FROM documents WHERE id = $1"; }
# state_tag BLOB: the value of its state tag (Get Blob Tags through a SAS with t).
state_tag() {
	local sas
	sas=$("$blobtool" sas "$1" t 60) || return 1
	curl -sS "$sas&comp=tags" | sed -n 's|.*<Key>state</Key><Value>\([a-z]*\)</Value>.*|\1|p'
}

name="$RUN-r$(printf '\xc3\xa9')sum$(printf '\xc3\xa9') 100%+~.txt"
req POST "$url/documents?name=$(urlenc "$name")" "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain; charset=utf-8' \
	--data-binary "@$work/one"
is "$HTTP_CODE" 201 "a create with a non-ASCII name"
id=$(jfield "$HTTP_BODY" id)
created=$(jfield "$HTTP_BODY" created_at)
install=$(sql "SELECT install_id FROM installation WHERE id = 1")
like "$install" '^[0-9a-f]{32}$' "the database keeps an installation id (32 hex)"
meta "$(blob_of "$id")" >"$work/m1"
is "$(field "$work/m1" bindery_installation)" "$install" "Get Blob Properties: the installation"
is "$(field "$work/m1" bindery_document)" "$id" "... the document's id"
is "$(field "$work/m1" bindery_version)" 1 "... version 1"
like "$(field "$work/m1" bindery_name)" '^[A-Za-z0-9._~%-]+$' "... the name in unreserved characters and %XX only"
is "$(pct_decode "$(field "$work/m1" bindery_name)")" "$name" "... which decode to the name"
is "$(pct_decode "$(field "$work/m1" bindery_owner)")" demo "... the owner"
is "$(pct_decode "$(field "$work/m1" bindery_content_type)")" "text/plain; charset=utf-8" "... the content type"
is "$(field "$work/m1" bindery_created)" "$created" "... the creation time the API answered"
is "$(field "$work/m1" size)" 3000 "... the size"
is "$(field "$work/m1" sha256)" "$(sha256sum "$work/one" | cut -d' ' -f1)" "... the SHA-256"

old=$(blob_of "$id")
old_etag=$("$blobtool" stat "$old" | sed -n 's/.* etag=//p')
old_sas=$("$blobtool" sas "$old" r 300)
req PUT "$url/documents/$id/content" "${CHAOS_AUTH[@]}" -H 'Content-Type: application/octet-stream' \
	--data-binary "@$work/two"
is "$HTTP_CODE" 200 "a replace"
# Deletes leave a mark: the blob a replace retired is tagged so at once.
is "$(state_tag "$old")" retired "the replaced blob is tagged retired right after the commit"
is "$("$blobtool" stat "$old" | sed -n 's/.* etag=//p')" "$old_etag" "... which leaves its ETag (a read pinned to it goes on)"
curl -sS -o "$work/old.out" "$old_sas"
is "$(sha256sum <"$work/old.out" | cut -d' ' -f1)" "$(sha256sum <"$work/one" | cut -d' ' -f1)" \
	"... and a link handed out before still reads its bytes"
meta "$(blob_of "$id")" >"$work/m2"
is "$(field "$work/m2" bindery_version)" "$(sql "SELECT version FROM documents WHERE id = $id")" "its blob names the version it committed (2)"
is "$(field "$work/m2" bindery_document)" "$id" "... the same document"
is "$(field "$work/m2" bindery_created)" "$created" "... created when the document was"
is "$(pct_decode "$(field "$work/m2" bindery_content_type)")" application/octet-stream "... the new content type"

TUS=("${CHAOS_AUTH[@]}" -H 'Tus-Resumable: 1.0.0')
req POST "$url/uploads" "${TUS[@]}" -H 'Upload-Length: 3000' -H 'Content-Length: 0' \
	-H "Upload-Metadata: filename $(printf %s "$RUN-t" | base64 -w0)"
req PATCH "$url$(header location)" "${TUS[@]}" -H 'Content-Type: application/offset+octet-stream' \
	-H 'Upload-Offset: 0' --data-binary "@$work/one"
is "$HTTP_CODE" 204 "a tus upload"
t=$(sql "SELECT id FROM documents WHERE name = '$RUN-t'")
meta "$(blob_of "$t")" >"$work/m3"
is "$(field "$work/m3" bindery_document)" "$t" "its block list names the document"
is "$(pct_decode "$(field "$work/m3" bindery_name)")" "$RUN-t" "... and its name"

last=$(blob_of "$id")
for d in "$id" "$t"; do req DELETE "$url/documents/$d" "${CHAOS_AUTH[@]}"; done
is "$HTTP_CODE" 204 "a delete"
is "$(state_tag "$last")" retired "the deleted document's blob is tagged retired right after the commit"
done_testing
