// cuda_module.c — the binary's side of the CUDA module (job/cuda_api.h): where the module
// is, opening it with dlopen on first use, and checking its ABI before its table is used.
// A CPU run never gets here, so it maps none of cudart, cuBLAS or NCCL.
#include "job/cuda_api.h"

#ifdef DDPTOK_CUDA
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/report.h"

// The module's place in the build tree relative to the binary's folder ($(BUILD) of the
// Makefile: build/cuda, build/cuda-asan).
#ifndef DDPTOK_CUDA_MODULE_REL
#define DDPTOK_CUDA_MODULE_REL "build/cuda/" DDPTOK_CUDA_MODULE_NAME
#endif

static const CudaModule *g_module;

static int is_file(const char *path) { return access(path, F_OK) == 0; }

int cuda_module_path(char *out, size_t len) {
    const char *env = getenv(DDPTOK_CUDA_MODULE_ENV);
    if (env && *env) {  // a file: "x.so" is ./x.so, not a name for dlopen's search
        snprintf(out, len, "%s%s", strchr(env, '/') ? "" : "./", env);
        return is_file(out);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(out, len, "%s", DDPTOK_CUDA_MODULE_NAME);  // no /proc: the loader's own search
        return 0;
    }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) slash[1] = 0;
    snprintf(out, len, "%s%s", exe, DDPTOK_CUDA_MODULE_NAME);  // installed beside the binary
    if (is_file(out)) return 1;
    snprintf(out, len, "%s../lib/ddptok/%s", exe, DDPTOK_CUDA_MODULE_NAME);  // PREFIX/bin/ddptok, PREFIX/lib/ddptok/
    if (is_file(out)) return 1;
    snprintf(out, len, "%s%s", exe, DDPTOK_CUDA_MODULE_REL);  // the build tree
    return is_file(out);
}

const CudaModule *cuda_module_loaded(void) { return g_module; }

const CudaModule *cuda_module_try(char *why, size_t len) {
    if (g_module) return g_module;
    char path[PATH_MAX + 64];
    cuda_module_path(path, sizeof path);
    // RTLD_NOW: a library or a symbol of the binary that is missing fails here, named, not
    // at the first call; RTLD_LOCAL: cudart's symbols stay the module's.
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, len, "cannot load the CUDA module %s: %s (make builds it; %s=PATH names another; --backend cpu needs none)",
                 path, e ? e : "?", DDPTOK_CUDA_MODULE_ENV);
        return NULL;
    }
    const CudaModule *(*entry)(void) = (const CudaModule *(*)(void))dlsym(h, DDPTOK_CUDA_ENTRY);
    const CudaModule *m = entry ? entry() : NULL;
    if (!m) {
        snprintf(why, len, "the CUDA module %s has no entry %s(): not a ddptok CUDA module", path, DDPTOK_CUDA_ENTRY);
        dlclose(h);
        return NULL;
    }
    if (m->abi != DDPTOK_CUDA_ABI || !m->layout || strcmp(m->layout, DDPTOK_LAYOUT) != 0) {
        snprintf(why, len, "the CUDA module %s is from another build (ABI %d, headers %.16s; this ddptok: ABI %d, headers %.16s): rebuild both with make",
                 path, m->abi, m->layout ? m->layout : "?", DDPTOK_CUDA_ABI, DDPTOK_LAYOUT);
        dlclose(h);
        return NULL;
    }
    g_module = m;  // never closed: its functions are in use until the process ends
    return m;
}

const CudaModule *cuda_module(void) {
    char why[PATH_MAX + 512];
    const CudaModule *m = cuda_module_try(why, sizeof why);
    if (!m) die(EXIT_BAD_INPUT, "%s", why);
    return m;
}

int cuda_driver_present(void) {
    if (is_file("/dev/nvidiactl") || is_file("/dev/dxg")) return 1;
    DIR *d = opendir("/proc/driver/nvidia/gpus");
    if (!d) return 0;
    int any = 0;
    for (struct dirent *e; !any && (e = readdir(d));) any = e->d_name[0] != '.';
    closedir(d);
    return any;
}
#endif
