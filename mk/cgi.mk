# cgi: see the files it lists.
