// The response header collector declared in ccurlshim.h. Per field line it costs a few dozen
// instructions here against about 180 through a Swift callback (the call, the transfer's lookup and
// an array append); Swift sees a block's status line and its end only.
#include "ccurlshim.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/// Room for a typical block's field lines, and fields, before the first growth.
static const size_t initial_capacity = 1024;
static const size_t initial_span_capacity = 24;

ccurl_header_block *ccurl_header_block_create(size_t limit, const uint64_t *clock, ccurl_header_event_callback on_event) {
    ccurl_header_block *block = calloc(1, sizeof(ccurl_header_block));
    if (block == NULL) return NULL;
    block->limit = limit > INT32_MAX ? INT32_MAX : limit;
    block->clock = clock;
    block->on_event = on_event;
    ccurl_head_summary_clear(&block->summary);
    return block;
}

void ccurl_header_block_destroy(ccurl_header_block *block) {
    if (block == NULL) return;
    free(block->bytes);
    free(block->spans);
    free(block);
}

void ccurl_header_block_reset(ccurl_header_block *block) {
    block->count = 0;
    block->span_count = 0;
    block->block_bytes = 0;
    block->folded = 0;
    block->activity = 0;
    ccurl_head_summary_clear(&block->summary);
}

void ccurl_header_block_clear_lines(ccurl_header_block *block) {
    block->count = 0;
    block->span_count = 0;
    block->folded = 0;
    ccurl_head_summary_clear(&block->summary);
}

void ccurl_head_summary_clear(ccurl_head_summary *summary) {
    summary->content_type = -1;
    summary->content_length = -1;
    summary->content_encoding = -1;
    summary->has_set_cookie = 0;
    summary->conflicting_lengths = 0;
}

static uint64_t load8(const unsigned char *bytes) {
    uint64_t word;
    memcpy(&word, bytes, sizeof word);
    return word;
}

/// Whether the `length` (8 to 16) bytes at `name` are `lowercase` (a lowercase ASCII literal of that
/// length: letters, digits, '-') in any ASCII case. Compared as two words that may overlap, each with
/// the 0x20 bit set where the literal has a letter: only 'A'…'Z' and 'a'…'z' then meet a letter, and
/// every other byte is compared exactly. About a tenth of the cost of a byte loop.
static int name_is(const unsigned char *name, const char *lowercase, size_t length) {
    const unsigned char *literal = (const unsigned char *)lowercase;
    uint64_t head = load8(literal), tail = load8(literal + length - 8);
    // A lowercase letter has the 0x40 bit and a digit or '-' has not: that bit, moved to 0x20.
    const uint64_t bits = 0x2020202020202020u;
    return (load8(name) | ((head >> 1) & bits)) == head
        && (load8(name + length - 8) | ((tail >> 1) & bits)) == tail;
}

void ccurl_head_summary_note(ccurl_head_summary *summary, const unsigned char *bytes,
                             const ccurl_field_span *spans, size_t index) {
    const ccurl_field_span *span = &spans[index];
    const unsigned char *name = bytes + span->name_start;
    // Names told apart by length first: most fields are none of these, and cost one switch.
    switch (span->name_end - span->name_start) {
    case 10:
        if (name_is(name, "set-cookie", 10)) summary->has_set_cookie = 1;
        break;
    case 12:
        if (summary->content_type < 0 && name_is(name, "content-type", 12)) summary->content_type = (int32_t)index;
        break;
    case 14:
        if (!name_is(name, "content-length", 14)) break;
        if (summary->content_length < 0) {
            summary->content_length = (int32_t)index;
        } else if (!summary->conflicting_lengths) {
            const ccurl_field_span *first = &spans[summary->content_length];
            int32_t length = span->value_end - span->value_start;
            summary->conflicting_lengths = length != first->value_end - first->value_start
                || memcmp(bytes + span->value_start, bytes + first->value_start, (size_t)length) != 0;
        }
        break;
    case 16:
        if (summary->content_encoding < 0 && name_is(name, "content-encoding", 16)) {
            summary->content_encoding = (int32_t)index;
        }
        break;
    default:
        break;
    }
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

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/// Records the field of the line just kept at `at` (`end`: its length without the line end). The
/// line does not begin with a blank. 0 without memory.
static int add_span(ccurl_header_block *block, const char *line, size_t end, size_t at) {
    const char *colon = memchr(line, ':', end);
    if (colon == NULL) return 1;
    size_t name_end = (size_t)(colon - line);
    while (name_end > 0 && is_blank(line[name_end - 1])) name_end -= 1;
    if (name_end == 0) return 1;
    size_t value_start = (size_t)(colon - line) + 1, value_end = end;
    while (value_start < value_end && is_blank(line[value_start])) value_start += 1;
    while (value_end > value_start && is_blank(line[value_end - 1])) value_end -= 1;
    if (block->span_count == block->span_capacity) {
        size_t capacity = block->span_capacity == 0 ? initial_span_capacity : block->span_capacity * 2;
        ccurl_field_span *spans = realloc(block->spans, capacity * sizeof(ccurl_field_span));
        if (spans == NULL) return 0;
        block->spans = spans;
        block->span_capacity = capacity;
    }
    ccurl_field_span *span = &block->spans[block->span_count++];
    span->name_start = (int32_t)at;
    span->name_end = (int32_t)(at + name_end);
    span->value_start = (int32_t)(at + value_start);
    span->value_end = (int32_t)(at + value_end);
    ccurl_head_summary_note(&block->summary, block->bytes, block->spans, block->span_count - 1);
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
    size_t at = block->count;
    memcpy(block->bytes + at, line, length);
    block->count += length;
    if (is_blank(line[0])) {
        block->folded = 1;
    } else if (!add_span(block, line, end, at)) {
        block->count = at;
        return CCURL_HEADER_NO_MEMORY;
    }
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
