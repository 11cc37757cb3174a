# blob: files owned by this area are listed here.
