//! Temporary: run one node. Args: ID PORT_BASE DIR
use std::collections::BTreeMap;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let id: u64 = a[1].parse().unwrap();
    let base: u16 = a[2].parse().unwrap();
    let mut peers = BTreeMap::new();
    for i in 1..=3u64 {
        peers.insert(i, format!("127.0.0.1:{}", base + i as u16));
    }
    let cfg = warden_server::ServerConfig {
        node_id: id,
        listen: format!("127.0.0.1:{}", base + id as u16).parse().unwrap(),
        peers,
        data_dir: a[3].clone().into(),
        initial_cluster_state_new: false,
        timing: Default::default(),
    };
    tracing_subscriber::fmt()
        .with_env_filter("info,openraft=warn")
        .with_writer(std::io::stderr)
        .init();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let r = rt.block_on(warden_server::run(cfg, async {
        let _ = tokio::signal::ctrl_c().await;
    }));
    eprintln!("exit: {r:?}");
}
