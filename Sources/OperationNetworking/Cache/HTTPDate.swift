import Foundation

/// HTTP dates (RFC 9110 §5.6.7): the IMF-fixdate every sender uses, and the two obsolete forms every
/// recipient must still accept (RFC 850 and asctime). Parsed by hand, not with `DateFormatter`: three
/// fixed shapes, and no formatter shared across threads.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The moment `text` names, or `nil` when it is none of the three forms (an invalid date: for
    /// `Expires`, a time in the past, RFC 9111 §5.3). `now` places a two-digit RFC 850 year.
    static func parse(_ text: String?, now: Date = Date()) -> Date? {
        guard let text else { return nil }
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" || $0 == "\t" }).map(String.init)
        switch tokens.count {
        case 6:
            // IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT" or RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT".
            guard tokens[5] == "GMT", let day = Int(tokens[1]), let month = month(tokens[2]),
                  let year = year(tokens[3], now: now) else { return nil }
            return moment(year: year, month: month, day: day, time: tokens[4])
        case 5:
            // asctime "Sun Nov  6 08:49:37 1994".
            guard let month = month(tokens[1]), let day = Int(tokens[2]), tokens[4].count == 4,
                  let year = Int(tokens[4]) else { return nil }
            return moment(year: year, month: month, day: day, time: tokens[3])
        default:
            return nil
        }
    }

    /// 1...12 for an English month abbreviation (any case).
    private static func month(_ token: String) -> Int? {
        months.firstIndex(of: asciiLowercased(token)).map { $0 + 1 }
    }

    /// A four-digit year, or a two-digit one read as RFC 9110 says: never more than 50 years ahead.
    private static func year(_ token: String, now: Date) -> Int? {
        guard token.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(token) else { return nil }
        switch token.count {
        case 4:
            return value
        case 2:
            let current = 1970 + Int(now.timeIntervalSince1970 / (365.2425 * 86_400))
            var year = current - current % 100 + value
            if year > current + 50 { year -= 100 }
            return year
        default:
            return nil
        }
    }

    /// The UTC moment of a calendar date and an `HH:MM:SS` time; `nil` when out of range.
    private static func moment(year: Int, month: Int, day: Int, time: String) -> Date? {
        let parts = time.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 }),
              let hour = Int(parts[0]), let minute = Int(parts[1]), let second = Int(parts[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              (1...9999).contains(year) else { return nil }
        let days = daysFromEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + min(second, 59)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
    /// days-from-civil arithmetic).
    private static func daysFromEpoch(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
