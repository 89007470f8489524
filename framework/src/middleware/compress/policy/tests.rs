use super::is_compressible;

#[test]
fn compressible_types() {
    for ok in [
        "text/html; charset=utf-8",
        "application/json",
        "image/svg+xml",
        "application/javascript",
        "font/woff2",
        "application/wasm",
    ] {
        assert!(is_compressible(ok), "{ok}");
    }
    for no in [
        "image/png",
        "application/zip",
        "video/mp4",
        "application/octet-stream",
        "application/grpc",
        "application/grpc+json",
        "application/grpc-web+json",
    ] {
        assert!(!is_compressible(no), "{no}");
    }
}
