/* sanitizer.h — what the AddressSanitizer build (make DEBUG=1) needs to report only our leaks. */
#ifndef AX_SANITIZER_H
#define AX_SANITIZER_H

/* Under ASan: keeps libpciaccess loaded for the life of the process. hwloc's PCI plugin (loaded
 * by MPI_Init and by our hwloc binding) pulls it in and unloads it again, leaving its
 * allocations behind with no module to name them, so LeakSanitizer reports them as ours and
 * no suppression can match. Kept loaded, they stay reachable from its globals. A no-op in
 * other builds. */
void ax_sanitizer_keep_libraries(void);

/* AX_ASAN is defined when this translation unit is built with AddressSanitizer (gcc or clang). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AX_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(AX_ASAN)
#define AX_ASAN 1
#endif

#endif
