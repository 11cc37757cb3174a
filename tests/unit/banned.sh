#!/bin/sh
# banned.sh - no C source in lib/, app/ or tests/ calls a function the house
# style bans (HACKING.md "C conventions"; curl's checksrc has the same list):
# unbounded copies and formats, and conversions that cannot report errors.
#
# A match is the whole word outside comments, string and character literals,
# so "fgets", "snprintf" and a comment that says "it gets" do not count, but
# a call, a prototype or a function pointer does.  Only *.c and *.h files are
# read, so this script never matches itself.  Prints TAP, one line per name.

banned="strcpy strcat sprintf vsprintf atoi atol strtok gets"
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$top" || { echo "Bail out! cannot cd to $top"; exit 1; }
command -v perl >/dev/null 2>&1 || { echo "1..0 # SKIP perl not found"; exit 0; }

files=$(find lib app tests -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)
[ -n "$files" ] || { echo "Bail out! no sources under $top"; exit 1; }

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
	}' $files) || { echo "Bail out! perl failed"; exit 1; }

n=0
for name in $banned; do
	n=$((n + 1))
	where=$(printf '%s\n' "$hits" | awk -v n="$name" '$1 == n { printf " %s", $2 }')
	if [ -z "$where" ]; then
		echo "ok $n - no $name()"
	else
		echo "not ok $n - $name() used at$where"
	fi
done
echo "1..$n"
