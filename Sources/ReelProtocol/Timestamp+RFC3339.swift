import ReelCore

// The wire form of action times: RFC 3339 in UTC with exactly nine fractional digits,
// "2026-11-21T15:04:05.123456789Z". Chosen over a number of nanoseconds because people read
// `history` through `socat` and `reel log --json`, and over a shorter fraction because it keeps
// every nanosecond of the envelope. The fixed width makes text order equal time order for
// every Int64 time (years 1677 to 2262), so logs sort correctly as plain strings.
//
// Written without Foundation: the calendar arithmetic is Howard Hinnant's days-from-civil and
// civil-from-days (proleptic Gregorian, no leap seconds, as Unix time has none).

extension Timestamp {
    /// The time as RFC 3339 in UTC with nine fractional digits, such as
    /// `"2026-11-21T15:04:05.123456789Z"`; times before 1970 work too (`"1969-12-31T23:59:59.999999999Z"`).
    public var rfc3339: String {
        let nanosPerSecond: Int64 = 1_000_000_000
        // Floor division, so that the fraction of a time before 1970 counts forward from the
        // second before it, as calendar time does.
        let (seconds, fraction) = Self.floorDivide(nanosecondsSince1970, nanosPerSecond)
        let (days, secondOfDay) = Self.floorDivide(seconds, 86_400)
        let (year, month, day) = Self.civil(fromDays: days)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(30)
        func digits(_ value: Int64, _ width: Int) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            var value = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") &+ UInt8(value / divisor))
                value %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        bytes.append(UInt8(ascii: "."))
        digits(fraction, 9)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads an RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1 to 9
    /// digits, then `Z` or an offset `±HH:MM`. `t` and `z` may be lowercase (RFC 3339 section 5.6).
    ///
    /// - Parameter text: The date-time.
    /// - Returns: `nil` when `text` is not such a date-time, names a day that does not exist, has a
    ///   leap second (`:60`, which Unix time cannot hold), has more than nine fractional digits,
    ///   or lies outside the Int64 nanosecond range (1677-09-21 to 2262-04-11).
    public init?(rfc3339 text: String) {
        var text = text
        guard let time = text.withUTF8({ Timestamp(rfc3339: UnsafeRawBufferPointer($0)) }) else { return nil }
        self = time
    }

    /// Reads an RFC 3339 date-time from its UTF-8 bytes, by the rules of the initializer from text.
    public init?(rfc3339 bytes: UnsafeRawBufferPointer) {
        var index = 0
        // (Inlined: called as functions, the two were a third of reading a time.)
        @inline(__always) func number(_ width: Int) -> Int64? {
            guard index + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for offset in index..<index + width {
                let digit = bytes[offset] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            index += width
            return value
        }
        @inline(__always) func expect(_ allowed: StaticString) -> Bool {
            guard index < bytes.count else { return false }
            let byte = bytes[index]
            for k in 0..<allowed.utf8CodeUnitCount where allowed.utf8Start[k] == byte {
                index += 1
                return true
            }
            return false
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt"), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }
        var fraction: Int64 = 0
        if expect(".") {
            var count = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                count += 1
                guard count <= 9 else { return nil }
                fraction = fraction * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            guard count > 0 else { return nil }
            for _ in count..<9 { fraction *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if !expect("Zz") {
            guard index < bytes.count else { return nil }
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard expect("+-"), let offsetHour = number(2), expect(":"), let offsetMinute = number(2),
                offsetHour <= 23, offsetMinute <= 59
            else { return nil }
            offsetSeconds = sign * (offsetHour * 3600 + offsetMinute * 60)
        }
        guard index == bytes.count else { return nil }
        // Years have four digits, so the seconds fit Int64 with room to spare; only the final
        // scaling to nanoseconds can overflow. Before 1970 the fraction is added to the *next*
        // second scaled, minus one second, so that 1677-09-21T00:12:43.145224192Z (Int64.min)
        // never passes through a product below Int64.min.
        let seconds = Self.days(year: year, month: month, day: day) * 86_400
            + hour * 3600 + minute * 60 + second - offsetSeconds
        let (whole, part) = seconds < 0 && fraction > 0 ? (seconds + 1, fraction - 1_000_000_000) : (seconds, fraction)
        let (scaled, overflow) = whole.multipliedReportingOverflow(by: 1_000_000_000)
        let (nanoseconds, overflow2) = scaled.addingReportingOverflow(part)
        guard !overflow, !overflow2 else { return nil }
        self.init(nanosecondsSince1970: nanoseconds)
    }

    /// `(quotient, remainder)` rounded towards negative infinity, so the remainder is never negative.
    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let quotient = value / divisor
        let remainder = value % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (day 0).
    private static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        // Shift the epoch to 0000-03-01 so that leap days fall at the end of each year, then count
        // in 400-year eras of 146097 days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0 = March … 11 = February
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    /// The day counted from 1970-01-01 (day 0) of a proleptic Gregorian date; inverse of `civil`.
    private static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
