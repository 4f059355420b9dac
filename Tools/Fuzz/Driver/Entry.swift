#if canImport(Glibc)
import Glibc
#endif
import ReelFuzzTargets

/// The target REEL_FUZZ_TARGET names, read once.
let selectedTarget: FuzzTarget = {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
    guard let name = getenv("REEL_FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTarget(rawValue: name) else {
        print("set REEL_FUZZ_TARGET to one of: \(names)")
        exit(64)
    }
    return target
}()

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    _ = selectedTarget
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    selectedTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
