/*
 * dlopen.c -- loads plugin.so (built with LUTRA_INLINE, linked with liblutra.so)
 * with dlopen, so that liblutra.so comes in at run time, not at start-up, and
 * runs its checks (plugin.c). The program itself does not link liblutra.
 *
 * Usage: dlopen PATH-TO-plugin.so
 */

#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s plugin.so\n", argv[0]);
    return 2;
  }
  void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (plugin == NULL) {
    fprintf(stderr, "FAIL dlopen: %s\n", dlerror());
    return 1;
  }
  int (*run)(void) = (int (*)(void))dlsym(plugin, "plugin_run");
  if (run == NULL) {
    fprintf(stderr, "FAIL dlsym: %s\n", dlerror());
    return 1;
  }
  return run() == 0 ? 0 : 1;
}
