//! The `windlass` command line: parses arguments, sets up logging, runs one command.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use windlass::offline::{StaticCache, request_for};
use windlass::runtime::{Runtime, RuntimeConfig};

#[derive(Parser)]
#[command(
    name = "windlass",
    version,
    about = "A Kubernetes controller host for WebAssembly plugins"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Work with one plugin file, offline.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Serve the embedded Kubernetes-compatible API server.
    Apiserver(ApiserverArgs),
    /// Run the host: load the plugins and reconcile against an API server.
    Run(RunArgs),
    /// List the plugins a running host has loaded (from its admin endpoint).
    Plugins {
        /// The host's --admin address.
        #[arg(long, default_value = "127.0.0.1:9464", value_name = "ADDR")]
        admin: std::net::SocketAddr,
    },
}

#[derive(Args)]
struct RunArgs {
    /// Directory of plugin components (`*.wasm`).
    #[arg(long, default_value = "plugins", value_name = "DIR")]
    plugins: PathBuf,
    /// Kubeconfig of the cluster (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long, value_name = "FILE", conflicts_with = "embedded")]
    kubeconfig: Option<PathBuf>,
    /// Start the embedded API server in this process and use it.
    #[arg(long)]
    embedded: bool,
    /// With --embedded: keep its state durably in this directory.
    #[arg(long, value_name = "DIR", requires = "embedded")]
    data: Option<PathBuf>,
    /// With --embedded and --data: what an acknowledged write survives.
    /// `process`: a crash or `kill -9` of this process. `power-loss`: also an
    /// OS crash or power loss (an fsync per group commit; slower).
    #[arg(
        long,
        default_value = "process",
        value_name = "MODE",
        requires = "embedded"
    )]
    durability: windlass_apiserver::Durability,
    /// With --embedded: the address it listens on (port 0 picks a free one).
    #[arg(
        long,
        default_value = "127.0.0.1:6443",
        value_name = "ADDR",
        requires = "embedded"
    )]
    listen: std::net::SocketAddr,
    /// With --embedded: write a kubeconfig for it here, for kubectl.
    #[arg(long, value_name = "FILE", requires = "embedded")]
    write_kubeconfig: Option<PathBuf>,
    /// Serve /metrics, /healthz, /readyz and /plugins here: `HOST:PORT`,
    /// or a bare `PORT` (or `:PORT`), which binds loopback only.
    #[arg(long, value_name = "ADDR", value_parser = admin_addr)]
    admin: Option<std::net::SocketAddr>,
    /// Seconds in-flight reconciles get to finish at shutdown.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    grace: u64,
    /// Run several replicas: only the holder of a coordination.k8s.io Lease
    /// reconciles; the others stand by and take over when it goes.
    #[arg(long)]
    leader_elect: bool,
    /// With --leader-elect: the Lease's namespace (default: this pod's
    /// namespace in a cluster, else `default`).
    #[arg(long, value_name = "NAMESPACE", requires = "leader_elect")]
    leader_elect_namespace: Option<String>,
    /// With --leader-elect: the Lease's name; replicas sharing it elect one leader.
    #[arg(
        long,
        default_value = "windlass",
        value_name = "NAME",
        requires = "leader_elect"
    )]
    leader_elect_name: String,
    /// Keep precompiled plugins here (created private, mode 700; in a
    /// container, a directory under a writable volume).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    #[command(flatten)]
    limits: Limits,
}

impl RunArgs {
    fn lease(&self) -> windlass::leader::LeaseConfig {
        let namespace = self.leader_elect_namespace.clone().unwrap_or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                .ok()
                .map(|ns| ns.trim().to_owned())
                .filter(|ns| !ns.is_empty())
                .unwrap_or_else(|| "default".to_owned())
        });
        windlass::leader::LeaseConfig::new(
            &namespace,
            &self.leader_elect_name,
            &windlass::leader::default_identity(),
        )
    }
}

