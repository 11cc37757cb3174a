-- 011: the lock `bindery sweep --lock NAME` takes (doc/design.md "Smaller
-- decisions": cross-host locks are lease rows).  GET_LOCK belongs to one
-- server's session: on a Galera cluster each node has its own, so two
-- sweepers on two nodes both "held" it.  A row taken by a conditional
-- UPDATE (free, or its holder's lease ran out) is certified cluster-wide,
-- and a sweeper that dies lets go when its lease ends.
CREATE TABLE sweep_locks (
	name         VARCHAR(64) NOT NULL,
	holder       CHAR(32) NULL,
	lease_until  DATETIME(6) NULL,
	taken_at     DATETIME(6) NULL,
	PRIMARY KEY (name)
) ENGINE = InnoDB;
