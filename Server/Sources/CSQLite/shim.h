// The system's SQLite: libsqlite3 and its header (Debian and Ubuntu: libsqlite3-dev; macOS: the SDK's).
#include <sqlite3.h>

/// `sqlite3_db_config` for an option that is switched on or off (`SQLITE_DBCONFIG_ENABLE_QPSG`, ...): Swift cannot
/// call a C function with variable arguments. Returns the option's state after the call (0 or 1), or -1 when SQLite
/// refused it.
static inline int herald_sqlite3_db_switch(sqlite3 *db, int option, int on) {
    int state = -1;
    return sqlite3_db_config(db, option, on, &state) == SQLITE_OK ? state : -1;
}
