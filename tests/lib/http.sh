# tests/lib/http.sh — requests to the responder and what they answer, for the
# end-to-end and integration tests.  Sourced after tests/lib/tap.sh.
#
#   req METHOD URL [CURL-ARGS...]       HTTP_CODE, HTTP_BODY, HTTP_HEADERS, HTTP_CTYPE
#   header NAME                         a response header of the last req
#   cgi_run OUT CONF METHOD URI [VAR=VALUE...] < BODY
#                                       bindery.fcgi as a CGI program; the answer
#                                       in file OUT; CGI_RC, CGI_CODE
#   cgi_body OUT                        the body of an answer cgi_run wrote (text)
#   cgi_req CONF METHOD URI [VAR=VALUE...] < BODY
#                                       prints the answer, CRs removed (text)
#   jfield JSON KEY                     a top-level string or number field
#   urlenc TEXT                         TEXT percent-encoded for a URL's query
#   sha [FILE]                          SHA-256 (hex) of FILE, or of stdin
#   sha_to VAR FILE                     the same into VAR, one fork fewer
#   wait_for SECONDS CMD...             poll CMD every 0.1 s until it holds
#
# Bodies, sent or received, stay in files: a shell string loses NUL bytes.

# urlenc TEXT: TEXT percent-encoded, every byte but A-Z a-z 0-9 . _ ~ -
# (what Python's urllib.parse.quote(TEXT, safe="") gives), in the shell:
# a python3 started per name cost 150 ms of CPU here.
urlenc() {
	local LC_ALL=C s=$1 out='' c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[A-Za-z0-9._~-]) out+=$c ;;
		*) printf -v c '%%%02X' "'$c"; out+=$c ;;
		esac
	done
	printf '%s\n' "$out"
}

