# tests/lib/chaos.sh — shared helpers for the crash matrix, fault and chaos
# tests.  Sourced after tests/lib/tap.sh; brings tests/lib/db.sh (sql,
# sql_quote) with it.  Everything here looks at the
# services DIRECTLY: MariaDB through the mariadb client, Azurite through curl
# with our own Shared Key signature (openssl), never through bindery's code,
# so a bug in bindery's blob client or signer cannot hide a lost blob.

# shellcheck source=tests/lib/db.sh
. "$(dirname "${BASH_SOURCE[0]}")/db.sh"

# chaos_need_stack: skip_all unless the test stack's variables are there
# (a failure under ./dev test, see missing in tests/lib/tap.sh).
chaos_need_stack() {
	need_stack BINDERY_CONFIG BINDERY_TEST_BLOB_ENDPOINT BINDERY_TEST_BLOB_ACCOUNT \
		BINDERY_TEST_BLOB_KEY BINDERY_TEST_DB_SOCKET BINDERY_TEST_DB_NAME \
		BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_TOKEN BINDERY_TEST_VAR
	command -v openssl >/dev/null || missing "openssl is needed to sign Azurite requests"
	command -v mariadb >/dev/null || missing "the mariadb client is needed"
	CHAOS_BIN=${BINDERY_TEST_BIN:-${top_builddir:+$top_builddir/app}}
	[ -x "$CHAOS_BIN/bindery" ] || missing "bindery CLI not found (BINDERY_TEST_BIN)"
	CHAOS_CONTAINER=$(sed -n 's/^container *= *//p' "$BINDERY_CONFIG" | tail -n 1)
	CHAOS_CONTAINER=${CHAOS_CONTAINER:-documents}
	CHAOS_AUTH=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
}

# chaos_need_private_lighttpd: chaos_need_stack, and what a test that runs
# a lighttpd of its own (stack_private_lighttpd; source tests/lib/stack.sh
# first) in front of the test stack's MariaDB and Azurite needs: the
# responder, lighttpd, both services running.  Runs stack_init on
# $BINDERY_TEST_VAR.  A failure under ./dev test (missing).
chaos_need_private_lighttpd() {
	chaos_need_stack
	need_stack BINDERY_TEST_BIN
	[ -x "$BINDERY_TEST_BIN/bindery.fcgi" ] || missing "$BINDERY_TEST_BIN/bindery.fcgi was not built"
	[ -x "$(stack_lighttpd_bin)" ] || missing "lighttpd is not installed"
	stack_init "$BINDERY_TEST_VAR"
	stack_alive mariadb && stack_alive azurite || missing "MariaDB or Azurite of the test stack is not running"
}

# chaos_sweep CONF LOG [ENV=VALUE...]: one `bindery -v sweep --older-than 0
# --force` with config CONF and no failpoints armed (ENV=VALUE may arm some),
# its output (-v: always at least its summary line) and then its exit
# status appended to LOG, so a failing test can show what each run said.
# Sets SWEEP_RC and returns it.
chaos_sweep() {
	local conf=$1 log=$2
	shift 2
	env BINDERY_LOG_STDERR=1 BINDERY_FAILPOINTS_FILE=/dev/null "$@" \
		"$CHAOS_BIN/bindery" -v -c "$conf" sweep --older-than 0 --force >>"$log" 2>&1
	SWEEP_RC=$?
	printf 'sweep exit %s at %s\n' "$SWEEP_RC" "$(date -u +%H:%M:%S.%N)" >>"$log"
	return "$SWEEP_RC"
}

# _az_keyhex: the account key in hex in _AZ_KEYHEX, decoded once per shell
# (a crash-matrix run signs hundreds of requests); call it outside $(...).
_az_keyhex() {
	[ "${_AZ_KEYHEX_OF:-}" = "$BINDERY_TEST_BLOB_KEY" ] && return 0
	_AZ_KEYHEX=$(printf '%s' "$BINDERY_TEST_BLOB_KEY" | openssl base64 -d -A | xxd -p -c 256)
	_AZ_KEYHEX_OF=$BINDERY_TEST_BLOB_KEY
}
[ -z "${BINDERY_TEST_BLOB_KEY:-}" ] || _az_keyhex

