//! Compiles `proto/onnx.proto` into Rust types with `protox` (a pure-Rust protobuf compiler), so no
//! system `protoc` is needed. Byte fields become `bytes::Bytes` so tensor data can borrow from a
//! memory map instead of being copied.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    let fds = protox::compile(["onnx.proto"], ["proto"])?;
    let mut config = prost_build::Config::new();
    config.bytes(["."]);
    config.compile_fds(fds)?;
    Ok(())
}