# req METHOD URL [CURL-ARGS...]: one HTTP request.  Sets HTTP_CODE (000 when
# there was no answer), HTTP_BODY, HTTP_HEADERS (lower-cased names) and
# HTTP_CTYPE.  Never fails the script.  Tests make thousands of requests
# side by side, so this runs one process (curl) and one subshell, not the
# eight programs a mktemp, tr, sed and tail each would add: the headers
# come on curl's stdout with the code, the body through a file that is
# this shell's own ($BASHPID) in the lane's tmp/ (emptied after reading).
req() {
	local method=$1 url=$2 bfile out line name headers='' ctype='' tmp=
	shift 2
	if [ -d "${BINDERY_TEST_VAR:-/nonexistent}/tmp" ]; then
		bfile=$BINDERY_TEST_VAR/tmp/req.$BASHPID
	else
		bfile=$(mktemp) tmp=1
	fi
	out=$(curl -s -m "${REQ_TIMEOUT:-30}" -X "$method" -D - -o "$bfile" \
		-w '\n%{http_code}' "$@" "$url" 2>/dev/null) || true
	HTTP_CODE=${out##*$'\n'}
	[ -n "$HTTP_CODE" ] || HTTP_CODE=000
	HTTP_BODY=$(<"$bfile")
	if [ -n "$tmp" ]; then rm -f "$bfile"; else : >"$bfile"; fi
	while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in
		*:*) name=${line%%:*} line=${name,,}:${line#*:} ;;
		esac
		headers+=$line$'\n'
		case $line in content-type:*) ctype=${line#content-type:} ;; esac
	done <<<"${out%$'\n'*}"
	while [[ $headers == *$'\n' ]]; do headers=${headers%$'\n'}; done
	HTTP_HEADERS=$headers
	while [[ $ctype == ' '* ]]; do ctype=${ctype# }; done
	HTTP_CTYPE=$ctype
}

# header NAME: the value of response header NAME (lower-case) from the last req.
header() {
	local line value='' found=
	while IFS= read -r line; do
		case $line in "$1:"*) value=${line#"$1":} found=1 ;; esac
	done <<<"$HTTP_HEADERS"
	while [[ $value == ' '* ]]; do value=${value# }; done
	[ -z "$found" ] || printf '%s\n' "$value"
}

# cgi_run OUT CONF METHOD URI [VAR=VALUE...] < BODY: one request to
# bindery.fcgi ($CGI_PROGRAM, default $BINDERY_TEST_BIN/bindery.fcgi) run as a
# plain CGI program with config CONF in a clean environment, the way a web
# server runs it (QUERY_STRING is the URI's query, empty without one).  Each
# VAR=VALUE is added to (or overrides) that environment.  ${CGI_WRAP[@]}, when
# set, runs in front of the program (valgrind, timeout).  The answer's bytes go
# to file OUT untouched; stderr is appended to $CGI_STDERR (default /dev/null).
# Sets CGI_RC, the exit status (137 when a failpoint's exit fired), and
# CGI_CODE, the code of the answer's Status header (000 when it has none).
# Never fails the script.
cgi_run() {
	local out=$1 conf=$2 method=$3 uri=$4 query=
	shift 4
	case $uri in *\?*) query=${uri#*\?} ;; esac
	env -i PATH="$PATH" BINDERY_CONFIG="$conf" GATEWAY_INTERFACE=CGI/1.1 SERVER_PROTOCOL=HTTP/1.1 \
		REQUEST_METHOD="$method" REQUEST_URI="$uri" QUERY_STRING="$query" SCRIPT_NAME= "$@" \
		${CGI_WRAP[@]+"${CGI_WRAP[@]}"} "${CGI_PROGRAM:-$BINDERY_TEST_BIN/bindery.fcgi}" \
		>"$out" 2>>"${CGI_STDERR:-/dev/null}"
	CGI_RC=$?
	# The header block only, in the shell: a test runs hundreds of these,
	# and a program started costs 4-6 ms of CPU here.  (A body is never
	# read, so its NUL bytes cannot reach the shell.)
	local line
	CGI_CODE=000
	while IFS= read -r line; do
		line=${line%$'\r'}
		[ -n "$line" ] || break
		case $line in
		'Status: '[0-9]*) line=${line#Status: } CGI_CODE=${line%%[!0-9]*}; break ;;
		esac
	done <"$out" 2>/dev/null
	return 0
}

# cgi_body OUT: the body of the answer in file OUT (everything after the
# first empty line), CRs removed: for JSON and other text answers.  In the
# shell, for the reason above; a last line without a newline stays so.
cgi_body() {
	local line nl body=
	while :; do
		nl=$'\n'
		IFS= read -r line || { [ -n "$line" ] || break; nl=; }
		line=${line//$'\r'/}
		if [ -n "$body" ]; then
			printf '%s%s' "$line" "$nl"
		elif [ -z "$line" ]; then
			body=1
		fi
		[ -n "$nl" ] || break
	done <"$1"
}

# cgi_req CONF METHOD URI [VAR=VALUE...] < BODY: cgi_run, then print the
# whole answer (headers and body, CRs removed).
cgi_req() {
	local out
	out=$(mktemp)
	cgi_run "$out" "$@"
	tr -d '\r' <"$out"
	rm -f "$out"
}

# jfield JSON KEY: a top-level string or number field (our answers are
# compact, one line); the first line that has it.
jfield() {
	local line re=".*\"$2\":\"?([^\",}]*)"
	while IFS= read -r line; do
		# The greedy .* takes the key's last occurrence in the line.
		[[ $line =~ $re ]] && { printf '%s\n' "${BASH_REMATCH[1]}"; return 0; }
	done <<<"$1"
	return 0
}

# sha [FILE]: the SHA-256 of FILE's bytes (of stdin without FILE), hex.
sha() {
	local out
	out=$(sha256sum "$@") || return
	printf '%s\n' "${out%% *}"
}

# sha_to VAR FILE: what VAR=$(sha FILE) sets, without the function's own
# subshell around sha256sum (a fork costs 3-4 ms of CPU here).  Its one
# local is the reference, so no caller's variable is hidden from it.
sha_to() {
	local -n _sha_to_var=$1
	_sha_to_var=$(sha256sum <"$2") || return
	_sha_to_var=${_sha_to_var%% *}
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s; status 0 once it holds,
# 1 when it still does not after SECONDS.
wait_for() {
	local limit=$(($1 * 10)) i
	shift
	for ((i = 0; i < limit; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
