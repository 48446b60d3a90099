//! Compiles the `.proto` files in pure Rust (protox): no `protoc` is needed.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/warden.proto",
        "proto/lease.proto",
        "proto/watch.proto",
        "proto/admin.proto",
        "proto/peer.proto",
    ];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}
