# Direct-upload helpers for shell tests (tests/e2e/direct*.sh).  Source after
# tap.sh, http.sh and chaos.sh (chaos_need_stack); needs $work, a scratch
# directory the test owns, and $blobtool.

# direct_create URL NAME SIZE [SHA256] [CURL-ARGS...]: POST /documents/direct
# (content_type application/x-test); sets ID, UPLOAD_URL, FINALIZE, EXPIRES
# and PUT_HEADERS (curl -H arguments, from the answer's headers object).
direct_create() {
	local url=$1 name=$2 size=$3 sha=${4:-}
	shift 4 2>/dev/null || shift $#
	if [ -n "$sha" ]; then
		jq -cn --arg n "$name" --argjson s "$size" --arg h "$sha" \
			'{name: $n, size: $s, content_type: "application/x-test", sha256: $h}' >"$work/req.json"
	else
		jq -cn --arg n "$name" --argjson s "$size" \
			'{name: $n, size: $s, content_type: "application/x-test"}' >"$work/req.json"
	fi
	req POST "$url/documents/direct" -H 'Content-Type: application/json' --data-binary "@$work/req.json" "$@"
	direct_read_answer "$HTTP_BODY"
}

# direct_read_answer JSON: ID, UPLOAD_URL, FINALIZE, EXPIRES, PUT_HEADERS of
# a create's answer (each empty when the answer has none, or is not JSON),
# read by one jq: one line each, then a line per header.
direct_read_answer() {
	local h
	ID='' UPLOAD_URL='' FINALIZE='' EXPIRES=''
	PUT_HEADERS=()
	{
		IFS= read -r ID
		IFS= read -r UPLOAD_URL
		IFS= read -r FINALIZE
		IFS= read -r EXPIRES
		while IFS= read -r h; do
			[ -n "$h" ] && PUT_HEADERS+=(-H "$h")
		done
	} < <(printf '%s' "$1" | jq -r '(.id // ""), (.upload_url // ""), (.finalize_url // ""), (.expires_at // ""),
		(.headers // {} | to_entries[] | "\(.key): \(.value)")' 2>/dev/null)
}

# direct_put FILE [URL] [CURL-ARGS...]: PUT FILE's bytes to the upload URL
# with the answer's headers; prints the status.
direct_put() {
	local file=$1 to=${2:-$UPLOAD_URL}
	shift 2 2>/dev/null || shift $#
	curl -s -o "$work/put.out" -w '%{http_code}' -X PUT "${PUT_HEADERS[@]}" "$@" \
		--data-binary "@$file" "$to"
}

# sas_call METHOD URL [CURL-ARGS...]: the status of one request with a SAS.
sas_call() {
	local method=$1 to=$2
	shift 2
	curl -s -o /dev/null -w '%{http_code}' -X "$method" "$@" "$to"
}

# The registry's view of a document and its blob.
blob_of() { sql "SELECT blob_name FROM documents WHERE id = $1"; }
blob_exists() { "$blobtool" stat "$1" >/dev/null 2>&1; }
etag_of() { "$blobtool" stat "$1" | sed -n 's/.* etag=//p'; }
rows_of() { sql "SELECT (SELECT COUNT(*) FROM documents WHERE blob_name = '$1') + (SELECT COUNT(*) FROM blobs WHERE name = '$1')"; }
# expire_intent BLOB: the intent's lease ends now (what an hour's wait would do).
expire_intent() { sql "UPDATE blobs SET expires_at = NOW(6) - INTERVAL 1 SECOND WHERE name = '$1'"; }
