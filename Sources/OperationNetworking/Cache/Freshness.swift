import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How fresh a stored response is (RFC 9111 §4.2): its freshness lifetime, its current age, and
/// whether a request may have it without asking the origin.
/// - Threading: an immutable value.
struct Freshness: Equatable, Sendable {
    /// Seconds the response stays fresh after it was generated (§4.2.1), explicit or heuristic.
    let lifetime: TimeInterval
    /// Seconds since the origin generated it, as the cache can tell (§4.2.3).
    let currentAge: TimeInterval
    /// Whether the lifetime came from the response itself (`max-age`, `Expires`), not a heuristic.
    let isExplicit: Bool

    /// Statuses a cache may give a heuristic lifetime (RFC 9110 §15.1).
    static let heuristicallyCacheableStatuses: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The fraction of the time since `Last-Modified` taken as a heuristic lifetime (§4.2.2's
    /// "typical setting").
    static let heuristicFraction = 0.1

    /// Whether the response is fresh: its age has not reached its lifetime.
    var isFresh: Bool { currentAge < lifetime }

    /// Seconds left until it turns stale (negative once stale).
    var remaining: TimeInterval { lifetime - currentAge }

    /// The freshness of `stored` at `now`.
    init(of stored: StoredResponse, now: Date) {
        self.init(status: stored.statusCode, facts: stored.facts, requestTime: stored.requestTime,
                  responseTime: stored.responseTime, now: now)
    }

    /// The freshness of a response with `status` and `headers` (by lowercased name, as the cache keeps
    /// them), requested at `requestTime`, received at `responseTime`, seen at `now`.
    init(status: Int, headers: [String: String], requestTime: Date, responseTime: Date, now: Date) {
        self.init(status: status, facts: FreshnessFacts(headers, now: now), requestTime: requestTime,
                  responseTime: responseTime, now: now)
    }

    /// The freshness of a response with `status` whose fields say `facts`.
    init(status: Int, facts: FreshnessFacts, requestTime: Date, responseTime: Date, now: Date) {
        let date = facts.date ?? responseTime
        let (lifetime, explicit) = Freshness.lifetime(status: status, facts: facts, date: date)
        self.lifetime = lifetime
        self.isExplicit = explicit
        self.currentAge = Freshness.currentAge(ageValue: facts.ageValue, date: date, requestTime: requestTime,
                                               responseTime: responseTime, now: now)
    }

    /// The freshness lifetime (§4.2.1): `max-age` (`s-maxage` is a shared cache's), else `Expires`
    /// minus `Date`, else the heuristic for a heuristically cacheable status with `Last-Modified`;
    /// and whether it was explicit.
    static func lifetime(status: Int, facts: FreshnessFacts, date: Date) -> (TimeInterval, Bool) {
        switch facts.control.seconds("max-age") {
        case .valid(let seconds): return (TimeInterval(seconds), true)
        case .invalid: return (0, true)   // invalid freshness information: stale (§4.2.1)
        case .absent: break
        }
        switch facts.expires {
        // An invalid date, "0" among them, is a time in the past (§5.3).
        case .invalid: return (0, true)
        case .at(let moment): return (max(0, moment.timeIntervalSince(date)), true)
        case .absent: break
        }
        guard heuristicallyCacheableStatuses.contains(status), let modified = facts.lastModified else { return (0, false) }
        return (max(0, date.timeIntervalSince(modified)) * heuristicFraction, false)
    }

    /// The current age (§4.2.3), from the `Age` field's value, the `Date`, the request and response
    /// times and now.
    static func currentAge(ageValue: TimeInterval, date: Date, requestTime: Date, responseTime: Date,
                           now: Date) -> TimeInterval {
        let apparentAge = max(0, responseTime.timeIntervalSince(date))
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        let residentTime = max(0, now.timeIntervalSince(responseTime))
        return correctedInitialAge + residentTime
    }

    /// Whether a request with `requestControl` may be answered with this response without validation
    /// (§4.2, §5.2.1): fresh enough for its `max-age` and `min-fresh`, or stale within its `max-stale`
    /// when the response does not forbid serving it stale (`must-revalidate`, §5.2.2.2).
    func satisfies(_ requestControl: CacheControl, responseControl: CacheControl) -> Bool {
        if case .valid(let maxAge) = requestControl.seconds("max-age"), currentAge > TimeInterval(maxAge) {
            return false
        }
        if case .valid(let minFresh) = requestControl.seconds("min-fresh"), remaining < TimeInterval(minFresh) {
            return false
        }
        if isFresh { return true }
        guard !responseControl.has("must-revalidate") else { return false }
        switch requestControl.maxStale {
        case .absent: return false
        case .any: return true
        case .limit(let seconds): return -remaining <= TimeInterval(seconds)
        }
    }

    /// Whether a stale response may be served while it is revalidated in the background (RFC 5861 §3):
    /// it is stale by no more than its `stale-while-revalidate` seconds, and nothing forbids serving it
    /// stale (`must-revalidate`, §4.2.4; `no-cache` is validated first anyway).
    func withinStaleWhileRevalidate(_ responseControl: CacheControl) -> Bool {
        guard !isFresh, !responseControl.has("must-revalidate"),
              case .valid(let window) = responseControl.seconds("stale-while-revalidate") else { return false }
        return -remaining <= TimeInterval(window)
    }
}

/// What a response's fields say about its freshness, parsed once (when it is stored or read from the
/// file), not on every lookup: its `Cache-Control`, and its `Date`, `Expires`, `Last-Modified` and
/// `Age`.
/// - Threading: an immutable value.
struct FreshnessFacts: Sendable, Equatable {
    /// What `Expires` says.
    /// - Threading: an immutable value.
    enum Expires: Sendable, Equatable {
        case absent
        /// Not an HTTP date: a time in the past (§5.3).
        case invalid
        case at(Date)
    }

    let control: CacheControl
    let date: Date?
    let expires: Expires
    let lastModified: Date?
    /// The `Age` field's first member in seconds (0 without a valid one, §5.1).
    let ageValue: TimeInterval

    /// Whether the fields give the response no freshness lifetime and no time it may be served stale:
    /// no `max-age`, `s-maxage`, `stale-while-revalidate` or `stale-if-error`, no `Expires` and no
    /// `Last-Modified` (the heuristic's base). Its `Date` then changes nothing a cache decides.
    var carriesNoTime: Bool {
        expires == .absent && lastModified == nil && !control.has("max-age") && !control.has("s-maxage")
            && !control.has("stale-while-revalidate") && !control.has("stale-if-error")
    }

    /// Whether a cache may never use the response without validating it (a bare `no-cache`, §5.2.2.4),
    /// whatever its age: its `Date` then changes nothing a cache decides either.
    var alwaysValidated: Bool { control.hasBare("no-cache") }

    /// The facts of `fields` (by lowercased name); `now` places a two-digit year. `control`, when
    /// given, is their `Cache-Control` already parsed.
    init(_ fields: [String: String], control: CacheControl? = nil, now: Date = Date()) {
        self.control = control ?? CacheControl(fields["cache-control"])
        date = HTTPDate.parse(fields["date"], now: now)
        expires = fields["expires"].map { HTTPDate.parse($0, now: now).map(Expires.at) ?? .invalid } ?? .absent
        lastModified = HTTPDate.parse(fields["last-modified"], now: now)
        // A list-valued Age counts by its first member (§5.1).
        let first = fields["age"].flatMap { CacheControl.listMembers($0).first }
        ageValue = TimeInterval(first.flatMap(CacheControl.deltaSeconds) ?? 0)
    }
}
