#ifndef HERALD_HEAP_USAGE_H
#define HERALD_HEAP_USAGE_H

/// Bytes the allocator has handed out and not taken back, or -1 where the platform does not tell.
long long herald_heap_bytes_in_use(void);

#endif