# _az_sign VERB RESOURCE-PATH CANON-QUERY DATE [CONTENT-LENGTH] [EXTRA-CANON-HEADERS]
# Shared Key string-to-sign (Blob service, version 2015-02-21 and later),
# signed into _AZ_SIG.  One program a request (openssl, reading the string
# from a file of this shell's), no pipeline or subshell around it: a fork
# costs 3-4 ms of CPU here, and a crash-matrix run signs hundreds.
_az_sign() {
	local verb=$1 path=$2 cq=$3 date=$4 clen=${5:-} xh=${6:-} sts f
	printf -v sts '%s\n\n\n%s\n\n\n\n\n\n\n\n\n%sx-ms-date:%s\nx-ms-version:2021-12-02\n/%s%s%s' \
		"$verb" "$clen" "$xh" "$date" "$BINDERY_TEST_BLOB_ACCOUNT" "$path" "$cq"
	_az_keyhex
	# The lane's tmp/ is this run's own (as req's body file); elsewhere a
	# mktemp, not a name anyone could plant in /tmp.
	if [ -d "${BINDERY_TEST_VAR:-/nonexistent}/tmp" ]; then
		f=$BINDERY_TEST_VAR/tmp/az-sts.$BASHPID
	else
		f=$(mktemp) || return 1
	fi
	printf '%s' "$sts" >"$f"
	sts=$(openssl dgst -sha256 -mac HMAC -macopt "hexkey:$_AZ_KEYHEX" -r "$f")
	if [ -d "${BINDERY_TEST_VAR:-/nonexistent}/tmp" ]; then : >"$f"; else rm -f "$f"; fi
	_az_hex_base64 "${sts%% *}"
}

