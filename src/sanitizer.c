/* sanitizer.c — see sanitizer.h. */
#include "sanitizer.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AX_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define AX_ASAN 1
#endif

#ifdef AX_ASAN
#include <dlfcn.h>

void ax_sanitizer_keep_libraries(void) {
  /* absent on machines without it: then nothing loads it either */
  (void)dlopen("libpciaccess.so.0", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
}
#else
void ax_sanitizer_keep_libraries(void) {}
#endif
