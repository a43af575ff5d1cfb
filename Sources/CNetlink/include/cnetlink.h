// Netlink (NETLINK_ROUTE) sockets for NetworkReachabilityManager: open, ask for a dump, and the
// constants Swift needs. Parsing the messages is done in Swift.
#ifndef CNETLINK_H
#define CNETLINK_H

#include <stddef.h>
#include <stdint.h>

/// Opens a NETLINK_ROUTE socket (close-on-exec, non-blocking) subscribed to `groups`
/// (0 for a request-only socket). Returns the fd or -1 (errno set).
int cnetlink_open(uint32_t groups);

/// Sends an RTM_GETLINK / RTM_GETADDR / RTM_GETROUTE dump request. Returns 0 or -1.
int cnetlink_request_dump(int fd, uint16_t type, uint32_t sequence);

/// A close-on-exec pipe (the monitor's wake-up); 0 or -1.
int cnetlink_pipe(int fds[2]);

/// The multicast groups for link, IPv4/IPv6 address and IPv4/IPv6 route changes.
uint32_t cnetlink_watch_groups(void);

/// Message types and attribute numbers used by the parser.
enum {
    CNETLINK_DONE = 3, CNETLINK_ERROR = 2,
    CNETLINK_NEWLINK = 16, CNETLINK_DELLINK = 17, CNETLINK_GETLINK = 18,
    CNETLINK_NEWADDR = 20, CNETLINK_DELADDR = 21, CNETLINK_GETADDR = 22,
    CNETLINK_NEWROUTE = 24, CNETLINK_DELROUTE = 25, CNETLINK_GETROUTE = 26,
};

#endif