# _az_hex_base64 HEX: the bytes HEX spells, in base64, into _AZ_SIG (in the
# shell: one program fewer for each of the hundreds of requests a run signs).
_az_hex_base64() {
	local hex=$1 out='' i n abc=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/
	for ((i = 0; i + 6 <= ${#hex}; i += 6)); do
		n=$((16#${hex:i:6}))
		out+=${abc:n>>18&63:1}${abc:n>>12&63:1}${abc:n>>6&63:1}${abc:n&63:1}
	done
	case $((${#hex} - i)) in
	2) n=$((16#${hex:i:2} << 16)) out+=${abc:n>>18&63:1}${abc:n>>12&63:1}== ;;
	4) n=$((16#${hex:i:4} << 8)) out+=${abc:n>>18&63:1}${abc:n>>12&63:1}${abc:n>>6&63:1}= ;;
	esac
	_AZ_SIG=$out
}

# az_curl VERB BLOB-OR-EMPTY QUERY CANON-QUERY [CURL-ARGS...]: one signed
# request to the container (BLOB empty) or to a blob.  QUERY is the URL
# query without '?'; CANON-QUERY its canonicalized form ("\nname:value"...).
az_curl() {
	local verb=$1 blob=$2 q=$3 cq=$4 date path url sig
	shift 4
	LC_ALL=C TZ=GMT printf -v date '%(%a, %d %b %Y %H:%M:%S GMT)T' -1
	path=${BINDERY_TEST_BLOB_ENDPOINT#*://*/}	# path-style: account/...
	case $BINDERY_TEST_BLOB_ENDPOINT in
	http://127.0.0.1:*/* | http://localhost:*/*) path="/$path/$CHAOS_CONTAINER" ;;
	*) path="/$CHAOS_CONTAINER" ;;
	esac
	[ -n "$blob" ] && path="$path/$blob"
	url="$BINDERY_TEST_BLOB_ENDPOINT/$CHAOS_CONTAINER${blob:+/$blob}${q:+?$q}"
	_az_keyhex
	printf -v cq '%b' "$cq"
	_az_sign "$verb" "$path" "$cq" "$date"
	sig=$_AZ_SIG
	curl -s -m 30 -X "$verb" -H "x-ms-date: $date" -H 'x-ms-version: 2021-12-02' \
		-H "Authorization: SharedKey $BINDERY_TEST_BLOB_ACCOUNT:$sig" "$@" "$url"
}

_AZ_MARKER_RE='<NextMarker>([^<]*)</NextMarker>'

# az_list [PREFIX]: one line per blob in the container (committed and
# staged-only), or only those whose names begin with PREFIX:
#   NAME SIZE STATE-TAG SHA256-METADATA
# STATE-TAG is "-" without a state tag; a staged-only name shows "uncommitted".
# Follows NextMarker.  Fails (status 1) when the listing did not succeed.
# To look at one blob, give its name as PREFIX (and match the name): late
# in a run the lane's container holds every earlier test's blobs, and
# listing them all costs storage and this shell far more than the one name.
az_list() {
	local marker='' xml q cq out=0 prefix=${1:-}
	case $prefix in
	*[!A-Za-z0-9/._-]*) return 1 ;;	# a name bindery makes needs no escaping
	esac
	while :; do
		q="restype=container&comp=list&include=metadata,tags,uncommittedblobs&maxresults=5000"
		cq='\ncomp:list\ninclude:metadata,tags,uncommittedblobs\nmaxresults:5000'
		if [ -n "$marker" ]; then
			q="$q&marker=$marker"
			cq="$cq\nmarker:$marker"
		fi
		if [ -n "$prefix" ]; then
			q="$q&prefix=$prefix"
			cq="$cq\nprefix:$prefix"
		fi
		cq="$cq\nrestype:container"
		xml=$(az_curl GET '' "$q" "$cq" -f) || return 1
		case $xml in *'<EnumerationResults'*) ;; *) return 1 ;; esac
		printf '%s\n' "$xml" | awk 'BEGIN { RS = "<Blob>" } NR > 1 {
			sub(/<\/Blob>.*/, "")
			name = f("Name"); size = f("Content-Length"); sha = f("sha256"); st = "-"
			if (match($0, /<Tag><Key>state<\/Key><Value>[^<]*</)) {
				st = substr($0, RSTART, RLENGTH - 1); sub(/.*<Value>/, "", st)
			}
			if ($0 !~ /<BlobType>/) st = "uncommitted"
			printf "%s %s %s %s\n", name, size == "" ? 0 : size, st, sha == "" ? "-" : sha
		}
		function f(tag,   v) {
			if (!match($0, "<" tag ">[^<]*</" tag ">")) return ""
			v = substr($0, RSTART, RLENGTH); sub("^<" tag ">", "", v); sub("</" tag ">$", "", v)
			return v
		}'
		# (In the shell, not through sed: the crash matrix lists a dozen times a cell.)
		marker=
		[[ $xml =~ $_AZ_MARKER_RE ]] && marker=${BASH_REMATCH[1]}
		[ -n "$marker" ] || break
	done
	return $out
}

# az_remove_prefix PREFIX: delete every blob whose name begins with PREFIX
# from the lane's container (BINDERY_CONFIG's).  For a test that writes
# under a prefix of its own with a database of its own: once it drops that
# database, its blobs have no rows, and the next whole-container audit in
# the lane (chaos.sh's, events_chaos.sh's) would report them as orphans.
# PREFIX must end in '-' or '/', so it cannot be the start of another
# test's names.  Status 1 when the listing failed or a delete was refused.
az_remove_prefix() {
	local prefix=$1 name rest rc=0 names code
	case $prefix in
	?*[-/]) ;;
	*) echo "az_remove_prefix: '$prefix' does not end in - or /" >&2; return 1 ;;
	esac
	[ -n "${CHAOS_CONTAINER:-}" ] || CHAOS_CONTAINER=$(sed -n 's/^container *= *//p' "$BINDERY_CONFIG" | tail -n 1)
	names=$(az_list "$prefix") || return 1
	while read -r name rest; do
		[ -n "$name" ] || continue
		# 404: gone meanwhile, or only staged blocks (Azurite lists those
		# names too; storage drops them after a week).
		code=$(az_curl DELETE "$name" '' '' -o /dev/null -w '%{http_code}')
		case $code in 202 | 404) ;; *) rc=1 ;; esac
	done <<<"$names"
	return $rc
}

# az_remove_checked PREFIX: at the end of such a test, before its database
# goes at exit: az_remove_prefix, and two checks that it worked and left
# nothing under PREFIX.
az_remove_checked() {
	az_remove_prefix "$1"
	ok $? "its blobs removed from the lane's container"
	is "$(az_list "$1")" "" "... none left"
}

# az_sha256 BLOB: SHA-256 of the committed blob's bytes as the service
# returns them ("missing" when it answers 400 or more, or not at all).
# (The bytes go straight into sha256sum and curl's status comes back
# through PIPESTATUS: no temporary file, three programs fewer a call, and a
# crash-matrix cell hashes several.  -f: any answer from 400 on fails.)
az_sha256() {
	local out
	if out=$(az_curl GET "$1" '' '' -f | sha256sum; exit "${PIPESTATUS[0]}"); then
		printf '%s\n' "${out%% *}"
	else
		echo missing
	fi
}

# az_staged BLOB: how many uncommitted (staged) blocks BLOB has: 0 when none
# or no such name, "?" when the service did not answer.  (Azurite lists a
# name that has only staged blocks like a committed blob, so az_list alone
# cannot tell them apart.)
az_staged() {
	local tmp code
	tmp=$(mktemp)
	code=$(az_curl GET "$1" 'blocklisttype=uncommitted&comp=blocklist' '\nblocklisttype:uncommitted\ncomp:blocklist' \
		-o "$tmp" -w '%{http_code}')
	case $code in
	200) tr -d '\r\n' <"$tmp" | grep -o '<UncommittedBlocks>.*</UncommittedBlocks>' | grep -o '<Block>' | wc -l ;;
	404) echo 0 ;;
	*) echo '?' ;;
	esac
	rm -f "$tmp"
}

