import Configuration
import Synchronization

/// Reads settings as text through one swift-configuration `ConfigReader` over the providers in
/// order of precedence, and tells for each value which provider supplied it: an access reporter
/// receives every lookup's per-provider results, and the first provider with a value (or with an
/// error) is the source. Messages can then say "from environment variable REEL_SOCKET".
struct SettingsReader {
    /// One source of settings, in order of precedence.
    enum Kind {
        case flags
        case environment
        case configFile(path: String)

        func source(of setting: Setting) -> SettingSource {
            switch self {
            case .flags: .flag(setting.flag)
            case .environment: .environment(setting.environmentVariable)
            case .configFile(let path): .configFile(path: path, key: setting.name)
            }
        }
    }

    private let providers: [any ConfigProvider]
    private let kinds: [Kind]
    private let recorder = LookupRecorder()
    private let reader: ConfigReader

    init(_ layers: [(any ConfigProvider, Kind)]) {
        providers = layers.map(\.0)
        kinds = layers.map(\.1)
        reader = ConfigReader(providers: providers, accessReporter: recorder)
    }

    /// The reader with one more provider of lower precedence than all the others.
    func appending(_ provider: any ConfigProvider, _ kind: Kind) -> SettingsReader {
        SettingsReader(Array(zip(providers, kinds)) + [(provider, kind)])
    }

    /// The setting's text and where it came from, or `nil` when no provider has it.
    ///
    /// A config file value that is not a string (a JSON number or boolean, a YAML or JSON list) is
    /// turned into text: `10000`, `true`, `1000,@reel`.
    func text(_ setting: Setting) throws(StartupError) -> (text: String, source: SettingSource)? {
        let key = ConfigKey(setting.name)
        let value = reader.string(forKey: key)
        guard let event = recorder.take() else { return value.map { ($0, kinds[0].source(of: setting)) } }
        for (index, providerResult) in event.providerResults.enumerated() where index < kinds.count {
            let source = kinds[index].source(of: setting)
            switch providerResult.result {
            case .success(let lookup):
                guard lookup.value != nil else { continue }
                guard let value else { throw invalid(setting, source, "text") }
                return (value, source)
            case .failure:
                // Not a string: ask the same provider for the other shapes a file may hold.
                if let text = alternativeText(for: AbsoluteConfigKey([setting.name]), from: providers[index]) {
                    return (text, source)
                }
                throw invalid(setting, source, "a single value or a list of values")
            }
        }
        return nil
    }

    private func alternativeText(for key: AbsoluteConfigKey, from provider: any ConfigProvider) -> String? {
        for type in [ConfigType.int, .double, .bool, .stringArray, .intArray] {
            guard let content = try? provider.value(forKey: key, type: type).value?.content else { continue }
            switch content {
            case .int(let int): return String(int)
            case .double(let double): return double.formatted
            case .bool(let bool): return String(bool)
            case .stringArray(let strings): return strings.joined(separator: ",")
            case .intArray(let ints): return ints.map(String.init).joined(separator: ",")
            default: continue
            }
        }
        return nil
    }

    private func invalid(_ setting: Setting, _ source: SettingSource, _ expected: String) -> StartupError {
        StartupError(.invalidSetting, "\(setting.name) from \(source) is invalid: expected \(expected)")
    }
}

/// Keeps the last lookup's event. Reads happen one at a time during loading, so "last" is the
/// lookup just made.
private final class LookupRecorder: AccessReporter, Sendable {
    private let last = Mutex<AccessEvent?>(nil)

    func report(_ event: AccessEvent) {
        last.withLock { $0 = event }
    }

    func take() -> AccessEvent? {
        last.withLock { event in
            defer { event = nil }
            return event
        }
    }
}
