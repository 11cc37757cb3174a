# sweep: bindery sweep, audit, lifecycle-policy, check-account.
