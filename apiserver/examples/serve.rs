//! Runs the API server until Ctrl-C: `cargo run -p windlass-apiserver --example serve -- KUBECONFIG [DATA_DIR]`.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let kubeconfig = args.next().unwrap_or_else(|| "kubeconfig.yaml".into());
    let mut config = windlass_apiserver::Config::new();
    if let Some(dir) = args.next() {
        config = config.data_dir(dir.into());
    }
    let server = windlass_apiserver::start(config).await?;
    server.write_kubeconfig(std::path::Path::new(&kubeconfig))?;
    println!("serving on {}, kubeconfig in {kubeconfig}", server.url());
    tokio::signal::ctrl_c().await?;
    server.shutdown().await;
    Ok(())
}
