import Foundation

/// HTTP dates (RFC 9110 §5.6.7): the IMF-fixdate every sender uses, and the two obsolete forms every
/// recipient must still accept (RFC 850 and asctime), each in its exact shape. Parsed by hand, not with
/// `DateFormatter`: three fixed shapes, and no formatter shared across threads.
///
/// Anything else is no date, which for `Expires` means a time in the past (RFC 9111 §5.3): a two-digit
/// year outside RFC 850's shape, a missing comma, doubled spaces, dashes in an IMF-fixdate, a time
/// written with periods or a one-digit hour. The one leniency: day names, month names and `GMT` are
/// read in any case (RFC 9110 calls HTTP-date case-sensitive; every browser reads `gmt`, and no other
/// reading of it exists).
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    /// The moment `text` names, or `nil` when it is none of the three forms (an invalid date: for
    /// `Expires`, a time in the past, RFC 9111 §5.3). `now` places a two-digit RFC 850 year.
    static func parse(_ text: String?, now: Date = Date()) -> Date? {
        guard let text else { return nil }
        let bytes = Array(text.utf8)
        return imfFixdate(bytes) ?? rfc850Date(bytes, now: now) ?? asctimeDate(bytes)
    }

    /// "Sun, 06 Nov 1994 08:49:37 GMT"
    private static func imfFixdate(_ bytes: [UInt8]) -> Date? {
        guard bytes.count == 29, days.contains(word(bytes, 0..<3)), bytes[3] == 0x2C, bytes[4] == 0x20,
              let day = number(bytes, 5..<7), bytes[7] == 0x20, let month = month(word(bytes, 8..<11)),
              bytes[11] == 0x20, let year = number(bytes, 12..<16), bytes[16] == 0x20, bytes[25] == 0x20,
              word(bytes, 26..<29) == "gmt" else { return nil }
        return moment(year: year, month: month, day: day, time: bytes[17..<25])
    }

    /// "Sunday, 06-Nov-94 08:49:37 GMT"
    private static func rfc850Date(_ bytes: [UInt8], now: Date) -> Date? {
        guard let comma = bytes.firstIndex(of: 0x2C), longDays.contains(word(bytes, 0..<comma)),
              bytes.count == comma + 24 else { return nil }
        let rest = comma + 2
        guard bytes[comma + 1] == 0x20, let day = number(bytes, rest..<rest + 2), bytes[rest + 2] == 0x2D,
              let month = month(word(bytes, rest + 3..<rest + 6)), bytes[rest + 6] == 0x2D,
              let shortYear = number(bytes, rest + 7..<rest + 9), bytes[rest + 9] == 0x20, bytes[rest + 18] == 0x20,
              word(bytes, rest + 19..<rest + 22) == "gmt" else { return nil }
        return moment(year: year(twoDigits: shortYear, now: now), month: month, day: day,
                      time: bytes[rest + 10..<rest + 18])
    }

    /// "Sun Nov  6 08:49:37 1994" (the day of the month padded with a space, or two digits).
    private static func asctimeDate(_ bytes: [UInt8]) -> Date? {
        guard bytes.count == 24, days.contains(word(bytes, 0..<3)), bytes[3] == 0x20,
              let month = month(word(bytes, 4..<7)), bytes[7] == 0x20, bytes[10] == 0x20, bytes[19] == 0x20,
              let year = number(bytes, 20..<24) else { return nil }
        let day = bytes[8] == 0x20 ? number(bytes, 9..<10) : number(bytes, 8..<10)
        guard let day else { return nil }
        return moment(year: year, month: month, day: day, time: bytes[11..<19])
    }

    /// The bytes in `range` as lowercase ASCII text ("" when out of bounds).
    private static func word(_ bytes: [UInt8], _ range: Range<Int>) -> String {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count else { return "" }
        return String(decoding: bytes[range].map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// The decimal number the digits in `range` write; nil unless every byte there is a digit.
    private static func number(_ bytes: [UInt8], _ range: Range<Int>) -> Int? {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count, !range.isEmpty else { return nil }
        var value = 0
        for byte in bytes[range] {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    /// 1...12 for an English month abbreviation, already lowercase.
    private static func month(_ name: String) -> Int? {
        months.firstIndex(of: name).map { $0 + 1 }
    }

    /// A two-digit RFC 850 year read as RFC 9110 says: never more than 50 years ahead of `now`.
    private static func year(twoDigits value: Int, now: Date) -> Int {
        let current = 1970 + Int(now.timeIntervalSince1970 / (365.2425 * 86_400))
        var year = current - current % 100 + value
        if year > current + 50 { year -= 100 }
        return year
    }

    /// The UTC moment of a calendar date and an `HH:MM:SS` time; `nil` when out of range or not in
    /// that shape.
    private static func moment(year: Int, month: Int, day: Int, time: ArraySlice<UInt8>) -> Date? {
        let time = Array(time)
        guard time.count == 8, time[2] == 0x3A, time[5] == 0x3A, let hour = number(time, 0..<2),
              let minute = number(time, 3..<5), let second = number(time, 6..<8),
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