#[derive(Args)]
struct ApiserverArgs {
    /// Address to listen on; port 0 picks a free one. Non-loopback addresses
    /// are served over HTTPS (a self-signed CA, written to the kubeconfig)
    /// and require a bearer token (generated, and written to the kubeconfig).
    #[arg(long, default_value = "127.0.0.1:6443", value_name = "ADDR")]
    listen: std::net::SocketAddr,
    /// Keep state durably in this directory (SQLite).
    #[arg(long, value_name = "DIR", conflicts_with = "in_memory")]
    data: Option<PathBuf>,
    /// With --data: what an acknowledged write survives. `process`: a crash
    /// or `kill -9` of the server. `power-loss`: also an OS crash or power
    /// loss (an fsync per group commit; slower).
    #[arg(
        long,
        default_value = "process",
        value_name = "MODE",
        conflicts_with = "in_memory"
    )]
    durability: windlass_apiserver::Durability,
    /// Keep state in memory only.
    #[arg(long)]
    in_memory: bool,
    /// Write a kubeconfig for this server here (with the real port).
    #[arg(long, value_name = "FILE")]
    write_kubeconfig: Option<PathBuf>,
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Print a plugin's manifest as JSON.
    Inspect {
        /// The plugin component (`.wasm`).
        file: PathBuf,
        #[command(flatten)]
        limits: Limits,
    },
    /// Run one reconcile offline and print the outcome as JSON.
    Reconcile {
        /// The plugin component (`.wasm`).
        file: PathBuf,
        /// The primary object (YAML or JSON).
        #[arg(long, value_name = "FILE")]
        object: PathBuf,
        /// Owned children to pass in the request (YAML or JSON; repeatable).
        #[arg(long, value_name = "FILE")]
        owned: Vec<PathBuf>,
        /// More objects the plugin may read through its cache (repeatable).
        #[arg(long, value_name = "FILE")]
        cache: Vec<PathBuf>,
        /// Call `finalize` instead of `reconcile`.
        #[arg(long)]
        finalize: bool,
        #[command(flatten)]
        limits: Limits,
    },
    /// Print the least-privilege RBAC the plugins need (YAML for kubectl apply).
    Rbac(RbacArgs),
    /// Create a plugin crate that builds and tests out of the box.
    New {
        /// The plugin's name (a DNS label): the crate's and the manifest's.
        name: String,
        /// Where to create it (default: ./NAME).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Depend on the SDK of a windlass checkout (its `guest-sdk` directory)
        /// instead of the windlass repository at this release.
        #[arg(long, value_name = "DIR")]
        sdk_path: Option<PathBuf>,
    },
}

#[derive(Args)]
struct RbacArgs {
    /// The plugin components (`.wasm`).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The namespace of the ServiceAccount the host runs as.
    #[arg(long, default_value = "windlass", value_name = "NS")]
    namespace: String,
    /// The ServiceAccount the host runs as.
    #[arg(long, default_value = "windlass", value_name = "NAME")]
    service_account: String,
    /// The roles' and bindings' name (default: windlass-plugin-NAME for one
    /// plugin, windlass-plugins for several).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Ask this cluster for kinds the built-in table does not know (CRDs).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    limits: Limits,
}

#[derive(Args)]
struct Limits {
    /// Deadline of one plugin call, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    timeout_ms: u64,
    /// Memory one plugin call may use, in MiB.
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    memory_mib: usize,
}

impl Limits {
    fn runtime_config(&self) -> RuntimeConfig {
        RuntimeConfig {
            call_timeout: Duration::from_millis(self.timeout_ms),
            memory_limit: self.memory_mib << 20,
            ..RuntimeConfig::default()
        }
    }

