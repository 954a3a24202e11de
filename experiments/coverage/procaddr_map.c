/*
 * Which exported libcuda symbol cuGetProcAddress hands out for each driver entry point,
 * CUDA version and flags. Reads base names (one per line) on stdin; prints
 * "base version flags resolved" where resolved is the exported symbol at the returned
 * pointer (dladdr), "unexported+0xOFF" for a pointer inside libcuda that no exported
 * symbol starts at, or "error=N" / "not_found".
 * Build: cc -O1 -o procaddr_map procaddr_map.c -ldl
 * Run:   ./procaddr_map /path/to/libcuda.so.1 < names.txt
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>

typedef int (*gpa_t)(const char *, void **, int, unsigned long long, int *);

int main(int argc, char **argv) {
    void *h = dlopen(argc > 1 ? argv[1] : "libcuda.so.1", RTLD_NOW);
    if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
    gpa_t gpa = (gpa_t)dlsym(h, "cuGetProcAddress_v2");
    if (!gpa) { fprintf(stderr, "no cuGetProcAddress_v2\n"); return 1; }
    static const int versions[] = {11000, 12000, 12050, 12080, 13000};
    static const unsigned long long flags[] = {0, 1, 2};
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        for (unsigned v = 0; v < sizeof versions / sizeof *versions; v++)
            for (unsigned f = 0; f < 3; f++) {
                void *p = 0; int status = -1;
                int rc = gpa(line, &p, versions[v], flags[f], &status);
                if (rc != 0 || !p) { printf("%s %d %llu error=%d/%d\n", line, versions[v], flags[f], rc, status); continue; }
                Dl_info info;
                if (dladdr(p, &info) && info.dli_sname && info.dli_saddr == p)
                    printf("%s %d %llu %s\n", line, versions[v], flags[f], info.dli_sname);
                else
                    printf("%s %d %llu unexported+0x%lx\n", line, versions[v], flags[f],
                           (unsigned long)((uintptr_t)p - (uintptr_t)(info.dli_fbase)));
            }
    }
    return 0;
}
