/// Keys from the least to the most recently used, where using, adding and removing one costs the same
/// however many there are: a doubly linked list threaded through arrays. Each key's place (`Place`) is
/// kept by its owner beside the key's other facts, so that a use moves it without hashing the key
/// again; eviction takes the least recent first without sorting anything.
///
/// - Threading: a value; the cache's `Entries` own two of these under the cache's lock.
struct RecencyOrder<Key> {
    /// Where a key sits in the order; valid until the key is removed.
    typealias Place = Int

    private var keys: [Key?] = []
    private var previous: [Place] = []
    private var next: [Place] = []
    /// Places freed by removals, reused by the next additions.
    private var free: [Place] = []
    private var oldest: Place = -1
    private var newest: Place = -1
    private(set) var count = 0

    /// Adds `key` as the most recently used; returns its place.
    mutating func append(_ key: Key) -> Place {
        let place: Place
        if let reused = free.popLast() {
            place = reused
            keys[place] = key
        } else {
            place = keys.count
            keys.append(key)
            previous.append(-1)
            next.append(-1)
        }
        link(place)
        count += 1
        return place
    }

    /// The key at `place` was used now: it becomes the most recent.
    mutating func use(_ place: Place) {
        guard place != newest else { return }
        unlink(place)
        link(place)
    }

    /// Takes the key at `place` out of the order.
    mutating func remove(_ place: Place) {
        unlink(place)
        keys[place] = nil
        free.append(place)
        count -= 1
    }

    /// The least recently used key, if any.
    var leastRecent: Key? { oldest < 0 ? nil : keys[oldest] }

    /// Forgets every key.
    mutating func removeAll() {
        self = RecencyOrder()
    }

    /// Puts `place` at the newest end.
    private mutating func link(_ place: Place) {
        previous[place] = newest
        next[place] = -1
        if newest >= 0 { next[newest] = place } else { oldest = place }
        newest = place
    }

    /// Takes `place` out of the chain (its slot stays allocated).
    private mutating func unlink(_ place: Place) {
        let before = previous[place], after = next[place]
        if before >= 0 { next[before] = after } else { oldest = after }
        if after >= 0 { previous[after] = before } else { newest = before }
    }
}
