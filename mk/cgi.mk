# cgi: bindery.fcgi as a plain CGI program (Apache mod_cgid, lighttpd
# mod_cgi): the end-to-end test through both servers, and the
# CGI-versus-FastCGI latency benchmark (run by hand, not by make check).
E2E_TESTS += tests/e2e/cgi.sh
EXTRA_DIST += tests/e2e/cgi.sh tests/bench/bench_cgi.sh
