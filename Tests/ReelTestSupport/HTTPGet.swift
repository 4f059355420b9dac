import Foundation

/// One HTTP/1.1 request over a plain socket (TCP or Unix), read to the end: enough to scrape a
/// metrics endpoint in tests without an HTTP client library or `curl`.
public enum HTTPGet {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: String
    }

    public enum Address: Sendable {
        case tcp(port: Int)
        case unix(path: String)
    }

    /// Sends `method path` with `Connection: close` (and `headers`, and `body` with its length)
    /// and reads the whole answer.
    public static func request(
        _ address: Address, path: String = "/metrics", method: String = "GET", headers: [String: String] = [:], body: String? = nil,
        readHeadOnly: Bool = false
    ) throws -> Response {
        let descriptor = try RawSocket.connect(address)
        defer { close(descriptor) }
        var request = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n" + (headers["Connection"] == nil ? "Connection: close\r\n" : "")
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        if let body { request += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        request += "\r\n" + (body ?? "")
        try RawSocket.send(descriptor, Array(request.utf8))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            received += buffer[0..<count]
            // An upgraded connection stays open: its head is all there is to read.
            if readHeadOnly, String(decoding: received, as: UTF8.self).contains("\r\n\r\n") { break }
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw SpawnError("no HTTP answer: \(text)") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
            let status = Int(statusLine.dropFirst("HTTP/1.1 ".count).prefix(3))
        else { throw SpawnError("not an HTTP status line: \(lines.first ?? "")") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = String(text[split.upperBound...])
        if headers["transfer-encoding"] == "chunked" { body = dechunked(body) }
        return Response(status: status, headers: headers, body: body)
    }

    /// The body of a chunked answer, its chunks joined.
    static func dechunked(_ text: String) -> String {
        var bytes = Array(text.utf8)[...]
        var body: [UInt8] = []
        while let lineEnd = bytes.firstIndex(of: UInt8(ascii: "\r")) {
            guard let size = Int(String(decoding: bytes[bytes.startIndex..<lineEnd], as: UTF8.self), radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            guard start + size <= bytes.endIndex else { break }
            body += bytes[start..<(start + size)]
            bytes = bytes[min(bytes.endIndex, start + size + 2)...]
        }
        return String(decoding: body, as: UTF8.self)
    }

    /// The value of a sample line `name{labels} value` (labels as written, such as `{mode="actions"}`).
    public static func sample(_ body: String, _ name: String) -> Double? {
        for line in body.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == name { return Double(parts[1]) }
        }
        return nil
    }
}

/// Plain blocking sockets, for tests that must hold a connection without reading it.
public enum RawSocket {
    public static func connect(_ address: HTTPGet.Address) throws -> Int32 {
        switch address {
        case .unix(let path): return try connectUnix(path)
        case .tcp(let port):
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard result == 0 else {
                close(descriptor)
                throw SpawnError("cannot connect to 127.0.0.1:\(port): errno \(errno)")
            }
            return descriptor
        }
    }

    /// Connects to a Unix socket; `receiveBuffer` shrinks the receive buffer (a peer that reads
    /// nothing then fills it sooner).
    public static func connectUnix(_ path: String, receiveBuffer: Int32? = nil) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SpawnError("socket: \(String(cString: strerror(errno)))") }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(descriptor)
            throw SpawnError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            close(descriptor)
            throw SpawnError("cannot connect to \(path): errno \(errno)")
        }
        return descriptor
    }

    public static func send(_ descriptor: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw SpawnError("write failed: errno \(errno)") }
            sent += count
        }
    }

    /// A TCP socket listening on a free port of 127.0.0.1 (close the descriptor when done).
    public static func listenTCP() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && listen(descriptor, 4) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw SpawnError("cannot listen on 127.0.0.1: errno \(errno)")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago.
    public static func freePort() throws -> Int {
        let (descriptor, port) = try listenTCP()
        close(descriptor)
        return port
    }
}
