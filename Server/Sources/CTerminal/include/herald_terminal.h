#ifndef HERALD_TERMINAL_H
#define HERALD_TERMINAL_H

#include <stdint.h>

/// Columns a Unicode scalar takes in a terminal (0, 1 or 2; -1 for control characters), per the C library's
/// locale tables. Call herald_terminal_use_utf8 once first.
int herald_wcwidth(uint32_t scalar);

/// Selects a UTF-8 character type locale, so widths of non-ASCII text are known. Returns 0 on success.
int herald_terminal_use_utf8(void);

/// The size of the terminal on `fd`; returns 0 on success.
int herald_terminal_size(int fd, int *rows, int *columns);

/// Puts the terminal on `fd` in raw mode (no echo, no line buffering, no signals from keys), saving the previous
/// settings; returns 0 on success.
int herald_terminal_raw(int fd);

/// Restores the settings saved by herald_terminal_raw.
void herald_terminal_restore(int fd);

#endif
