#define _XOPEN_SOURCE 700
#include "herald_terminal.h"
#include <locale.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

static struct termios saved;
static int saved_valid = 0;

int herald_wcwidth(uint32_t scalar) {
    return wcwidth((wchar_t)scalar);
}

int herald_terminal_use_utf8(void) {
    if (setlocale(LC_CTYPE, "C.UTF-8") != NULL) return 0;
    if (setlocale(LC_CTYPE, "en_US.UTF-8") != NULL) return 0;
    return -1;
}

int herald_terminal_size(int fd, int *rows, int *columns) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0 || size.ws_col == 0) return -1;
    *rows = size.ws_row;
    *columns = size.ws_col;
    return 0;
}

int herald_terminal_raw(int fd) {
    struct termios raw;
    if (tcgetattr(fd, &saved) != 0) return -1;
    saved_valid = 1;
    raw = saved;
    raw.c_iflag &= ~(IXON | ICRNL | BRKINT | INPCK | ISTRIP);
    raw.c_oflag &= ~(OPOST);
    raw.c_lflag &= ~(ECHO | ICANON | ISIG | IEXTEN);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    return tcsetattr(fd, TCSAFLUSH, &raw);
}

void herald_terminal_restore(int fd) {
    if (saved_valid) tcsetattr(fd, TCSAFLUSH, &saved);
}
