#!/usr/bin/env bash
# Chaos run (issue 6): 8 clients doing creates, retried creates with one
# Idempotency-Key, replaces, deletes and downloads through lighttpd while a
# controller crashes the responder (failpoints with exit, kill -9 of a
# FastCGI worker) and injects failures (failpoints with error, sleeps).  Then
# one sweep, and every acknowledged document must be readable with its
# SHA-256, nothing stuck, no orphan, and `bindery audit` clean.
#
# Fixed seed (CHAOS_SEED, default 6), bounded count (CHAOS_OPS, default 1000).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/http.sh"
. "$top/tests/lib/chaos.sh"

chaos_need_stack
OPS=${CHAOS_OPS:-1000}
SEED=${CHAOS_SEED:-6}
CLIENTS=8
FP=$BINDERY_TEST_VAR/failpoints
RUN=ch$$x$RANDOM
work=$(mktemp -d)
cleanup() {
	: >"$FP" 2>/dev/null
	chaos_stop_private
	rm -rf "$work"
}
trap cleanup EXIT
chaos_failpoint_responder "$FP" || bail_out "no responder that reads $FP"
URL=$CHAOS_URL
{ cat "$BINDERY_CONFIG"; grep -q '^\[sweep\]' "$BINDERY_CONFIG" || printf '\n[sweep]\nlease = 1\n'; } >"$work/cli.conf"
chmod 0600 "$work/cli.conf"
chaos_sweep "$work/cli.conf" "$work/sweep.log"
chaos_snapshot "$work/before"

# ---- a client ----------------------------------------------------------------
# Its ledger (one line per document it ever touched):
#   NAME ID EXISTS SHA...
# EXISTS is yes (acknowledged), no (acknowledged delete, or never created) or
# maybe (a create or delete without an answer); SHA... every content the
# document may hold (more than one after an unanswered replace).
client() {
	local c=$1 n=$2 i op name id code body key f k r
	local -A ids exists shas
	local names=()
	RANDOM=$((SEED * 100 + c))
	for ((i = 0; i < n; i++)); do
		r=$((RANDOM % 100))
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
			name="$RUN-c$c-$i"
			names+=("$name")
			key=
			[ $op = idem ] && key="k-$name"
			# idem: the same request twice; a second answer never names
			# another document than the first
			k=''
			for r in 1 2; do
				code=$(curl -s -m 60 -o "$work/c$c.out" -w '%{http_code}' "${CHAOS_AUTH[@]}" \
					${key:+-H "Idempotency-Key: $key"} -H 'Content-Type: application/x-chaos' \
					--data-binary "@$f" "$URL/documents?name=$name")
				[ -n "$key" ] || break
				if [ "$code" = 201 ]; then
					id=$(jfield "$(cat "$work/c$c.out")" id)
					[ -n "$k" ] && [ "$k" != "$id" ] &&
						echo "violation: $name: one Idempotency-Key, two documents ($k, $id)" >>"$work/violations"
					k=$id
				fi
				echo "op idem-try $code" >>"$work/events"
			done
			[ -n "$k" ] && [ "$code" != 201 ] && { code=201; printf '{"id":"%s","sha256":"%s"}' "$k" "$(sha <"$f")" >"$work/c$c.out"; }
			shas[$name]=$(sha <"$f")
			if [ "$code" = 201 ]; then
				body=$(cat "$work/c$c.out")
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
					-H 'Content-Type: application/x-chaos' --data-binary "@$f" "$URL/documents/$id/content")
				case $code in
				200) shas[$name]=$(sha <"$f"); exists[$name]=yes; echo ack >>"$work/events" ;;
				404) [ "${exists[$name]}" = maybe ] && exists[$name]=no ;;
				*) shas[$name]="${shas[$name]} $(sha <"$f")" ;;
				esac ;;
			delete)
				code=$(curl -s -m 60 -o /dev/null -w '%{http_code}' "${CHAOS_AUTH[@]}" -X DELETE "$URL/documents/$id")
				case $code in
				204 | 404) exists[$name]=no ;;
				*) exists[$name]=maybe ;;
				esac ;;
			download)
				code=$(curl -s -m 60 -o "$work/c$c.dl" -w '%{http_code}' "$URL/documents/$id/content")
				if [ "$code" = 200 ]; then
					k=$(sha <"$work/c$c.dl")
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

# ---- the chaos controller -------------------------------------------------------
POINTS=(create.after_intent create.after_upload create.after_tag create.after_ready
	replace.after_intent replace.after_upload replace.after_tag replace.after_commit
	delete.after_commit resume.after_claim compensate.before_delete)
