//! The `windlass` command line: parses arguments (`args.rs`), sets up
//! logging, runs one command.

mod args;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use args::{ApiserverArgs, BindAddr, Cli, Command, LogFormat, PluginCommand, RbacArgs, RunArgs};
use clap::{CommandFactory, Parser};
use windlass::offline::{StaticCache, request_for};

/// mimalloc rather than the C library's malloc: the host allocates and frees
/// small buffers on every event, call and request, and glibc's malloc (with
/// its fastbin consolidation) was about a fifth of its CPU in the chain
/// benchmark.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The log levels without `RUST_LOG`. kube's client logs every failed
/// request at ERROR with no more than the transport's words ("client error
/// (Connect)"); the host reports each failure itself, with the request and
/// what it does next, so that line only doubled every retry in an outage.
const DEFAULT_LOG: &str = "info,kube_client::client::builder=off";

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Text => logs.init(),
        // One JSON object a line: the event's fields at the top level, and
        // the spans it is in (a reconcile's plugin and key) under `spans`.
        LogFormat::Json => logs
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .init(),
    }
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
            runtime.block_on(run_host(*args))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "windlass",
                &mut std::io::stdout(),
            );
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
            let dir = dir.unwrap_or_else(|| std::path::PathBuf::from(&name));
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
    // Settings are checked before anything starts.
    let lease = args.leader_elect.then(|| args.lease()).transpose()?;
    let write_limit = args.write_limit()?;
    let mut embedded = None;
    let client = if args.embedded {
        let server = start_server(
            args.listen,
            args.data.as_deref(),
            args.durability,
            args.event_ttl,
            args.write_kubeconfig.as_deref(),
        )
        .await?;
        let client =
            windlass::client::ApiClient::from_kubeconfig_yaml(&server.kubeconfig()).await?;
        embedded = Some(server);
        client
    } else {
        windlass::client::ApiClient::from_kubeconfig_context(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
        )
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
            grace: args.grace,
            write_limit,
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
    let mut _listeners = Vec::new();
    for (flag, addr, endpoints) in [
        (
            "--metrics-bind-address",
            args.metrics_bind_address,
            windlass::admin::Endpoints::Metrics,
        ),
        (
            "--health-probe-bind-address",
            args.health_probe_bind_address,
            windlass::admin::Endpoints::Probes,
        ),
    ] {
        let Some(BindAddr(Some(addr))) = addr else {
            continue;
        };
        let (bound, task) = windlass::admin::serve_endpoints(addr, host.clone(), endpoints)
            .await
            .with_context(|| format!("cannot serve {flag} {addr}"))?;
        tracing::info!(addr = %bound, "{flag}: serving {endpoints:?}");
        _listeners.push(task);
    }
    let shutdown = windlass::shutdown::signal();
    tokio::pin!(shutdown);
    let mut elector = lease.map(|lease| windlass::leader::Elector::new(client.clone(), lease));
    if let Some(elector) = &mut elector {
        let lease = elector.config();
        let lease_name = lease.name.clone();
        host.set_leadership(&lease_name, false);
        tracing::info!(lease = %format!("{}/{}", lease.namespace, lease.name), identity = %lease.identity, "waiting to become the leader");
        tokio::select! {
            () = elector.acquire() => host.set_leadership(&lease_name, true),
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
        host.set_leadership(&args.leader_elect_name, false);
        host.abandon().await;
        stop_embedded(embedded).await;
        bail!("lost leadership: {lost}");
    }
    tracing::info!("shutting down: finishing in-flight reconciles");
    host.shutdown().await;
    if let Some(elector) = &mut elector {
        elector.release().await;
        host.set_leadership(&elector.config().name, false);
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
        manifests.extend(manifests_of(&runtime, file)?);
    }
    let (found, hint) = match &args.kubeconfig {
        Some(path) => tokio::runtime::Runtime::new()?.block_on(async {
            let client = windlass::client::ApiClient::from_kubeconfig_context(
                Some(path),
                args.context.as_deref(),
            )
            .await?;
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

/// The manifests a plugin file runs under: its own, or, with a
/// `NAME.instances.yaml` beside it, each instance's, as the host reshapes
/// them (the plugin asked with the instance's settings; its name, namespace,
/// selector and concurrency).
fn manifests_of(
    runtime: &windlass::runtime::Runtime,
    file: &std::path::Path,
) -> anyhow::Result<Vec<windlass::contract::Manifest>> {
    use windlass::instances;
    let base = runtime.load_file(file)?;
    let sidecar = instances::file_for(file);
    let text = match std::fs::read_to_string(&sidecar) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(vec![base.manifest().clone()]);
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", sidecar.display())),
    };
    let named = |e: String| anyhow::anyhow!("{}: {e}", sidecar.display());
    let mut out = Vec::new();
    for instance in instances::parse(&text).map_err(named)? {
        let plugin = base.instance(instance.settings_text().as_deref())?;
        out.push(instances::reshape(plugin.manifest(), &instance).map_err(named)?);
    }
    Ok(out)
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
    event_ttl: std::time::Duration,
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<windlass_apiserver::RunningServer> {
    let config = windlass_apiserver::Config::new()
        .listen(listen)
        .event_ttl(event_ttl);
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
        args.event_ttl,
        args.write_kubeconfig.as_deref(),
    )
    .await?;
    windlass::shutdown::signal().await;
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
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
