#!/usr/bin/env bash
# banned.sh - no C source in lib/, app/ or tests/ calls a function the house
# style bans (HACKING.md "C conventions"; curl's checksrc has the same list):
# unbounded copies and formats, and conversions that cannot report errors.
#
# A match is the whole word outside comments, string and character literals,
# so "fgets", "snprintf" and a comment that says "it gets" do not count, but
# a call, a prototype or a function pointer does.  Only *.c and *.h files are
# read, so this script never matches itself.  Prints TAP (tests/lib/tap.sh),
# one line per name.
#
# One more line: no file under app/, lib/, tests/ or mk/ cites an issue by
# its number, which nobody outside the project can look up; a comment or
# message says the rule or the risk instead.  The failure lists each
# FILE:LINE: and the line.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"

banned="strcpy strcat sprintf vsprintf atoi atol strtok gets"
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$top/tests/lib/tap.sh"
cd "$top" || bail_out "cannot cd to $top"
command -v perl >/dev/null 2>&1 || missing "perl not found"

files=$(find lib app tests -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)
[ -n "$files" ] || bail_out "no sources under $top"

# "name file:line" for every hit; blanking keeps newlines so lines still count.
hits=$(BANNED="$banned" perl -e '
	my @names = split " ", $ENV{BANNED};
	my $re = join "|", map quotemeta, @names;
	for my $f (@ARGV) {
		open my $fh, "<", $f or die "$f: $!\n";
		local $/;
		my $src = <$fh>;
		close $fh;
		$src =~ s{/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27}
			{ (my $m = $&) =~ s/[^\n]/ /g; $m }gse;
		while ($src =~ /\b($re)\b/g) {
			my $line = 1 + (substr($src, 0, $-[0]) =~ tr/\n//);
			print "$1 $f:$line\n";
		}
	}' $files) || bail_out "perl failed"

for name in $banned; do
	where=$(printf '%s\n' "$hits" | awk -v n="$name" '$1 == n { printf " %s", $2 }')
	is "${where# }" "" "no $name()"
done

# The pattern is put together so that this file never matches it.  Build
# output in an in-tree build (logs, dependency files) is not ours to read.
cite_word=iss
cite="${cite_word}ues? #?[0-9]+"
cite_dirs=$(for d in app lib tests mk; do [ -d "$d" ] && printf '%s ' "$d"; done)
cited=$(grep -rnIiE --exclude='*.log' --exclude='*.trs' --exclude-dir=.deps \
	-e "$cite" -- $cite_dirs)
[ $? -le 1 ] || bail_out "grep failed in $cite_dirs"
cited=$(printf '%s' "$cited" | LC_ALL=C sort)
if [ -z "$cited" ]; then
	pass "no issue numbers cited in ${cite_dirs% }"
else
	fail "no issue numbers cited in ${cite_dirs% }"
	diag "  say the rule or the risk instead of citing an issue:"
	while IFS= read -r line; do diag "  $line"; done <<<"$cited"
fi
done_testing
