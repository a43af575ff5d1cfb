// The response header collector declared in ccurlshim.h. Per field line it costs a few dozen
// instructions here against about 180 through a Swift callback (the call, the transfer's lookup and
// an array append); Swift sees a block's status line and its end only.
#include "ccurlshim.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/// Room for a typical block's field lines before the first growth.
static const size_t initial_capacity = 1024;

ccurl_header_block *ccurl_header_block_create(size_t limit, const uint64_t *clock, ccurl_header_event_callback on_event) {
    ccurl_header_block *block = calloc(1, sizeof(ccurl_header_block));
    if (block == NULL) return NULL;
    block->limit = limit;
    block->clock = clock;
    block->on_event = on_event;
    return block;
}

void ccurl_header_block_destroy(ccurl_header_block *block) {
    if (block == NULL) return;
    free(block->bytes);
    free(block);
}

void ccurl_header_block_reset(ccurl_header_block *block) {
    block->count = 0;
    block->block_bytes = 0;
    block->folded = 0;
    block->activity = 0;
}

void ccurl_header_block_clear_lines(ccurl_header_block *block) {
    block->count = 0;
    block->folded = 0;
}

static uint64_t now_nanoseconds(const ccurl_header_block *block) {
    if (block->clock != NULL) return *block->clock;
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (uint64_t)time.tv_sec * 1000000000u + (uint64_t)time.tv_nsec;
}

/// Makes room for `more` bytes past `count`; 0 without memory.
static int reserve(ccurl_header_block *block, size_t more) {
    if (block->capacity - block->count >= more) return 1;
    size_t capacity = block->capacity == 0 ? initial_capacity : block->capacity;
    while (capacity - block->count < more) {
        if (capacity > SIZE_MAX / 2) return 0;
        capacity *= 2;
    }
    unsigned char *bytes = realloc(block->bytes, capacity);
    if (bytes == NULL) return 0;
    block->bytes = bytes;
    block->capacity = capacity;
    return 1;
}

int ccurl_header_block_consume(ccurl_header_block *block, const char *line, size_t length) {
    block->activity = now_nanoseconds(block);
    // Counted before anything else, so that no line, a status line included, passes the limit.
    if (length > block->limit - (block->block_bytes < block->limit ? block->block_bytes : block->limit)) {
        return CCURL_HEADER_TOO_LARGE;
    }
    block->block_bytes += length;
    size_t end = length;
    while (end > 0 && (line[end - 1] == '\n' || line[end - 1] == '\r')) end -= 1;
    if (end == 0) {
        block->block_bytes = 0;
        return CCURL_HEADER_END;
    }
    if (end >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        // A new block: its size counts from its status line, as if that had ended in CRLF.
        ccurl_header_block_clear_lines(block);
        block->block_bytes = end + 2;
        return CCURL_HEADER_STATUS;
    }
    if (!reserve(block, length)) return CCURL_HEADER_NO_MEMORY;
    memcpy(block->bytes + block->count, line, length);
    block->count += length;
    if (line[0] == ' ' || line[0] == '\t') block->folded = 1;
    return CCURL_HEADER_FIELD;
}

size_t ccurl_header_callback(char *buffer, size_t size, size_t count, void *userdata) {
    ccurl_header_block *block = userdata;
    if (block == NULL || buffer == NULL) return 0;
    size_t length = size * count;
    int event = ccurl_header_block_consume(block, buffer, length);
    if (event == CCURL_HEADER_FIELD) return length;
    if (block->on_event == NULL) return 0;
    return block->on_event(block, buffer, length, event) ? length : 0;
}
