/* install_db.c - see install_db.h.  All SQL is literal text with bound parameters. */
#include <string.h>

#include "base/buf.h"
#include "base/rand.h"
#include "registry/install_db.h"

static const char sql_install_get[] = "SELECT install_id FROM installation WHERE id = 1";
static const char sql_install_put[] =
	"INSERT IGNORE INTO installation (id, install_id) VALUES (1, ?)";

static enum db_err
install_read(struct db *db, char *out, size_t outlen)
{
	char id[INSTALL_ID_LEN + 8] = "";
	struct db_col c[] = { DBC_STR(id) };
	enum db_err e = db_query(db, sql_install_get, NULL, 0, c, 1, NULL, NULL);

	if (e != DB_OK)
		return e;
	if (strlen(id) != INSTALL_ID_LEN || copy_cstr(out, outlen, id) != 0)
		return DB_FAILED;
	return DB_OK;
}

enum db_err
install_id_get(struct db *db, char *out, size_t outlen)
{
	char fresh[INSTALL_ID_LEN + 1];
	enum db_err e = install_read(db, out, outlen);

	if (e != DB_NOT_FOUND)
		return e;
	if (rand_hex(fresh, sizeof fresh, INSTALL_ID_LEN / 2) != 0)
		return DB_FAILED;
	{
		struct db_param p[] = { DBP_STR(fresh) };

		if ((e = db_exec(db, sql_install_put, p, 1, NULL)) != DB_OK)
			return e;
	}
	return install_read(db, out, outlen);
}
