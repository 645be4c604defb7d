/* sanitizer.c — see sanitizer.h. */
#include "sanitizer.h"

#ifdef AX_ASAN
#include <dlfcn.h>

void ax_sanitizer_keep_libraries(void) {
  /* absent on machines without it: then nothing loads it either */
  (void)dlopen("libpciaccess.so.0", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
}
#else
void ax_sanitizer_keep_libraries(void) {}
#endif
