// SQLite, for the default HTTP cache's store (see SQLiteURLCache).
#include <sqlite3.h>