# chaos_verify PREFIX BEFORE-LIST [IDS]: the invariants for the documents
# named PREFIX* (plus the ids IDS, comma-separated, for deleted ones) and for
# every blob that is in the container now but not in BEFORE-LIST (names, one
# a line, sorted).  Prints one line per violation; nothing when all is well.
#   - no document still pending, no registry row not committed (stuck intent
#     or undrained outbox)
#   - every document's blob listed, tagged committed, its bytes' SHA-256 the
#     row's (dangling / lost)
#   - every new blob referenced by a ready document (orphan)
chaos_verify() {
	local prefix=$1 before=$2 ids=${3:-} now id f sha listed name n
	ids=$( { sql "SELECT id FROM documents WHERE name LIKE '$prefix%'"; printf '%s\n' ${ids//,/ }; } |
		sort -u | sed '/^$/d' | tr '\n' ',' | sed -e 's/,$//')
	ids=${ids:-0}
	now=$(mktemp)
	az_list >"$now.full" || { echo "cannot list Azurite"; rm -f "$now" "$now.full"; return; }
	cut -d' ' -f1 "$now.full" | sort >"$now"
	sql "SELECT CONCAT('stuck: document ', id, ' ', name, ' is ', status) FROM documents
	     WHERE id IN ($ids) AND status <> 'ready'"
	sql "SELECT CONCAT('stuck: registry row ', name, ' is ', state) FROM blobs
	     WHERE document_id IN ($ids) AND state <> 'committed'"
	sql "SELECT CONCAT('registry row ', b.name, ' committed without its document') FROM blobs b
	     LEFT JOIN documents d ON d.blob_name = b.name AND d.status = 'ready'
	     WHERE b.document_id IN ($ids) AND b.state = 'committed' AND d.id IS NULL"
	# A direct upload's metadata is its client's (none, or anything): its
	# bytes, hashed below, are what counts.
	while IFS=$'\t' read -r id f sha route; do
		[ -n "$id" ] || continue
		listed=$(awk -v n="$f" '$1 == n { print $3 " " $4 }' "$now.full")
		[ "$route" = direct ] && listed=${listed%% *}" $sha"
		[ "$listed" = "committed $sha" ] || echo "dangling: document $id: blob $f is '${listed:-missing}'"
		[ "$(az_sha256 "$f")" = "$sha" ] || echo "document $id: the blob's bytes do not match sha256"
	done < <(sql "SELECT d.id, d.blob_name, d.sha256, COALESCE(b.route, 'server') FROM documents d
	              LEFT JOIN blobs b ON b.name = d.blob_name WHERE d.id IN ($ids) AND d.status = 'ready'")
	while read -r name; do
		[ -n "$name" ] || continue
		sql_to n "SELECT COUNT(*) FROM documents WHERE blob_name = '$name' AND status = 'ready'"
		[ "$n" = 1 ] || echo "orphan: blob $name ($(awk -v n="$name" '$1 == n { print $3 }' "$now.full"); registry: $(sql "SELECT state FROM blobs WHERE name = '$name'"))"
	done < <(comm -13 "$before" "$now")
	sql "SELECT CONCAT('two documents named ', name) FROM documents WHERE name LIKE '$prefix%'
	     GROUP BY name HAVING COUNT(*) > 1"
	rm -f "$now" "$now.full"
}

# chaos_explain AUDIT-LOG: for each blob an audit finding names (at most 5),
# what the test stack's logs say about it: Azurite's requests for that name
# and every log line of the responders, the sweeps and this run's work
# directory that mention it, so a failure in CI can be traced afterwards.
chaos_explain() {
	local name f
	for name in $(grep -oE '\b[0-9a-f]{32}\b' "$1" | sort -u | head -n 5); do
		echo "blob $name:"
		for f in "$BINDERY_TEST_VAR"/log/azurite.log "$BINDERY_TEST_VAR"/log/*error.log \
			"$BINDERY_TEST_VAR"/*/log/*error.log "${CHAOS_WORK:-/nonexistent}"/*.log; do
			[ -f "$f" ] || continue
			grep -F "$name" "$f" | tail -n 12 | sed -e "s|^|${f##*/}: |"
		done
		echo "registry: $(sql "SELECT CONCAT_WS(' ', state, document_id, COALESCE(holder, '-'))
		                       FROM blobs WHERE name = '$name'")"
	done
}

# chaos_audit CONF LOG DESC: one check, DESC, that `bindery audit` with
# CONF exits 0 (a failing one, even a broken --help, is a failure); on a
# failure its findings and chaos_explain's history of each named blob
# follow as TAP comments.  Its output stays in LOG.
chaos_audit() {
	local conf=$1 log=$2 rc
	BINDERY_LOG_STDERR=1 "$CHAOS_BIN/bindery" -c "$conf" audit >"$log" 2>&1
	rc=$?
	ok "$rc" "$3"
	if [ "$rc" != 0 ]; then
		sed -e 's/^/#   audit: /' "$log" | head -n 20
		chaos_explain "$log" | sed -e 's/^/#   history: /'
	fi
}

# chaos_snapshot FILE: the container's blob names now (for chaos_verify).
chaos_snapshot() {
	az_list | cut -d' ' -f1 | sort >"$1"
}

# chaos_failpoint_responder FP-FILE: make sure a lighttpd whose bindery.fcgi
# reads FP-FILE answers; sets CHAOS_URL (the stack's lighttpd when it passes
# BINDERY_FAILPOINTS_FILE=FP-FILE to the responder, else a private lighttpd
# started here, CHAOS_PRIVATE_LIGHTTPD=1; stop it with chaos_stop_private)
# and CHAOS_LIGHTTPD_PID (the server whose children are the workers).
chaos_failpoint_responder() {
	local fp=$1 i
	CHAOS_URL=$BINDERY_TEST_LIGHTTPD_URL CHAOS_PRIVATE_LIGHTTPD=
	_chaos_probe() {
		printf 'create.after_intent error once\n' >"$fp"
		curl -s -o /dev/null -m 30 "${CHAOS_AUTH[@]}" -H 'Content-Type: text/plain' \
			--data-binary probe "$CHAOS_URL/documents?name=chaos-probe-$$-$RANDOM"
		! grep -q '^create.after_intent ' "$fp"
	}
	. "$top/tests/lib/stack.sh"
	if _chaos_probe; then
		stack_init "$BINDERY_TEST_VAR"
	else
		BINDERY_FAILPOINTS_FILE=$fp stack_private_lighttpd "$BINDERY_TEST_VAR/chaos-lighttpd" \
			lighttpd.conf "$BINDERY_CONFIG" "$CHAOS_BIN" 18190 || return 1
		CHAOS_PRIVATE_LIGHTTPD=1
		CHAOS_URL=http://127.0.0.1:$HTTP_PORT
		for ((i = 0; i < 50; i++)); do
			[ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$CHAOS_URL/healthz")" = 200 ] && break
			sleep 0.1
		done
		_chaos_probe || return 1
	fi
	: >"$fp"
	CHAOS_LIGHTTPD_PID=$(stack_pid lighttpd)
}

chaos_stop_private() {
	if [ -n "${CHAOS_PRIVATE_LIGHTTPD:-}" ]; then
		stack_init "$BINDERY_TEST_VAR/chaos-lighttpd"
		stack_lighttpd_stop
	fi
	CHAOS_PRIVATE_LIGHTTPD=
}

# ---- the chaos run (tests/chaos/chaos.sh, tests/cluster/chaos_node_kill.sh) ----
# The caller sets, before chaos_run:
#   CHAOS_WORK           a private directory (ledgers, events, the chaos log)
#   CHAOS_RUN            this run's name prefix
#   CHAOS_SEED           the fixed seed
#   CHAOS_URLS           an array of base URLs; each operation picks one
#   CHAOS_FP             the failpoints file every responder reads
#   CHAOS_LIGHTTPD_PIDS  the lighttpds (or pool masters) whose FastCGI
#                        workers may be killed
# A file $CHAOS_WORK/halt ends every client after its current operation
# (a run that lasts as long as something else goes on beside it).

# chaos_client C N: client C's N operations.  Its ledger
# ($CHAOS_WORK/ledger.C, one line per document it ever touched):
#   NAME ID EXISTS SHA...
# EXISTS is yes (acknowledged), no (acknowledged delete, or never created) or
# maybe (a create or delete without an answer); SHA... every content the
# document may hold (more than one after an unanswered replace).
chaos_client() {
	local c=$1 n=$2 i op name id code body key f k r url work=$CHAOS_WORK fsha
	local -A ids exists shas
	local names=()
	RANDOM=$((CHAOS_SEED * 100 + c))
	for ((i = 0; i < n; i++)); do
		[ -e "$work/halt" ] && break
		r=$((RANDOM % 100))
		url=${CHAOS_URLS[0]}
		[ ${#CHAOS_URLS[@]} -gt 1 ] && url=${CHAOS_URLS[RANDOM % ${#CHAOS_URLS[@]}]}
		f=$work/c$c.body
		head -c $((1 + RANDOM % 20000)) /dev/urandom >"$f"
		if [ ${#names[@]} -eq 0 ] || [ $r -lt 35 ]; then op=create
		elif [ $r -lt 45 ]; then op=idem
		elif [ $r -lt 65 ]; then op=replace
		elif [ $r -lt 78 ]; then op=delete
		else op=download
		fi
		case $op in
		create | idem)
			name="$CHAOS_RUN-c$c-$i"
			names+=("$name")
			key=
			[ $op = idem ] && key="k-$name"
			# idem: the same request twice; a second answer never names
			# another document than the first
			k=''
			sha_to fsha "$f"
			for r in 1 2; do
				code=$(curl -s -m 60 -o "$work/c$c.out" -w '%{http_code}' "${CHAOS_AUTH[@]}" \
					${key:+-H "Idempotency-Key: $key"} -H 'Content-Type: application/x-chaos' \
					--data-binary "@$f" "$url/documents?name=$name")
				[ -n "$key" ] || break
				if [ "$code" = 201 ]; then
					IFS= read -r -d '' body <"$work/c$c.out"
					id=$(jfield "$body" id)
					[ -n "$k" ] && [ "$k" != "$id" ] &&
						echo "violation: $name: one Idempotency-Key, two documents ($k, $id)" >>"$work/violations"
					k=$id
				fi
				echo "op idem-try $code" >>"$work/events"
			done
			[ -n "$k" ] && [ "$code" != 201 ] && { code=201; printf '{"id":"%s","sha256":"%s"}' "$k" "$fsha" >"$work/c$c.out"; }
			shas[$name]=$fsha
			if [ "$code" = 201 ]; then
				IFS= read -r -d '' body <"$work/c$c.out"
				ids[$name]=$(jfield "$body" id)
				exists[$name]=yes
				echo ack >>"$work/events"
				[ "$(jfield "$body" sha256)" = "${shas[$name]}" ] ||
					echo "violation: $name acknowledged with another sha256" >>"$work/violations"
			else
				exists[$name]=maybe
			fi ;;
		replace | delete | download)
			name=${names[RANDOM % ${#names[@]}]}
			id=${ids[$name]:-}
			[ -n "$id" ] || { echo skip >>"$work/events"; continue; }
			[ "${exists[$name]}" = no ] && { echo skip >>"$work/events"; continue; }
			case $op in
			replace)
				code=$(curl -s -m 60 -o "$work/c$c.out" -w '%{http_code}' "${CHAOS_AUTH[@]}" -X PUT \
					-H 'Content-Type: application/x-chaos' --data-binary "@$f" "$url/documents/$id/content")
				case $code in
				200) sha_to fsha "$f"; shas[$name]=$fsha exists[$name]=yes; echo ack >>"$work/events" ;;
				404) [ "${exists[$name]}" = maybe ] && exists[$name]=no ;;
				*) sha_to fsha "$f"; shas[$name]="${shas[$name]} $fsha" ;;
				esac ;;
			delete)
				code=$(curl -s -m 60 -o /dev/null -w '%{http_code}' "${CHAOS_AUTH[@]}" -X DELETE "$url/documents/$id")
				case $code in
				204 | 404) exists[$name]=no ;;
				*) exists[$name]=maybe ;;
				esac ;;
			download)
				code=$(curl -s -m 60 -o "$work/c$c.dl" -w '%{http_code}' "$url/documents/$id/content")
				if [ "$code" = 200 ]; then
					sha_to k "$work/c$c.dl"
					case " ${shas[$name]} " in
					*" $k "*) echo verified-live >>"$work/events" ;;
					*) echo "violation: $name (id $id) served bytes it never held" >>"$work/violations" ;;
					esac
				elif [ "$code" = 404 ] && [ "${exists[$name]}" = yes ]; then
					echo "violation: $name (id $id) acknowledged, but 404" >>"$work/violations"
				fi ;;
			esac ;;
		esac
		echo "op $op $code" >>"$work/events"
	done
	for name in "${names[@]}"; do
		printf '%s %s %s %s\n' "$name" "${ids[$name]:-0}" "${exists[$name]}" "${shas[$name]}"
	done >"$work/ledger.$c"
}