workers() { # the FastCGI workers of the lighttpd we use (its children running bindery.fcgi)
	local p
	for p in $(ps -o pid= --ppid "$CHAOS_LIGHTTPD_PID" 2>/dev/null); do
		case $(readlink "/proc/$p/exe" 2>/dev/null) in */bindery.fcgi) echo "$p" ;; esac
	done
}
controller() {
	local r p action pids waited=0
	RANDOM=$((SEED * 100 + 99))
	while [ ! -e "$work/stop" ]; do
		sleep 0.$((1 + RANDOM % 3))
		# Give an armed point a few rounds to fire, then arm another
		# (resume.after_claim and compensate.before_delete are rare paths).
		if grep -q . "$FP" 2>/dev/null; then
			waited=$((waited + 1))
			[ $waited -lt 8 ] && continue
			: >"$FP"
			sed -i '$d' "$work/chaos"	# it never fired: do not count it
		fi
		waited=0
		r=$((RANDOM % 100))
		if [ $r -lt 30 ]; then
			p=${POINTS[RANDOM % ${#POINTS[@]}]}
			printf '%s exit once\n' "$p" >"$FP"
			echo "crash-armed $p" >>"$work/chaos"
		elif [ $r -lt 50 ]; then
			p=${POINTS[RANDOM % ${#POINTS[@]}]}
			action=error
			[ $((RANDOM % 3)) = 0 ] && action=sleep:300
			printf '%s %s once\n' "$p" "$action" >"$FP"
			echo "fault-armed $p $action" >>"$work/chaos"
		elif [ $r -lt 60 ] && [ -n "$CHAOS_LIGHTTPD_PID" ]; then
			pids=($(workers))
			[ ${#pids[@]} -gt 0 ] || continue
			p=${pids[RANDOM % ${#pids[@]}]}
			kill -9 "$p" 2>/dev/null && echo "kill $p" >>"$work/chaos"
		fi
	done
}

note "chaos: seed $SEED, $OPS operations, $CLIENTS clients, responder $URL"
t0=$SECONDS
: >"$work/events"; : >"$work/violations"; : >"$work/chaos"
controller &
cpid=$!
pids=()
for ((c = 0; c < CLIENTS; c++)); do
	client "$c" $(((OPS + CLIENTS - 1) / CLIENTS)) &
	pids+=($!)
done
wait "${pids[@]}"
touch "$work/stop"
wait "$cpid"
left=$(cat "$FP")
: >"$FP"

# How many armed points fired: a "once" line is gone when it fired.
armed_crash=$(grep -c '^crash-armed' "$work/chaos")
armed_fault=$(grep -c '^fault-armed' "$work/chaos")
kills=$(grep -c '^kill' "$work/chaos")
unfired=0
[ -n "$left" ] && unfired=1
case $(tail -n 1 "$work/chaos") in
crash-armed*) crashes=$((armed_crash - unfired + kills)); faults=$armed_fault ;;
fault-armed*) crashes=$((armed_crash + kills)); faults=$((armed_fault - unfired)) ;;
*) crashes=$((armed_crash + kills)); faults=$armed_fault ;;
esac
run_time=$((SECONDS - t0))

# ---- one sweep, then the checks ------------------------------------------------------
# The outbox's grace period is moved into the past for this run's rows, so
# the single sweep drains them too (time travel, in the database only).
ids=$(cat "$work"/ledger.* | awk '$2 != 0 { print $2 }' | tr '\n' ',' | sed 's/,$//')
sql "UPDATE blobs SET retire_after = NOW(6) - INTERVAL 1 SECOND
     WHERE state = 'retired' AND document_id IN (${ids:-0})"
chaos_sweep "$work/cli.conf" "$work/sweep.log"
sweep_rc=$?
ok "$sweep_rc" "one sweep after the chaos exits 0"

acked=0 verified=0
while read -r name id ex shas; do
	[ -n "$name" ] || continue
	row=$(sql "SELECT id, status FROM documents WHERE name = $(sql_quote "$name")")
	case $ex in
	yes) acked=$((acked + 1)) ;;
	esac
	if [ -z "$row" ]; then
		[ "$ex" = yes ] && echo "violation: acknowledged $name (id $id) is gone" >>"$work/violations"
		continue
	fi
	did=${row%%$'\t'*}
	[ "$ex" = no ] && [ "$id" = "$did" ] && { echo "violation: deleted $name is back" >>"$work/violations"; continue; }
	# A 503 says "try again" (lighttpd answers it while it respawns a
	# worker the controller killed): retry for a while; anything else counts.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		vcode=$(curl -s -m 60 -o "$work/verify" -w '%{http_code}' "$URL/documents/$did/content")
		[ "$vcode" = 503 ] || [ "$vcode" = 000 ] || break
		sleep 1
	done
	got=$(sha <"$work/verify")
	case " $shas " in
	*" $got "*) [ "$ex" = yes ] && verified=$((verified + 1)) ;;
	*) echo "violation: $name (id $did, ledger $ex) does not hold any content it was given (HTTP $vcode)" >>"$work/violations" ;;
	esac
done < <(cat "$work"/ledger.*)

problems=$(chaos_verify "$RUN-" "$work/before" "$ids")
[ -z "$problems" ] || printf 'violation: %s\n' "$problems" >>"$work/violations"
# The audit is always there: a failing one (even a broken --help) is a failure.
BINDERY_LOG_STDERR=1 "$CHAOS_BIN/bindery" -c "$work/cli.conf" audit >"$work/audit.log" 2>&1
audit_rc=$?
ok "$audit_rc" "bindery audit is clean after the sweep"
[ "$audit_rc" = 0 ] || sed -e 's/^/#   audit: /' "$work/audit.log" | head -n 20
violations=$(grep -c . "$work/violations")
ops=$(grep -c '^op ' "$work/events")
note "chaos: operations $ops, crashes $crashes (kill -9: $kills), faults $faults, acknowledged $acked, verified $verified, violations $violations ($run_time s)"
note "chaos: answers $(awk '$1 == "op" { n[$3]++ } END { for (c in n) printf "%s:%d ", c, n[c] }' "$work/events")"
is "$violations" 0 "no violations (every acknowledged document readable with its bytes, nothing stuck, no orphan)"
[ "$violations" = 0 ] || head -n 30 "$work/violations" | sed -e 's/^/#   /'
ok "$([ "$verified" -eq "$acked" ] && [ "$acked" -gt 0 ]; echo $?)" "every acknowledged document verified ($verified of $acked)"
ok "$([ "$crashes" -gt 0 ]; echo $?)" "the run crashed the responder ($crashes times)"
done_testing
