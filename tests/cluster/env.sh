# tests/cluster/env.sh — sourced by tests/cluster/*.sh: tap.sh and http.sh,
# and the running cluster's var/cluster/env (./dev cluster up writes it;
# ./dev cluster test names it in BINDERY_CLUSTER_ENV).  Sets URL_A, URL_B
# (the two web hosts, each on its own Galera node) and AUTH.
cl_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$cl_here/../lib/tap.sh"
. "$cl_here/../lib/http.sh"
cl_env=${BINDERY_CLUSTER_ENV:-$cl_here/../../var/cluster/env}
[ -r "$cl_env" ] || bail_out "no cluster: $cl_env is missing (./dev cluster up)"
# shellcheck disable=SC1090
. "$cl_env"
read -r URL_A URL_B <<<"$BINDERY_URLS"
[ -n "$URL_A" ] && [ -n "$URL_B" ] || bail_out "BINDERY_URLS needs two web hosts: '$BINDERY_URLS'"
AUTH="Authorization: Bearer $BINDERY_TOKEN"
