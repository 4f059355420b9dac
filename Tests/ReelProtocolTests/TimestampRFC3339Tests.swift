import ReelCore
import ReelProtocol
import Testing

/// The wire form of action times, against values computed independently (Python's datetime).
struct TimestampRFC3339Tests {
    /// (nanoseconds since 1970, RFC 3339 text).
    static let known: [(Int64, String)] = [
        (0, "1970-01-01T00:00:00.000000000Z"),
        (1, "1970-01-01T00:00:00.000000001Z"),
        (999_999_999, "1970-01-01T00:00:00.999999999Z"),
        (1_795_273_445_123_456_789, "2026-11-21T15:04:05.123456789Z"),
        // A leap day in a year divisible by 4, and in one divisible by 400.
        (1_709_210_096_000_000_001, "2024-02-29T12:34:56.000000001Z"),
        (951_868_799_999_000_000, "2000-02-29T23:59:59.999000000Z"),
        // Before 1970: the fraction counts forward from the second before.
        (-1, "1969-12-31T23:59:59.999999999Z"),
        (-1_000_000_000, "1969-12-31T23:59:59.000000000Z"),
        (-14_182_940_000_000_000, "1969-07-20T20:17:40.000000000Z"),
        // 1900 is not a leap year: 1 March follows 28 February.
        (-2_203_891_200_000_000_000, "1900-03-01T00:00:00.000000000Z"),
        (.max, "2262-04-11T23:47:16.854775807Z"),
        (.min, "1677-09-21T00:12:43.145224192Z"),
    ]

    @Test(arguments: known)
    func formatsKnownValues(nanoseconds: Int64, text: String) {
        #expect(Timestamp(nanosecondsSince1970: nanoseconds).rfc3339 == text)
    }

    @Test(arguments: known)
    func parsesWhatItFormats(nanoseconds: Int64, text: String) {
        #expect(Timestamp(rfc3339: text) == Timestamp(nanosecondsSince1970: nanoseconds))
    }

    @Test func textOrderIsTimeOrder() {
        let times: [Int64] = [.min, -2_203_891_200_000_000_000, -1, 0, 1, 999_999_999, 1_000_000_000, .max]
        let texts = times.map { Timestamp(nanosecondsSince1970: $0).rfc3339 }
        #expect(texts == texts.sorted())
        #expect(Set(texts.map(\.utf8.count)) == [30])
    }

    @Test func everyDayFrom1900To2262RoundTrips() {
        // 1900-01-01 to 2262-01-01 in steps of a day and a few seconds, so every date and many times
        // of day go through both directions.
        var nanoseconds: Int64 = -2_208_988_800 * 1_000_000_000
        var previous = ""
        while nanoseconds < 9_214_646_400 * 1_000_000_000 {
            let text = Timestamp(nanosecondsSince1970: nanoseconds).rfc3339
            #expect(text > previous)
            #expect(Timestamp(rfc3339: text)?.nanosecondsSince1970 == nanoseconds, "\(text)")
            previous = text
            nanoseconds += 86_407_000_000_123
        }
    }

    @Test func readsOtherRFC3339Spellings() {
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00Z")?.nanosecondsSince1970 == 0)
        #expect(Timestamp(rfc3339: "1970-01-01t00:00:00z")?.nanosecondsSince1970 == 0)
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00.5Z")?.nanosecondsSince1970 == 500_000_000)
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00.123Z")?.nanosecondsSince1970 == 123_000_000)
        #expect(Timestamp(rfc3339: "1970-01-01T02:00:00+02:00")?.nanosecondsSince1970 == 0)
        #expect(Timestamp(rfc3339: "1969-12-31T19:30:00-04:30")?.nanosecondsSince1970 == 0)
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00-00:00")?.nanosecondsSince1970 == 0)
    }

    @Test(arguments: [
        "",
        "1970-01-01",
        "1970-01-01T00:00:00",  // no zone
        "1970-01-01 00:00:00Z",  // space instead of T
        "1970-1-01T00:00:00Z",
        "1970-01-01T00:00:00.Z",  // empty fraction
        "1970-01-01T00:00:00.1234567891Z",  // more than nanoseconds
        "1970-01-01T00:00:00ZZ",
        "1970-01-01T00:00:00+0200",
        "1970-01-01T00:00:00+24:00",
        "1970-13-01T00:00:00Z",
        "1970-00-01T00:00:00Z",
        "1970-01-00T00:00:00Z",
        "1970-04-31T00:00:00Z",
        "2023-02-29T00:00:00Z",  // not a leap year
        "1900-02-29T00:00:00Z",  // not a leap year either
        "1970-01-01T24:00:00Z",
        "1970-01-01T00:60:00Z",
        "2016-12-31T23:59:60Z",  // a leap second: Unix time has none
        "2262-04-11T23:47:16.854775808Z",  // one nanosecond past Int64.max
        "1677-09-21T00:12:43.145224191Z",  // one nanosecond before Int64.min
        "+1970-01-01T00:00:00Z",
        "1970-01-01T00:00:00Z\n",
    ])
    func refusesWhatIsNotAnRFC3339Time(text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }
}