    fn runtime(&self) -> anyhow::Result<Runtime> {
        Runtime::new(RuntimeConfig {
            max_instances: 4,
            ..self.runtime_config()
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(run_host(args))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins { admin } => {
            let runtime = tokio::runtime::Runtime::new()?;
            let body = runtime.block_on(http_get(admin, "/plugins"))?;
            let rows: Vec<serde_json::Value> = serde_json::from_str(&body)
                .with_context(|| format!("{admin} did not answer /plugins with JSON"))?;
            print!("{}", plugins_table(&rows));
            Ok(ExitCode::SUCCESS)
        }
        Command::Apiserver(args) => {
            let runtime = tokio::runtime::Runtime::new()?;
            runtime.block_on(serve_apiserver(args))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugin(PluginCommand::Inspect { file, limits }) => {
            let plugin = limits.runtime()?.load_file(&file)?;
            println!("{}", serde_json::to_string_pretty(plugin.manifest())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugin(PluginCommand::New {
            name,
            dir,
            sdk_path,
        }) => {
            let sdk = match sdk_path {
                Some(p) => windlass::scaffold::SdkSource::Path(std::path::absolute(p)?),
                None => windlass::scaffold::SdkSource::release(),
            };
            let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
            windlass::scaffold::create(&dir, &name, &sdk)?;
            eprintln!(
                "created {}: cd there, then `cargo test` and `cargo build --target wasm32-wasip2 --release`",
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugin(PluginCommand::Rbac(args)) => {
            print!("{}", plugin_rbac(args)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugin(PluginCommand::Reconcile {
            file,
            object,
            owned,
            cache,
            finalize,
            limits,
        }) => {
            let plugin = limits.runtime()?.load_file(&file)?;
            let primary = single_object(&object)?;
            let mut children = Vec::new();
            for f in &owned {
                children.extend(windlass::objects::read_objects(f)?);
            }
            let mut store = StaticCache::new();
            for f in &cache {
                for o in windlass::objects::read_objects(f)? {
                    store.insert(o);
                }
            }
            // What the request carries is in the cache too, as on a cluster.
            store.insert(primary.clone());
            for child in &children {
                store.insert(child.clone());
            }
            store.index_for(&plugin)?;
            let request = request_for(&primary, &children).with_context(|| {
                format!(
                    "{}: the object has no apiVersion, kind or name",
                    object.display()
                )
            })?;
            let cache = Arc::new(store);
            let result = if finalize {
                plugin.finalize(&request, cache)
            } else {
                plugin.reconcile(&request, cache)
            };
            match result {
                Ok(outcome) => {
                    println!("{}", serde_json::to_string_pretty(&outcome)?);
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    let body = serde_json::json!({"error": {"message": e.to_string(), "retry": e.retry()}});
                    println!("{}", serde_json::to_string_pretty(&body)?);
                    eprintln!("error: {e}");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}

async fn run_host(args: RunArgs) -> anyhow::Result<()> {
    let mut embedded = None;
    let client = if args.embedded {
        let server = start_server(
            args.listen,
            args.data.as_deref(),
            args.durability,
            args.write_kubeconfig.as_deref(),
        )
        .await?;
        let client =
            windlass::client::ApiClient::from_kubeconfig_yaml(&server.kubeconfig()).await?;
        embedded = Some(server);
        client
    } else {
        windlass::client::ApiClient::from_kubeconfig(args.kubeconfig.as_deref())
            .await
            .context("no usable kubeconfig (use --kubeconfig FILE, KUBECONFIG, or --embedded)")?
    };
    let host = std::sync::Arc::new(windlass::host::Host::new(
        client.clone(),
        windlass::host::HostConfig {
            runtime: windlass::runtime::RuntimeConfig {
                artifact_dir: args
                    .cache_dir
                    .clone()
                    .or(args.limits.runtime_config().artifact_dir),
                ..args.limits.runtime_config()
            },
            grace: Duration::from_secs(args.grace),
            ..Default::default()
        },
    )?);
    let _admin = match args.admin {
        Some(addr) => {
            let (bound, task) = windlass::admin::serve(addr, host.clone())
                .await
                .with_context(|| format!("cannot serve the admin endpoint on {addr}"))?;
            tracing::info!(addr = %bound, "admin endpoint: /metrics /healthz /readyz /plugins");
            Some(task)
        }
        None => None,
    };
    let shutdown = windlass::shutdown::signal();
    tokio::pin!(shutdown);
    let mut elector = args
        .leader_elect
        .then(|| windlass::leader::Elector::new(client.clone(), args.lease()));
    if let Some(elector) = &mut elector {
        let lease = elector.config();
        tracing::info!(lease = %format!("{}/{}", lease.namespace, lease.name), identity = %lease.identity, "waiting to become the leader");
        tokio::select! {
            () = elector.acquire() => {}
            () = &mut shutdown => {
                tracing::info!("shutting down before becoming the leader");
                stop_embedded(embedded).await;
                return Ok(());
            }
        }
    }
    // Load the plugins and run until asked to stop; with leader election,
    // the lease is renewed all along (loading can outlast a lease).
    let work = async {
        let plugins = windlass::plugin_dir::PluginDir::watch(&args.plugins, host.clone())
            .await
            .with_context(|| {
                format!(
                    "cannot watch the plugins directory {}",
                    args.plugins.display()
                )
            })?;
        (&mut shutdown).await;
        anyhow::Ok(plugins)
    };
    let lost = match &mut elector {
        Some(elector) => match elector.lead(work).await {
            Ok(done) => {
                done?;
                None
            }
            Err(lost) => Some(lost),
        },
        None => {
            work.await?;
            None
        }
    };
    if let Some(lost) = lost {
        // Another replica may lead as soon as the lease runs out: stop
        // reconciling now, abandoning what is in flight, as
        // kube-controller-manager exits at once.
        tracing::error!(%lost, "lost leadership: stopping every reconcile now");
        host.abandon().await;
        stop_embedded(embedded).await;
        bail!("lost leadership: {lost}");
    }
    tracing::info!("shutting down: finishing in-flight reconciles");
    host.shutdown().await;
    if let Some(elector) = &mut elector {
        elector.release().await;
    }
    stop_embedded(embedded).await;
    Ok(())
}

/// `windlass plugin rbac`: the plugins' manifests, resolved offline or
/// through `--kubeconfig`, as RBAC YAML.
fn plugin_rbac(args: RbacArgs) -> anyhow::Result<String> {
    use windlass::rbac;
    let runtime = args.limits.runtime()?;
    let mut manifests = Vec::new();
    for file in &args.files {
        manifests.push(runtime.load_file(file)?.manifest().clone());
    }
    let (found, hint) = match &args.kubeconfig {
        Some(path) => tokio::runtime::Runtime::new()?.block_on(async {
            let client = windlass::client::ApiClient::from_kubeconfig(Some(path)).await?;
            anyhow::Ok((rbac::discover(client, &manifests).await?, rbac::SERVER_HINT))
        })?,
        None => (Default::default(), rbac::OFFLINE_HINT),
    };
    let lookup =
        |k: &windlass::contract::KindRef| rbac::builtin(k).or_else(|| found.get(k).cloned());
    let rules = rbac::rules(&manifests, &lookup, hint)?;
    let mut binding = rbac::Binding::for_plugins(&manifests);
    binding.namespace = args.namespace;
    binding.service_account = args.service_account;
    binding.name = args.name.unwrap_or(binding.name);
    Ok(rbac::render(&manifests, &rules, &binding))
}

async fn stop_embedded(server: Option<windlass_apiserver::RunningServer>) {
    if let Some(server) = server {
        server.shutdown().await;
    }
}

/// Starts the API server (durable in `data`, else in memory) and writes a
/// kubeconfig for it when asked.
async fn start_server(
    listen: std::net::SocketAddr,
    data: Option<&std::path::Path>,
    durability: windlass_apiserver::Durability,
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<windlass_apiserver::RunningServer> {
    let config = windlass_apiserver::Config::new().listen(listen);
    let config = match data {
        Some(dir) => config.data_dir(dir.to_path_buf()).durability(durability),
        None => config.in_memory(),
    };
    let server = windlass_apiserver::start(config).await?;
    if let Some(path) = kubeconfig {
        server
            .write_kubeconfig(path)
            .with_context(|| format!("writing kubeconfig to {}", path.display()))?;
        tracing::info!(kubeconfig = %path.display(), "wrote kubeconfig for the API server");
    }
    tracing::info!(url = %server.url(), "API server listening");
    Ok(server)
}

async fn serve_apiserver(args: ApiserverArgs) -> anyhow::Result<()> {
    if args.data.is_none() && !args.in_memory {
        tracing::warn!("no --data DIR given: state is kept in memory and lost on exit");
    }
    let server = start_server(
        args.listen,
        args.data.as_deref(),
        args.durability,
        args.write_kubeconfig.as_deref(),
    )
    .await?;
    windlass::shutdown::signal().await;
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}

/// `--admin`: an address as given, or a bare port on loopback (the admin
/// endpoint tells anyone who can reach it about every plugin, so it is
/// exposed beyond this machine only when asked for).
fn admin_addr(value: &str) -> Result<std::net::SocketAddr, String> {
    let port = value.strip_prefix(':').unwrap_or(value);
    if let Ok(port) = port.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    value
        .parse()
        .map_err(|_| format!("{value:?} is neither HOST:PORT nor a port"))
}

/// A plain HTTP GET of a local admin endpoint.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| {
            format!(
                "no windlass admin endpoint at {addr} (start it with `windlass run --admin {addr}`)"
            )
        })?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("malformed HTTP response")?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!("{addr}{path}: {}", head.lines().next().unwrap_or_default());
    }
    Ok(body.to_owned())
}

/// The rows of `/plugins` as an aligned table.
fn plugins_table(rows: &[serde_json::Value]) -> String {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "-".to_owned(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut table = vec![vec![
        "NAME".to_owned(),
        "VERSION".into(),
        "RECONCILES".into(),
        "SYNCED".into(),
        "QUEUE".into(),
        "RUNS".into(),
        "ERRORS".into(),
        "FILE".into(),
        "PROBLEM".into(),
    ]];
    for r in rows {
        table.push(vec![
            text(&r["name"]),
            text(&r["version"]),
            text(&r["reconciles"]),
            text(&r["synced"]),
            text(&r["queueReady"]),
            text(&r["reconcilesTotal"]),
            text(&r["failuresTotal"]),
            text(&r["file"]),
            text(&r["error"]),
        ]);
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| {
            table
                .iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &table {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn single_object(path: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    let mut objects = windlass::objects::read_objects(path)?;
    if objects.len() != 1 {
        bail!(
            "{}: expected exactly one object, found {}",
            path.display(),
            objects.len()
        );
    }
    Ok(objects.remove(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bare_admin_port_binds_loopback() {
        assert_eq!(
            super::admin_addr("9464").unwrap().to_string(),
            "127.0.0.1:9464"
        );
        assert_eq!(super::admin_addr(":0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(
            super::admin_addr("0.0.0.0:9464").unwrap().to_string(),
            "0.0.0.0:9464"
        );
        assert!(super::admin_addr("nowhere").is_err());
    }
}
