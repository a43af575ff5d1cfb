// A constructor, because the test bundle has no code that runs before the first test: XCTest on Linux
// starts straight into the tests, and the first of them to touch URLCache.shared fixes its directory
// from XDG_CACHE_HOME for the rest of the process.
#define _XOPEN_SOURCE 700
#include "ctestenvironment.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char cache_home[4096];
static pid_t owner;

static int remove_entry(const char *path, const struct stat *status, int type, struct FTW *walk) {
    (void)status; (void)type; (void)walk;
    remove(path);
    return 0;
}

static void remove_cache_home(void) {
    // A child made with fork() and no exec runs the parent's atexit handlers too; only the maker removes it.
    if (cache_home[0] != '\0' && getpid() == owner) {
        nftw(cache_home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
}

__attribute__((constructor)) static void make_private_cache_home(void) {
    const char *temporary = getenv("TMPDIR");
    if (temporary == NULL || temporary[0] != '/') {
        temporary = "/tmp";
    }
    int length = snprintf(cache_home, sizeof cache_home, "%s/onet-tests-cache.XXXXXX", temporary);
    if (length < 0 || (size_t)length >= sizeof cache_home || mkdtemp(cache_home) == NULL) {
        cache_home[0] = '\0';
        return;
    }
    setenv("XDG_CACHE_HOME", cache_home, 1);
    owner = getpid();
    atexit(remove_cache_home);
}

const char *cte_private_cache_home(void) {
    return cache_home[0] != '\0' ? cache_home : NULL;
}
