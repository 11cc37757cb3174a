#!/usr/bin/env bash
# GET /documents?prefix=P and the page's filter and paging without
# JavaScript, through lighttpd AND Apache mod_fcgid:
# - the API lists the ready documents whose names begin with P, in ready
#   order; '%', '_' and '\' in P are characters, not wildcards; the cursor
#   pages the filtered list; a bad prefix, or one beside name=, is 400 JSON;
# - GET /?order=oldest&prefix=P&limit=N shows those rows and a "Next page"
#   link whose href carries the cursor, the order and the prefix; following
#   the links (as a browser without script does) walks every document once,
#   past the first page, and, newest first as the page is by default, past
#   200 documents at the page's own 100 rows; a bad prefix on the page is
#   400 JSON too.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/http.sh"

need_stack BINDERY_TEST_LIGHTTPD_URL BINDERY_TEST_APACHE_URL BINDERY_TEST_TOKEN
command -v jq >/dev/null || missing "jq is not installed (./dev installs it)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
auth=(-H "Authorization: Bearer $BINDERY_TEST_TOKEN")
printf 'prefix test\n' >"$work/body.txt"

create() { # URL NAME: prints the new id
	req POST "$1/documents?name=$(urlenc "$2")" "${auth[@]}" -H 'Content-Type: text/plain' \
		--data-binary "@$work/body.txt"
	[ "$HTTP_CODE" = 201 ] || { diag "create '$2': $HTTP_CODE $HTTP_BODY"; return 1; }
	jfield "$HTTP_BODY" id
}
# names: the names of the last list answer, comma-separated, with the run's
# prefix $t cut off ("?" for a name outside the run).
names() {
	printf '%s' "$HTTP_BODY" | jq -r --arg t "$t" \
		'[.documents[].name | if startswith($t) then .[($t | length):] else "?" end] | join(",")' \
		2>/dev/null || echo not-a-list
}
# unhtml TEXT: TEXT with the page's escapes (html_escape: & < > " ') decoded.
unhtml() {
	local s=$1
	s=${s//'&lt;'/<} s=${s//'&gt;'/>} s=${s//'&quot;'/\"} s=${s//'&#39;'/\'}
	printf '%s\n' "${s//'&amp;'/\&}"
}
# page_names FILE: the row names of a saved page, in order, with $t cut off
# ("?" for a name outside the run), comma-separated.  (In the shell: a
# python3 per page cost more CPU than the pages.)
page_names() {
	local rest n out='' re='<a class="dl" href="[^"]*">([^<]*)</a>'
	rest=$(<"$1")
	while [[ $rest =~ $re ]]; do
		n=$(unhtml "${BASH_REMATCH[1]}")
		if [[ $n == "$t"* ]]; then out+=${out:+,}${n#"$t"}; else out+=${out:+,}'?'; fi
		rest=${rest#*"${BASH_REMATCH[0]}"}
	done
	printf '%s\n' "$out"
}
# next_href FILE: the page's "Next page" link, HTML-unescaped ("" without one).
next_href() {
	local re='<a id="next" rel="next" href="([^"]*)"' text
	text=$(<"$1")
	if [[ $text =~ $re ]]; then unhtml "${BASH_REMATCH[1]}"; else echo; fi
}

for s in "lighttpd=$BINDERY_TEST_LIGHTTPD_URL" "apache=$BINDERY_TEST_APACHE_URL"; do
	srv=${s%%=*} url=${s#*=}
	t="pfx-$srv-$$-$RANDOM-"
	ids=
	for n in '50%off' '50xoff' 'a_b' 'axb' 'A_b' 'r 1' 'r 2' 'r 3' 'r 4' 'r 5'; do
		ids="$ids $(create "$url" "$t$n")"
	done
	like "$ids" '^( [0-9]+){10}$' "$srv: ten documents created"

	req GET "$url/documents?prefix=$(urlenc "$t")&limit=100"
	is "$HTTP_CODE $(names)" "200 50%off,50xoff,a_b,axb,A_b,r 1,r 2,r 3,r 4,r 5" \
		"$srv: ?prefix= lists the run's documents in ready order"
	req GET "$url/documents?prefix=$(urlenc "${t}50%")"
	is "$HTTP_CODE $(names)" "200 50%off" "$srv: '%' in a prefix is a character, not a wildcard"
	req GET "$url/documents?prefix=$(urlenc "${t}a_")"
	is "$HTTP_CODE $(names)" "200 a_b" "$srv: '_' in a prefix is a character; case counts"
	req GET "$url/documents?prefix=$(urlenc "${t}r ")&limit=2"
	first=$(names) cursor=$(printf '%s' "$HTTP_BODY" | jq -r .next)
	req GET "$url/documents?prefix=$(urlenc "${t}r ")&limit=2&after=$cursor"
	second=$(names)
	req GET "$url/documents?prefix=$(urlenc "${t}r ")&limit=2&after=$(printf '%s' "$HTTP_BODY" | jq -r .next)"
	is "$first|$second|$(names)" "r 1,r 2|r 3,r 4|r 5" "$srv: the cursor pages the filtered list"
	is "$(printf '%s' "$HTTP_BODY" | jq -r .next)" null "$srv: ... and the last page has no next"
	req GET "$url/documents?prefix=$(urlenc "${t}nothing")"
	is "$HTTP_CODE $(printf '%s' "$HTTP_BODY" | jq -c .)" '200 {"documents":[],"next":null}' \
		"$srv: a prefix nothing has: an empty list"
	req GET "$url/documents?prefix=a%2Fb"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_prefix" "$srv: a prefix with '/' is 400 bad_prefix"
	req GET "$url/documents?prefix=a%01"
	if [ "$srv" = lighttpd ]; then	# lighttpd refuses it itself (doc/api.md, names)
		is "$HTTP_CODE" 400 "$srv: a control character: 400 (lighttpd's own)"
	else
		is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_prefix" "$srv: a control character: 400 bad_prefix"
	fi
	req GET "$url/documents?prefix=$(python3 -c 'print("x"*256)')"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_prefix" "$srv: 256 bytes: 400 bad_prefix"
	req GET "$url/documents?prefix=a&name=a"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_prefix" "$srv: prefix beside name: 400 bad_prefix"
	req GET "$url/documents?prefix=&limit=1"
	is "$HTTP_CODE $(printf '%s' "$HTTP_BODY" | jq '.documents | length')" "200 1" \
		"$srv: an empty prefix (an empty form field) filters nothing"

	# The page, followed link by link as a browser without script would.
	curl -s -o "$work/p1.html" -w '%{http_code}' "$url/?order=oldest&prefix=$(urlenc "$t")&limit=4" >"$work/code"
	is "$(cat "$work/code") $(page_names "$work/p1.html")" "200 50%off,50xoff,a_b,axb" \
		"$srv: GET /?order=oldest&prefix=&limit=4 shows the first four rows"
	href=$(next_href "$work/p1.html")
	like "$href" "^/\\?after=[0-9]+&order=oldest&prefix=$t&limit=4\$" \
		"$srv: ... and a Next link with the cursor, the order, the prefix and the limit ($href)"
	walked=$(page_names "$work/p1.html") pages=1
	while [ -n "$href" ] && [ "$pages" -lt 10 ]; do
		curl -s -o "$work/pn.html" "$url$href"
		walked="$walked,$(page_names "$work/pn.html")"
		href=$(next_href "$work/pn.html")
		pages=$((pages + 1))
	done
	is "$pages|$walked" "3|50%off,50xoff,a_b,axb,A_b,r 1,r 2,r 3,r 4,r 5" \
		"$srv: the Next links walk all ten over three pages"
	grep -q '<a id="first" href="/?after=0&amp;order=oldest&amp;prefix=' "$work/pn.html"
	is "$?" 0 "$srv: a later page links back to the first, keeping the order and the prefix"
	like "$(grep -o '<input id="prefix" name="prefix" maxlength="255" value="[^"]*"' "$work/p1.html")" \
		"value=\"$t\"" "$srv: the filter field shows the prefix"
	req GET "$url/?prefix=a%2Fb"
	is "$HTTP_CODE $(jfield "$HTTP_BODY" error)" "400 bad_prefix" "$srv: the page refuses a bad prefix (400 JSON)"
	# The run's documents go again.
	for id in $ids; do
		req DELETE "$url/documents/$id" "${auth[@]}"
	done
done

# Past 200 at the page's own size (100 rows): 205 documents through
# lighttpd (four at a time: the order is whatever order they became ready
# in, which the API's list tells), and the page's Next links, followed
# without script, show each once, newest first (that order reversed), over
# three pages.
url=$BINDERY_TEST_LIGHTTPD_URL t="pfx-many-$$-$RANDOM-"
# (Four curls of 52 URLs each, every URL with its own "-o /dev/null": a curl
# process per document cost more CPU than the rest of the test.)
seq -w 1 205 | sed -e "s|.*|-o /dev/null $url/documents?name=$t&|" |
	xargs -n 156 -P 4 curl -s -w '%{http_code}\n' -X POST \
	"${auth[@]}" -H 'Content-Type: text/plain' --data-binary "@$work/body.txt" >"$work/many.codes"
is "$(sort "$work/many.codes" | uniq -c | tr -s ' ')" " 205 201" "205 documents created"
req GET "$url/documents?prefix=$t&limit=1000"
ready_order=$(names)
is "$(printf '%s' "$ready_order" | tr ',' '\n' | sort | tr '\n' ',')" "$(seq -w 1 205 | tr '\n' ',')" \
	"the API lists the 205, each once"
curl -s -o "$work/m.html" "$url/?prefix=$t"
walked=$(page_names "$work/m.html") href=$(next_href "$work/m.html") pages=1
while [ -n "$href" ] && [ "$pages" -lt 10 ]; do
	curl -s -o "$work/m.html" "$url$href"
	walked="$walked,$(page_names "$work/m.html")"
	href=$(next_href "$work/m.html")
	pages=$((pages + 1))
done
is "$pages|$walked" "3|$(printf '%s\n' "$ready_order" | tr ',' '\n' | tac | paste -sd,)" \
	"the page's Next links walk the 205 at 100 a page, each once, newest first"
printf '%s' "$HTTP_BODY" | jq -r '.documents[].id' | sed -e "s|^|$url/documents/|" |
	xargs -n 52 -P 4 curl -s -X DELETE "${auth[@]}" >/dev/null
done_testing
