#include "heap_usage.h"
#include <stddef.h>

#if defined(__linux__)
#include <malloc.h>
#endif

#if defined(__GLIBC__)

long long herald_heap_bytes_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (long long)info.uordblks + (long long)info.hblkhd;
}
#elif defined(__APPLE__)
#include <malloc/malloc.h>

long long herald_heap_bytes_in_use(void) {
    malloc_statistics_t statistics;
    malloc_zone_statistics(NULL, &statistics);
    return (long long)statistics.size_in_use;
}
#else
long long herald_heap_bytes_in_use(void) {
    return -1;
}
#endif
