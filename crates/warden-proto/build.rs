//! Compiles the `.proto` files in pure Rust (protox): no `protoc` is needed.
//! Also writes the public API's encoded `FileDescriptorSet`
//! (`warden_v1_descriptor.bin`, [`crate::FILE_DESCRIPTOR_SET`]) for gRPC
//! server reflection; the internal peer API is left out of it.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let public = [
        "proto/warden.proto",
        "proto/lease.proto",
        "proto/watch.proto",
        "proto/admin.proto",
    ];
    let protos = [
        public[0],
        public[1],
        public[2],
        public[3],
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
    let reflected = protox::Compiler::new(["proto"])?
        .include_imports(true)
        .include_source_info(false)
        .open_files(public)?
        .encode_file_descriptor_set();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("warden_v1_descriptor.bin"), reflected)?;
    Ok(())
}
