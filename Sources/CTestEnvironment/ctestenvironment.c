// A constructor, because the test bundle has no code that runs before the first test: XCTest on Linux
// starts straight into the tests, and the first of them to touch URLCache.shared fixes its directory
// from XDG_CACHE_HOME for the rest of the process.
#define _XOPEN_SOURCE 700
#include "ctestenvironment.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    // A child made with fork() and no exec runs the parent's atexit handlers too; only the maker removes
    // it. FTW_PHYS: the links to the user's caches are removed, never followed.
    if (cache_home[0] != '\0' && getpid() == owner) {
        nftw(cache_home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
}

/// The user's cache directory as the XDG rules give it (an absolute XDG_CACHE_HOME, else ~/.cache), into
/// `path`; 0 if there is none.
static int user_cache_home(char *path, size_t size) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int length;
    if (xdg != NULL && xdg[0] == '/') {
        length = snprintf(path, size, "%s", xdg);
    } else if (home != NULL && home[0] == '/') {
        length = snprintf(path, size, "%s/.cache", home);
    } else {
        return 0;
    }
    return length > 0 && (size_t)length < size;
}

/// Links every entry of the user's cache directory but the URL caches (corelibs' and the library's own)
/// into the private one, so that the tools the tests run (swift build's package cache, clang's module
/// cache) keep using theirs while the tests' URL caches stay their own.
static void link_user_caches(const char *user) {
    DIR *directory = opendir(user);
    if (directory == NULL) {
        return;
    }
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        const char *name = entry->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, "org.swift.foundation.URLCache") == 0
            || strcmp(name, "org.operationnetworking.URLCache") == 0) {
            continue;
        }
        char target[4096], link[4096];
        int target_length = snprintf(target, sizeof target, "%s/%s", user, name);
        int link_length = snprintf(link, sizeof link, "%s/%s", cache_home, name);
        if (target_length > 0 && (size_t)target_length < sizeof target && link_length > 0 && (size_t)link_length < sizeof link) {
            symlink(target, link);
        }
    }
    closedir(directory);
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
    owner = getpid();
    atexit(remove_cache_home);
    char user[4096];
    if (user_cache_home(user, sizeof user)) {
        link_user_caches(user);
        setenv("ONET_TESTS_USER_CACHE_HOME", user, 1);
    }
    setenv("XDG_CACHE_HOME", cache_home, 1);
}

const char *cte_private_cache_home(void) {
    return cache_home[0] != '\0' ? cache_home : NULL;
}