# The points the controller arms, "exit" (a crash) or "error"/"sleep".
CHAOS_POINTS=(create.after_intent create.after_upload create.after_tag create.after_ready
	replace.after_intent replace.after_upload replace.after_tag replace.after_commit
	delete.after_commit resume.after_claim compensate.before_delete)

# chaos_workers: the FastCGI workers (children running bindery.fcgi) of
# the lighttpds and pool masters in CHAOS_LIGHTTPD_PIDS.
chaos_workers() { # [PARENT]: only that one's
	local l p
	for l in ${1:-$CHAOS_LIGHTTPD_PIDS}; do
		for p in $(ps -o pid= --ppid "$l" 2>/dev/null); do
			case $(readlink "/proc/$p/exe" 2>/dev/null) in */bindery.fcgi) echo "$p" ;; esac
		done
	done
}

# chaos_controller: until $CHAOS_WORK/stop exists, arm a failpoint (exit,
# error or sleep) now and then, or kill -9 a FastCGI worker; each action a
# line in $CHAOS_WORK/chaos.
chaos_controller() {
	local r p action pids waited=0 work=$CHAOS_WORK fp=$CHAOS_FP kills=0 rounds=0
	local -a parents=($CHAOS_LIGHTTPD_PIDS)
	RANDOM=$((CHAOS_SEED * 100 + 99))
	while [ ! -e "$work/stop" ]; do
		sleep 0.$((1 + RANDOM % 3))
		rounds=$((rounds + 1))
		# A worker of every server is killed early on, whatever the
		# dice say (one loaded run rolled no kill in 53 s): rounds 4, 8,
		# ..., while requests are in flight.
		# (Not while a point is armed: one that never fires is taken back
		# as the log's last line.)
		if [ $kills -lt ${#parents[@]} ] && [ $((rounds % 4)) = 0 ] && ! grep -q . "$fp" 2>/dev/null; then
			chaos_kill_one "${parents[${#parents[@]} - 1 - kills % ${#parents[@]}]}" && kills=$((kills + 1))
			continue
		fi
		# Give an armed point a few rounds to fire, then arm another
		# (resume.after_claim and compensate.before_delete are rare paths).
		if grep -q . "$fp" 2>/dev/null; then
			waited=$((waited + 1))
			[ $waited -lt 8 ] && continue
			: >"$fp"
			sed -i '$d' "$work/chaos"	# it never fired: do not count it
		fi
		waited=0
		r=$((RANDOM % 100))
		if [ $r -lt 30 ]; then
			p=${CHAOS_POINTS[RANDOM % ${#CHAOS_POINTS[@]}]}
			printf '%s exit once\n' "$p" >"$fp"
			echo "crash-armed $p" >>"$work/chaos"
		elif [ $r -lt 50 ]; then
			p=${CHAOS_POINTS[RANDOM % ${#CHAOS_POINTS[@]}]}
			action=error
			[ $((RANDOM % 3)) = 0 ] && action=sleep:300
			printf '%s %s once\n' "$p" "$action" >"$fp"
			echo "fault-armed $p $action" >>"$work/chaos"
		elif [ $r -lt 60 ] && [ ${#parents[@]} -gt 0 ]; then
			# Each server in turn, the last named first.
			chaos_kill_one "${parents[${#parents[@]} - 1 - kills % ${#parents[@]}]}"
			kills=$((kills + 1))
		fi
	done
}

# chaos_kill_one PARENT: kill -9 one of PARENT's workers, at random; its
# line in $CHAOS_WORK/chaos names the worker's parent (the server or pool
# whose worker it was).  False when PARENT had none.
chaos_kill_one() {
	local p parent pids=($(chaos_workers "$1"))
	[ ${#pids[@]} -gt 0 ] || return 1
	p=${pids[RANDOM % ${#pids[@]}]}
	parent=$(ps -o ppid= -p "$p" 2>/dev/null)
	kill -9 "$p" 2>/dev/null || return 1
	echo "kill $p ${parent// /}" >>"$CHAOS_WORK/chaos"
}

# chaos_run CLIENTS OPS: the controller and CLIENTS clients sharing OPS
# operations, until the clients are done (or halted).  Sets CHAOS_CRASHES
# (crash points that fired plus kills), CHAOS_KILLS, CHAOS_FAULTS and
# CHAOS_SECONDS.
chaos_run() {
	local clients=$1 ops=$2 work=$CHAOS_WORK cpid c pids=() left unfired=0 armed_crash armed_fault t0=$SECONDS
	: >"$work/events"; : >"$work/violations"; : >"$work/chaos"
	rm -f "$work/stop"
	chaos_controller &
	cpid=$!
	for ((c = 0; c < clients; c++)); do
		chaos_client "$c" $(((ops + clients - 1) / clients)) &
		pids+=($!)
	done
	wait "${pids[@]}"
	touch "$work/stop"
	wait "$cpid"
	left=$(cat "$CHAOS_FP")
	: >"$CHAOS_FP"
	# How many armed points fired: a "once" line is gone when it fired.
	armed_crash=$(grep -c '^crash-armed' "$work/chaos")
	armed_fault=$(grep -c '^fault-armed' "$work/chaos")
	CHAOS_KILLS=$(grep -c '^kill' "$work/chaos")
	[ -n "$left" ] && unfired=1
	case $(tail -n 1 "$work/chaos") in
	crash-armed*) CHAOS_CRASHES=$((armed_crash - unfired + CHAOS_KILLS)); CHAOS_FAULTS=$armed_fault ;;
	fault-armed*) CHAOS_CRASHES=$((armed_crash + CHAOS_KILLS)); CHAOS_FAULTS=$((armed_fault - unfired)) ;;
	*) CHAOS_CRASHES=$((armed_crash + CHAOS_KILLS)); CHAOS_FAULTS=$armed_fault ;;
	esac
	CHAOS_SECONDS=$((SECONDS - t0))
}

# chaos_check CLI-CONF BEFORE-LIST: after chaos_run, one sweep (the run's
# outbox rows made due first), then every ledger line read back through
# EVERY URL of CHAOS_URLS (the SHA-256 of the bytes each serves, from a
# file), chaos_verify and `bindery audit`.  Four TAP results: the sweep
# exits 0, the audit is clean, no violation, every acknowledged document
# verified.  Sets CHAOS_ACKED, CHAOS_VERIFIED, CHAOS_VIOLATIONS, CHAOS_OPS_DONE.
chaos_check() {
	local conf=$1 before=$2 work=$CHAOS_WORK ids rc name id ex shas row did url vcode got good problems qname
	ids=$(cat "$work"/ledger.* | awk '$2 != 0 { print $2 }' | tr '\n' ',' | sed 's/,$//')
	# The outbox's grace period is moved into the past for this run's rows,
	# so the single sweep drains them too (time travel, in the database only).
	sql "UPDATE blobs SET retire_after = NOW(6) - INTERVAL 1 SECOND
	     WHERE state = 'retired' AND document_id IN (${ids:-0})"
	chaos_sweep "$conf" "$work/sweep.log"
	rc=$?
	ok "$rc" "one sweep after the chaos exits 0"
	[ "$rc" = 0 ] || tail -n 20 "$work/sweep.log" | sed -e 's/^/#   sweep: /'
	CHAOS_ACKED=0 CHAOS_VERIFIED=0
	while read -r name id ex shas; do
		[ -n "$name" ] || continue
		sql_quote_to qname "$name"
		sql_to row "SELECT id, status FROM documents WHERE name = $qname"
		[ "$ex" = yes ] && CHAOS_ACKED=$((CHAOS_ACKED + 1))
		if [ -z "$row" ]; then
			[ "$ex" = yes ] && echo "violation: acknowledged $name (id $id) is gone" >>"$work/violations"
			continue
		fi
		did=${row%%$'\t'*}
		[ "$ex" = no ] && [ "$id" = "$did" ] && { echo "violation: deleted $name is back" >>"$work/violations"; continue; }
		good=1
		for url in "${CHAOS_URLS[@]}"; do
			# A 503 says "try again" (lighttpd answers it while it respawns
			# a worker the controller killed): retry for a while; anything
			# else counts.
			for _ in 1 2 3 4 5 6 7 8 9 10; do
				vcode=$(curl -s -m 60 -o "$work/verify" -w '%{http_code}' "$url/documents/$did/content")
				[ "$vcode" = 503 ] || [ "$vcode" = 000 ] || break
				sleep 1
			done
			sha_to got "$work/verify"
			case " $shas " in
			*" $got "*) ;;
			*) good=0
			   echo "violation: $name (id $did, ledger $ex) does not hold any content it was given through $url (HTTP $vcode)" >>"$work/violations" ;;
			esac
		done
		[ "$ex" = yes ] && [ "$good" = 1 ] && CHAOS_VERIFIED=$((CHAOS_VERIFIED + 1))
	done < <(cat "$work"/ledger.*)
	problems=$(chaos_verify "$CHAOS_RUN-" "$before" "$ids")
	[ -z "$problems" ] || printf 'violation: %s\n' "$problems" >>"$work/violations"
	chaos_audit "$conf" "$work/audit.log" "bindery audit is clean after the sweep"
	CHAOS_VIOLATIONS=$(grep -c . "$work/violations")
	CHAOS_OPS_DONE=$(grep -c '^op ' "$work/events")
	is "$CHAOS_VIOLATIONS" 0 "no violations (every acknowledged document readable with its bytes, nothing stuck, no orphan)"
	[ "$CHAOS_VIOLATIONS" = 0 ] || head -n 30 "$work/violations" | sed -e 's/^/#   /'
	ok "$([ "$CHAOS_VERIFIED" -eq "$CHAOS_ACKED" ] && [ "$CHAOS_ACKED" -gt 0 ]; echo $?)" \
		"every acknowledged document verified ($CHAOS_VERIFIED of $CHAOS_ACKED)"
}
