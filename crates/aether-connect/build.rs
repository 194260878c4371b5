//! Compiles Aether's Spark Connect `.proto` subset with `protox` (pure Rust, no system
//! `protoc`) and generates the prost messages and the tonic service from its descriptors.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["spark/connect/base.proto"];
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    println!("cargo:rerun-if-changed=proto");
    Ok(())
}
