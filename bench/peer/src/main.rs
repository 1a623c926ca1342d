//! `windlass-peer [--namespace NS]`: runs the kube-rs ReplicaSet peer
//! against the cluster of the usual kubeconfig (`KUBECONFIG`,
//! `~/.kube/config`, in-cluster) until Ctrl-C.

use anyhow::{Context, bail};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let mut config = windlass_peer::replicaset::Config::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--namespace" | "-n" => {
                config.namespace = Some(args.next().context("--namespace needs a value")?)
            }
            "--help" | "-h" => {
                println!("usage: windlass-peer [--namespace NS]");
                return Ok(());
            }
            other => bail!("unknown argument {other:?} (usage: windlass-peer [--namespace NS])"),
        }
    }
    let client = kube::Client::try_default()
        .await
        .context("no usable kubeconfig")?;
    let peer = windlass_peer::replicaset::start(client, config).await;
    tracing::info!("windlass-peer running; Ctrl-C stops it");
    tokio::signal::ctrl_c().await?;
    peer.shutdown().await;
    Ok(())
}
