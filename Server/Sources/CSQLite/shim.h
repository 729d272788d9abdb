// The system's SQLite: libsqlite3 and its header (Debian and Ubuntu: libsqlite3-dev; macOS: the SDK's).
#include <sqlite3.h>
