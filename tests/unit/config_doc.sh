#!/bin/bash
# tests/unit/config_doc.sh — bindery.conf(5) and conf/bindery.conf.sample
# document every key the parser knows, each in its own section, and nothing
# it does not know, so the three cannot drift apart.  The sample as shipped,
# placeholders and all, is refused with each placeholder at its line.
#
# The parser is asked, not a copy of its table: an unknown key in a known
# section makes `bindery` list that section's keys, and a key in an unknown
# section lists the sections (lib/parse/config.c, unknown_key_message).
. "$(dirname "$0")/../lib/tap.sh"

DOC_BIN=${top_builddir:?}/app/bindery
DOC_MAN=${top_srcdir:?}/man/bindery.conf.5.in
DOC_SAMPLE=$top_srcdir/conf/bindery.conf.sample
[ -x "$DOC_BIN" ] || bail_out "$DOC_BIN is not built"
DOC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/config_doc.XXXXXX") || bail_out "mktemp -d failed"
trap 'rm -rf "$DOC_TMP"' EXIT

# parser_says CONFIG-TEXT: the message `bindery` refuses that file with.
parser_says() {
	printf '%s\n' "$1" >"$DOC_TMP/probe.conf"
	env -u BINDERY_CONFIG "$DOC_BIN" -c "$DOC_TMP/probe.conf" lifecycle-policy 2>&1
}

doc_sections=$(parser_says $'[no_such_section]\nk = 1' |
	sed -n 's/.*; the sections are \(.*\)$/\1/p' | tr -d '[]')
like "$doc_sections" '^database storage limits auth upload quota scan events download sweep metrics log$' \
	"the parser names its sections (a new one needs documenting here too)"

# documented FILE-KIND FILE: "section key" for every key FILE documents.
documented() {
	case $1 in
	man)	# .SH [section], then ".TP" and a line naming the key in bold
		awk '/^\.SH \[[a-z_]+\]$/ { s = substr($2, 2, length($2) - 2); next }
		     /^\.SH / { s = ""; next }
		     prev ~ /^\.TP/ && s != "" && match($0, /^\.B[IR]? [a-z_]+/) {
			split(substr($0, 1, RLENGTH), w, " "); print s, w[2] }
		     { prev = $0 }' "$2" ;;
	sample)	# [section], then "key = value" or "; key = value" (one blank at most)
		awk '/^\[[a-z_]+\]$/ { s = substr($0, 2, length($0) - 2); next }
		     s != "" && match($0, /^(; ?)?[a-z_]+ = /) {
			k = substr($0, 1, RLENGTH); sub(/^; ?/, "", k); sub(/ = $/, "", k)
			print s, k }' "$2" ;;
	esac | LC_ALL=C sort -u
}
documented man "$DOC_MAN" >"$DOC_TMP/man"
documented sample "$DOC_SAMPLE" >"$DOC_TMP/sample"

: >"$DOC_TMP/known"
for section in $doc_sections; do
	keys=$(parser_says "[$section]"$'\nno_such_key = 1' |
		sed -n "s/.*; the keys of \[$section\] are \(.*\)\$/\1/p")
	like "$keys" '^[a-z_]+(, [a-z_]+)*$' "the parser lists the keys of [$section]"
	for k in ${keys//,/}; do echo "$section $k"; done >>"$DOC_TMP/known"
done
LC_ALL=C sort -u -o "$DOC_TMP/known" "$DOC_TMP/known"
like "$(wc -l <"$DOC_TMP/known")" '^[1-9][0-9]+$' "the parser knows tens of keys"

for kind in man sample; do
	LC_ALL=C comm -23 "$DOC_TMP/known" "$DOC_TMP/$kind" >"$DOC_TMP/$kind.missing"
	ok '[ ! -s "$DOC_TMP/$kind.missing" ]' "every key the parser knows is in the $kind, in its section"
	sed 's/^/# undocumented: /' "$DOC_TMP/$kind.missing"
	LC_ALL=C comm -13 "$DOC_TMP/known" "$DOC_TMP/$kind" >"$DOC_TMP/$kind.stale"
	ok '[ ! -s "$DOC_TMP/$kind.stale" ]' "the $kind documents no key the parser does not know"
	sed 's/^/# unknown to the parser: /' "$DOC_TMP/$kind.stale"
done

# The sample as shipped still holds its @NAME@ placeholders: the parser
# refuses it, naming each at its line and saying nothing else, so an admin
# who missed one learns which (exit 78, EX_CONFIG).
want=$(grep -n '^[a-z_]* = \([^@]*:\)\?@[A-Z0-9_]*@$' "$DOC_SAMPLE" | cut -d: -f1 | tr '\n' ' ')
like "$want" '^[0-9]+ [0-9]+ ' "the sample holds placeholders ($want)"
env -u BINDERY_CONFIG "$DOC_BIN" -c "$DOC_SAMPLE" lifecycle-policy >/dev/null 2>"$DOC_TMP/sample.err"
is "$?" 78 "the sample as shipped is refused (78)"
got=$(sed -n "s|^bindery: $DOC_SAMPLE:\([0-9]*\): \[[a-z]*\] [a-z_]* is still the placeholder @[A-Z0-9_]*@\$|\1|p" \
	"$DOC_TMP/sample.err" | tr '\n' ' ')
is "$got" "$want" "... every placeholder named at its line"
is "$(wc -l <"$DOC_TMP/sample.err")" "$(echo $want | wc -w)" "... and nothing else said"
done_testing
