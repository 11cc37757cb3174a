# chaos: see the files it lists.
