//! Compiles `proto/onnx.proto` into Rust types with `protox` (a pure-Rust protobuf compiler), so no
//! system `protoc` is needed. Byte fields become `bytes::Bytes` so tensor data can borrow from a
//! memory map instead of being copied.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    let fds = protox::compile(["onnx.proto"], ["proto"])?;
    let mut config = prost_build::Config::new();
    config.bytes(["."]);
    // An attribute holds at most one of these; inline they made every AttributeProto 1.7 KB
    // (a model with a few attributes per node spent most of its memory on empty slots).
    for field in ["t", "g", "sparse_tensor", "tp"] {
        config.boxed(format!(".onnx.AttributeProto.{field}"));
    }
    config.compile_fds(fds)?;
    Ok(())
}
