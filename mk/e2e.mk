# e2e: end-to-end scripts through lighttpd and Apache.
