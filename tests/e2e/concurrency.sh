#!/usr/bin/env bash
# Concurrency through lighttpd: 20 simultaneous creates of one name (one 201,
# nineteen 409, one registry row), then 8 clients x 30 mixed operations (50
# under --long, BINDERY_TEST_LONG) after which every acknowledged document is
# readable with exactly its bytes.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"
. "$here/../lib/db.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_TOKEN BINDERY_TEST_DB_SOCKET

url=$BINDERY_TEST_LIGHTTPD_URL
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
auth="Authorization: Bearer $BINDERY_TEST_TOKEN"
bytes="Content-Type: application/octet-stream"

# --- I5: N concurrent creates of one name ---
name="race-$$-$RANDOM"
head -c 200000 /dev/urandom >"$work/payload.bin"	# not race.*: those are the codes
for i in $(seq 1 20); do
	curl -s -o /dev/null -w '%{http_code}\n' -H "$auth" -H "$bytes" --data-binary "@$work/payload.bin" \
		"$url/documents?name=$name" >"$work/race.$i" &
done
wait
codes=$(cat "$work"/race.* | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
is "$(cat "$work"/race.* | grep -c '^201$')" 1 "20 racing creates: exactly one 201 ($codes)"
is "$(cat "$work"/race.* | grep -c '^409$')" 19 "... and nineteen 409"
is "$(sql "SELECT COUNT(*) FROM blobs b JOIN documents d ON d.id = b.document_id WHERE d.name = '$name'")" 1 \
	"... one registry row for the name"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name = '$name' AND status = 'ready'")" 1 "... one ready document"

# --- 8 clients x 30 (or 50) mixed operations ---
ops=30
[ -z "${BINDERY_TEST_LONG:-}" ] || ops=50
client() { # N: operations on this client's own documents; log acknowledged facts
	local n=$1 i op id code f alive=() log="$work/client.$1"
	RANDOM=$((1000 + n))
	for i in $(seq 1 "$ops"); do
		op=$((RANDOM % 10))
		f="$work/c$n"	# each operation overwrites the last one's files
		head -c $((RANDOM % 70000 + 1)) /dev/urandom >"$f"
		if [ ${#alive[@]} -eq 0 ] || [ $op -lt 4 ]; then
			code=$(curl -s -o "$f.out" -w '%{http_code}' -H "$auth" -H "$bytes" --data-binary "@$f" \
				"$url/documents?name=mix-$$-$n-$i")
			if [ "$code" = 201 ]; then
				id=$(jfield "$(<"$f.out")" id)
				alive+=("$id")
				echo "put $id $(sha "$f")" >>"$log"
			else
				echo "err create $code" >>"$log"
			fi
		elif [ $op -lt 6 ]; then
			id=${alive[$((RANDOM % ${#alive[@]}))]}
			code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "$auth" -H "$bytes" --data-binary "@$f" \
				"$url/documents/$id/content")
			if [ "$code" = 200 ]; then echo "put $id $(sha "$f")" >>"$log"
			else echo "err replace $code" >>"$log"; fi
		elif [ $op -lt 7 ]; then
			local k=$((RANDOM % ${#alive[@]}))
			id=${alive[$k]}
			code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "$auth" "$url/documents/$id")
			if [ "$code" = 204 ]; then
				echo "del $id" >>"$log"
				alive=("${alive[@]:0:$k}" "${alive[@]:$((k + 1))}")
			else
				echo "err delete $code" >>"$log"
			fi
		else
			id=${alive[$((RANDOM % ${#alive[@]}))]}
			code=$(curl -s -o "$f.dl" -w '%{http_code}' "$url/documents/$id/content")
			echo "get $id $code $(sha "$f.dl")" >>"$log"
		fi
	done
}
for n in $(seq 1 8); do client "$n" & done
wait

cat "$work"/client.* >"$work/all"
is "$(grep -c '^err' "$work/all")" 0 "no operation failed ($(grep '^err' "$work/all" | sort | uniq -c | tr '\n' ' '))"
# What the clients were told, against what the database holds: every id a
# 201 or 200 acknowledged, less the ones a 204 deleted, is one ready row.
created=$(awk '$1 == "put" { print $2 }' "$work/all" | sort -u | wc -l)
deleted=$(grep -c '^del ' "$work/all")
ok '[ "$created" -gt 0 ] && [ "$deleted" -gt 0 ]' "the mix created ($created) and deleted ($deleted) documents"
is "$(sql "SELECT COUNT(*) FROM documents WHERE name LIKE 'mix-$$-%' AND status = 'ready'")" \
	"$((created - deleted))" "the database holds exactly the acknowledged documents, less the deleted ones"
# Each download during the run saw exactly the bytes last acknowledged for it.
is "$(awk '$1 == "put" { want[$2] = $3 } $1 == "get" && ($3 != 200 || $4 != want[$2]) { bad++ }
	END { print bad + 0 }' "$work"/client.1 "$work"/client.2 "$work"/client.3 "$work"/client.4 \
	"$work"/client.5 "$work"/client.6 "$work"/client.7 "$work"/client.8)" 0 "downloads during the run saw the acknowledged bytes"
# What each client last acknowledged is what a reader must see.
awk '$1 == "put" { want[$2] = $3 } $1 == "del" { want[$2] = "gone" }
     END { for (id in want) print id, want[id] }' "$work/all" >"$work/final"
# One curl reads them all back over one connection, each into a file of
# its own, and one sha256sum hashes the files (a curl and a sha256sum per
# document cost more CPU than the rest of the check).
mkdir "$work/v"
args=()
while read -r id want; do
	args+=(-o "$work/v/$id" "$url/documents/$id/content")
done <"$work/final"
curl -s -w '%{http_code}\n' "${args[@]}" >"$work/v.codes"
declare -A got_sha=()
while read -r h f; do got_sha[${f##*/}]=$h; done < <(cd "$work/v" && sha256sum -- *)
checked=0 wrong=0
while read -r id want && read -r got <&3; do
	if [ "$want" = gone ]; then
		[ "$got" = 404 ] || { wrong=$((wrong + 1)); diag "document $id: deleted but $got"; }
	else
		[ "$got" = 200 ] && [ "${got_sha[$id]:-}" = "$want" ] ||
			{ wrong=$((wrong + 1)); diag "document $id: $got, bytes differ"; }
	fi
	checked=$((checked + 1))
done <"$work/final" 3<"$work/v.codes"
ok '[ "$checked" -gt 20 ]' "checked $checked acknowledged documents"
is "$wrong" 0 "every acknowledged document reads back exactly (or is gone after its delete)"
is "$(sql "SELECT COUNT(*) FROM documents d JOIN blobs b ON b.name = d.blob_name WHERE d.name LIKE 'mix-$$-%' AND (d.status <> 'ready' OR b.state <> 'committed')")" 0 \
	"no ready document points at a blob that is not committed"
done_testing
