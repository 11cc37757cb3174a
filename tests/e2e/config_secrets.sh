#!/usr/bin/env bash
# A secret on a line that went wrong never reaches a message:
# both programs stop with FILE:LINE and the key's name, exit 78,
# and their stderr holds no byte of the secret.  Before, a piece of an
# account key or SAS that lost its indentation was quoted as a key's name.
# A file with several mistakes gets them all at once, each FILE:LINE (a
# missing key names the file and the section), and a value still a
# sample's @NAME@ placeholder is refused at its line, by both programs.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"

need_stack BINDERY_TEST_BIN
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

key_piece=UGllY2VPZkFuQWNjb3VudEtleQ	# base64, as an account key's second half
sig_piece=U2lnbmF0dXJlT2ZBU0FT		# a SAS signature's
head='[database]
socket = /nonexistent.sock
user = u
name = n
[storage]
container = c'
# 7: connection_string, 8: its unindented second half
printf '%s\nconnection_string = DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9v\n%s==;\n' \
	"$head" "$key_piece" >"$work/key.conf"
# 9: sas, 10: its signature on an unindented line
printf '%s\nendpoint = https://acct.blob.core.windows.net\naccount = acct\nsas = sv=2025-11-05&sp=r&sig=\n%s%%2B=\n' \
	"$head" "$sig_piece" >"$work/sas.conf"
# 5: a password, 6: an indented second half (once silently the whole password)
printf '[database]\nsocket = /nonexistent.sock\nuser = u\nname = n\npassword = first-half\n  %s\n' \
	"$key_piece" >"$work/password.conf"
chmod 600 "$work"/*.conf

for c in key:8:connection_string sas:10:sas password:6:password; do
	IFS=: read -r conf line key <<<"$c"
	if [ "$conf" = sas ]; then secret=$sig_piece; else secret=$key_piece; fi
	for prog in bindery bindery.fcgi; do
		if [ $prog = bindery ]; then args=(sweep --dry-run); else args=(); fi
		env -u GATEWAY_INTERFACE "$BINDERY_TEST_BIN/$prog" -c "$work/$conf.conf" "${args[@]}" \
			>/dev/null 2>"$work/err" </dev/null
		is "$?" 78 "$conf: $prog exits 78"
		like "$(<"$work/err")" "$work/$conf.conf:$line: .*$key" "$conf: $prog names the file, line $line and $key"
		if grep -qF "$secret" "$work/err"; then
			fail "$conf: $prog's message holds no piece of the secret"
			diag "$(<"$work/err")"
		else
			pass "$conf: $prog's message holds no piece of the secret"
		fi
	done
done

# Every mistake at once, each FILE:LINE, from both programs (they load the
# file the same way): 3 an unknown key (so user is missing too), 5 a bad
# value, 6 not ini, and [storage] container missing; and the placeholders
# a package's sample holds until the admin fills them in.
printf '[database]\nsocket = /nonexistent.sock\nusr = u\nname = n\nport = many\nnot ini at all\n[storage]\nconnection_string = UseDevelopmentStorage=true\n' \
	>"$work/many.conf"
printf '[database]\nsocket = /nonexistent.sock\nuser = u\npassword = @DB_PASSWORD@\nname = n\n[storage]\nconnection_string = UseDevelopmentStorage=true\ncontainer = c\n[auth]\ntoken = demo:@DEMO_TOKEN@\n' \
	>"$work/placeholder.conf"
chmod 600 "$work"/*.conf
for prog in bindery bindery.fcgi; do
	if [ $prog = bindery ]; then args=(status); else args=(); fi
	env -u GATEWAY_INTERFACE "$BINDERY_TEST_BIN/$prog" -c "$work/many.conf" "${args[@]}" \
		>/dev/null 2>"$work/err" </dev/null
	is "$?" 78 "five problems: $prog exits 78"
	for want in "$work/many.conf:3: \[database\]: unknown key" "$work/many.conf:5: \[database\] port: invalid value" \
		"$work/many.conf:6: syntax error" "$work/many.conf: \[database\] user is required" \
		"$work/many.conf: \[storage\] container is required"; do
		like "$(<"$work/err")" "$want" "five problems: $prog says '$want'"
	done
	is "$(grep -c "$work/many.conf" "$work/err")" 5 "five problems: $prog says each once, on a line of its own"
	env -u GATEWAY_INTERFACE "$BINDERY_TEST_BIN/$prog" -c "$work/placeholder.conf" "${args[@]}" \
		>/dev/null 2>"$work/err" </dev/null
	is "$?" 78 "placeholders: $prog exits 78"
	like "$(<"$work/err")" "$work/placeholder.conf:4: \[database\] password is still the placeholder @DB_PASSWORD@" \
		"placeholders: $prog names the password's line and placeholder"
	like "$(<"$work/err")" "$work/placeholder.conf:10: \[auth\] token is still the placeholder @DEMO_TOKEN@" \
		"placeholders: ... and the token's"
done
done_testing
