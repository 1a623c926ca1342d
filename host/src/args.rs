//! The `windlass` command line's flags and subcommands (the binary's own;
//! `main.rs` runs them).
//!
//! Every flag can also come from the environment, as `WINDLASS_` and the
//! flag's name in capitals with `_` for `-` (`--leader-elect-namespace` is
//! `WINDLASS_LEADER_ELECT_NAMESPACE`); a flag given on the command line wins.
//! Durations and sizes are written as Kubernetes writes them (`10s`, `64Mi`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::{Args, Parser, Subcommand, ValueEnum};
use windlass::runtime::{Runtime, RuntimeConfig};

#[derive(Parser)]
#[command(
    name = "windlass",
    version,
    about = "A Kubernetes controller host for WebAssembly plugins"
)]
pub(crate) struct Cli {
    /// How log lines are written to stderr: `text` for people, `json` (one
    /// object a line) for log collectors.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = "WINDLASS_LOG_FORMAT",
        value_name = "FORMAT"
    )]
    pub(crate) log_format: LogFormat,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Work with one plugin file, offline.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Serve the embedded Kubernetes-compatible API server.
    Apiserver(ApiserverArgs),
    /// Run the host: load the plugins and reconcile against an API server.
    // Boxed: its many flags would make every command as large.
    Run(Box<RunArgs>),
    /// List the plugins a running host has loaded (from its admin endpoint).
    Plugins {
        /// The host's --admin address.
        #[arg(
            long,
            default_value = "127.0.0.1:9464",
            value_name = "ADDR",
            env = "WINDLASS_ADMIN"
        )]
        admin: std::net::SocketAddr,
    },
    /// Print a shell completion script (source it from your shell's startup file).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

#[derive(Args)]
pub(crate) struct RunArgs {
    /// Directory of plugin components (`*.wasm`).
    #[arg(
        long,
        default_value = "plugins",
        value_name = "DIR",
        env = "WINDLASS_PLUGINS"
    )]
    pub(crate) plugins: PathBuf,
    /// Kubeconfig of the cluster (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "embedded",
        env = "WINDLASS_KUBECONFIG"
    )]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with = "embedded",
        env = "WINDLASS_CONTEXT"
    )]
    pub(crate) context: Option<String>,
    /// Start the embedded API server in this process and use it.
    #[arg(long, env = "WINDLASS_EMBEDDED")]
    pub(crate) embedded: bool,
    /// With --embedded: keep its state durably in this directory.
    #[arg(long, value_name = "DIR", requires = "embedded", env = "WINDLASS_DATA")]
    pub(crate) data: Option<PathBuf>,
    /// With --embedded and --data: what an acknowledged write survives.
    /// `process`: a crash or `kill -9` of this process. `power-loss`: also an
    /// OS crash or power loss (an fsync per group commit; slower).
    #[arg(
        long,
        default_value = "process",
        value_name = "MODE",
        requires = "embedded",
        env = "WINDLASS_DURABILITY"
    )]
    pub(crate) durability: windlass_apiserver::Durability,
    /// With --embedded: how long an Event is kept after it was last written
    /// (kube-apiserver's --event-ttl); 0 keeps events for ever.
    #[arg(
        long,
        default_value = "1h",
        value_name = "DURATION",
        value_parser = windlass::units::parse_duration,
        requires = "embedded",
        env = "WINDLASS_EVENT_TTL"
    )]
    pub(crate) event_ttl: Duration,
    /// With --embedded: the address it listens on (port 0 picks a free one).
    #[arg(
        long,
        default_value = "127.0.0.1:6443",
        value_name = "ADDR",
        requires = "embedded",
        env = "WINDLASS_LISTEN"
    )]
    pub(crate) listen: std::net::SocketAddr,
    /// With --embedded: write a kubeconfig for it here, for kubectl.
    #[arg(
        long,
        value_name = "FILE",
        requires = "embedded",
        env = "WINDLASS_WRITE_KUBECONFIG"
    )]
    pub(crate) write_kubeconfig: Option<PathBuf>,
    /// Serve /metrics, /healthz, /readyz and /plugins here: `HOST:PORT`,
    /// or a bare `PORT` (or `:PORT`), which binds loopback only.
    #[arg(long, value_name = "ADDR", value_parser = admin_addr, env = "WINDLASS_ADMIN")]
    pub(crate) admin: Option<std::net::SocketAddr>,
    /// Serve /metrics (only) here, as controller-runtime's flag: `:PORT`
    /// binds every interface, `HOST:PORT` one, `0` serves nowhere.
    #[arg(
        long,
        value_name = "ADDR",
        value_parser = bind_addr,
        env = "WINDLASS_METRICS_BIND_ADDRESS"
    )]
    pub(crate) metrics_bind_address: Option<BindAddr>,
    /// Serve /healthz, /livez and /readyz (only) here, as controller-runtime's
    /// flag: `:PORT`, `HOST:PORT`, or `0` for nowhere.
    #[arg(
        long,
        value_name = "ADDR",
        value_parser = bind_addr,
        env = "WINDLASS_HEALTH_PROBE_BIND_ADDRESS"
    )]
    pub(crate) health_probe_bind_address: Option<BindAddr>,
    /// How long in-flight reconciles get to finish at shutdown.
    #[arg(
        long,
        default_value = "10s",
        value_name = "DURATION",
        value_parser = windlass::units::parse_duration,
        env = "WINDLASS_GRACE"
    )]
    pub(crate) grace: Duration,
    /// Run several replicas: only the holder of a coordination.k8s.io Lease
    /// reconciles; the others stand by and take over when it goes.
    #[arg(long, env = "WINDLASS_LEADER_ELECT")]
    pub(crate) leader_elect: bool,
    /// With --leader-elect: the Lease's namespace (default: this pod's
    /// namespace in a cluster, else `default`).
    #[arg(
        long,
        value_name = "NAMESPACE",
        requires = "leader_elect",
        env = "WINDLASS_LEADER_ELECT_NAMESPACE"
    )]
    pub(crate) leader_elect_namespace: Option<String>,
    /// With --leader-elect: the Lease's name; replicas sharing it elect one leader.
    #[arg(
        long,
        default_value = "windlass",
        value_name = "NAME",
        requires = "leader_elect",
        env = "WINDLASS_LEADER_ELECT_NAME"
    )]
    pub(crate) leader_elect_name: String,
    /// With --leader-elect: how long a Lease not renewed keeps others from
    /// taking it.
    #[arg(
        long,
        default_value = "15s",
        value_name = "DURATION",
        value_parser = windlass::units::parse_duration,
        requires = "leader_elect",
        env = "WINDLASS_LEADER_ELECT_LEASE_DURATION"
    )]
    pub(crate) leader_elect_lease_duration: Duration,
    /// With --leader-elect: how long the leader keeps trying to renew before
    /// it stops reconciling (less than the lease duration).
    #[arg(
        long,
        default_value = "10s",
        value_name = "DURATION",
        value_parser = windlass::units::parse_duration,
        requires = "leader_elect",
        env = "WINDLASS_LEADER_ELECT_RENEW_DEADLINE"
    )]
    pub(crate) leader_elect_renew_deadline: Duration,
    /// With --leader-elect: the pause between attempts to acquire or renew.
    #[arg(
        long,
        default_value = "2s",
        value_name = "DURATION",
        value_parser = windlass::units::parse_duration,
        requires = "leader_elect",
        env = "WINDLASS_LEADER_ELECT_RETRY_PERIOD"
    )]
    pub(crate) leader_elect_retry_period: Duration,
    /// Keep precompiled plugins here (created private, mode 700; in a
    /// container, a directory under a writable volume).
    #[arg(long, value_name = "DIR", env = "WINDLASS_CACHE_DIR")]
    pub(crate) cache_dir: Option<PathBuf>,
    /// Requests a second each plugin's writes and events may make, as
    /// client-go's QPS (0: unlimited); an instance's `writeQPS` overrides it.
    #[arg(
        long,
        default_value = "0",
        value_name = "QPS",
        value_parser = write_qps,
        env = "WINDLASS_PLUGIN_WRITE_QPS"
    )]
    pub(crate) plugin_write_qps: f64,
    /// How many requests each plugin may send at once after a quiet spell,
    /// as client-go's burst; an instance's `writeBurst` overrides it.
    #[arg(
        long,
        default_value_t = windlass::WriteLimit::DEFAULT_BURST,
        value_name = "N",
        env = "WINDLASS_PLUGIN_WRITE_BURST"
    )]
    pub(crate) plugin_write_burst: u32,
    #[command(flatten)]
    pub(crate) limits: Limits,
}

impl RunArgs {
    /// Every plugin's write limit unless its instance sets its own.
    pub(crate) fn write_limit(&self) -> anyhow::Result<windlass::WriteLimit> {
        windlass::WriteLimit::new(self.plugin_write_qps, self.plugin_write_burst)
            .map_err(|e| anyhow::anyhow!("--plugin-write-qps/--plugin-write-burst: {e}"))
    }

    pub(crate) fn lease(&self) -> anyhow::Result<windlass::leader::LeaseConfig> {
        // As client-go's leader elector insists.
        if self.leader_elect_lease_duration <= self.leader_elect_renew_deadline {
            bail!(
                "--leader-elect-lease-duration ({:?}) must be longer than --leader-elect-renew-deadline ({:?})",
                self.leader_elect_lease_duration,
                self.leader_elect_renew_deadline
            );
        }
        if self.leader_elect_renew_deadline <= self.leader_elect_retry_period {
            bail!(
                "--leader-elect-renew-deadline ({:?}) must be longer than --leader-elect-retry-period ({:?})",
                self.leader_elect_renew_deadline,
                self.leader_elect_retry_period
            );
        }
        if self.leader_elect_retry_period.is_zero() {
            bail!("--leader-elect-retry-period must be more than 0");
        }
        let namespace = self.leader_elect_namespace.clone().unwrap_or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                .ok()
                .map(|ns| ns.trim().to_owned())
                .filter(|ns| !ns.is_empty())
                .unwrap_or_else(|| "default".to_owned())
        });
        Ok(windlass::leader::LeaseConfig {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            ..windlass::leader::LeaseConfig::new(
                &namespace,
                &self.leader_elect_name,
                &windlass::leader::default_identity(),
            )
        })
    }
}

#[derive(Args)]
pub(crate) struct ApiserverArgs {
    /// Address to listen on; port 0 picks a free one. Non-loopback addresses
    /// are served over HTTPS (a self-signed CA, written to the kubeconfig)
    /// and require a bearer token (generated, and written to the kubeconfig).
    #[arg(
        long,
        default_value = "127.0.0.1:6443",
        value_name = "ADDR",
        env = "WINDLASS_LISTEN"
    )]
    pub(crate) listen: std::net::SocketAddr,
    /// Keep state durably in this directory (SQLite).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "in_memory",
        env = "WINDLASS_DATA"
    )]
    pub(crate) data: Option<PathBuf>,
    /// With --data: what an acknowledged write survives. `process`: a crash
    /// or `kill -9` of the server. `power-loss`: also an OS crash or power
    /// loss (an fsync per group commit; slower).
    #[arg(
        long,
        default_value = "process",
        value_name = "MODE",
        conflicts_with = "in_memory",
        env = "WINDLASS_DURABILITY"
    )]
    pub(crate) durability: windlass_apiserver::Durability,
    /// How long an Event is kept after it was last written (kube-apiserver's
    /// --event-ttl); 0 keeps events for ever.
    #[arg(
        long,
        default_value = "1h",
        value_name = "DURATION",
        value_parser = windlass::units::parse_duration,
        env = "WINDLASS_EVENT_TTL"
    )]
    pub(crate) event_ttl: Duration,
    /// Keep state in memory only.
    #[arg(long, env = "WINDLASS_IN_MEMORY")]
    pub(crate) in_memory: bool,
    /// Write a kubeconfig for this server here (with the real port).
    #[arg(long, value_name = "FILE", env = "WINDLASS_WRITE_KUBECONFIG")]
    pub(crate) write_kubeconfig: Option<PathBuf>,
}

#[derive(Subcommand)]
pub(crate) enum PluginCommand {
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
pub(crate) struct RbacArgs {
    /// The plugin components (`.wasm`). A `NAME.instances.yaml` beside one
    /// is read as the host reads it: rules for each instance, under its name.
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// The namespace of the ServiceAccount the host runs as.
    #[arg(
        long,
        default_value = "windlass",
        value_name = "NS",
        env = "WINDLASS_NAMESPACE"
    )]
    pub(crate) namespace: String,
    /// The ServiceAccount the host runs as.
    #[arg(
        long,
        default_value = "windlass",
        value_name = "NAME",
        env = "WINDLASS_SERVICE_ACCOUNT"
    )]
    pub(crate) service_account: String,
    /// The roles' and bindings' name (default: windlass-plugin-NAME for one
    /// plugin, windlass-plugins for several).
    #[arg(long, value_name = "NAME")]
    pub(crate) name: Option<String>,
    /// Ask this cluster for kinds the built-in table does not know (CRDs).
    #[arg(long, value_name = "FILE", env = "WINDLASS_KUBECONFIG")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// With --kubeconfig: the context to use (default: its current one).
    #[arg(
        long,
        value_name = "NAME",
        requires = "kubeconfig",
        env = "WINDLASS_CONTEXT"
    )]
    pub(crate) context: Option<String>,
    #[command(flatten)]
    pub(crate) limits: Limits,
}

#[derive(Args)]
pub(crate) struct Limits {
    /// Deadline of one plugin call (host calls included).
    #[arg(
        long,
        default_value = "1s",
        value_name = "DURATION",
        value_parser = windlass::units::parse_duration,
        env = "WINDLASS_CALL_TIMEOUT"
    )]
    pub(crate) call_timeout: Duration,
    /// Memory one plugin call may use.
    #[arg(
        long,
        default_value = "64Mi",
        value_name = "QUANTITY",
        value_parser = windlass::units::parse_bytes,
        env = "WINDLASS_MEMORY_LIMIT"
    )]
    pub(crate) memory_limit: u64,
}

impl Limits {
    pub(crate) fn runtime_config(&self) -> RuntimeConfig {
        RuntimeConfig {
            call_timeout: self.call_timeout,
            memory_limit: usize::try_from(self.memory_limit).unwrap_or(usize::MAX),
            ..RuntimeConfig::default()
        }
    }

    pub(crate) fn runtime(&self) -> anyhow::Result<Runtime> {
        Runtime::new(RuntimeConfig {
            max_instances: 4,
            ..self.runtime_config()
        })
    }
}

/// `--plugin-write-qps`: a number of requests a second, 0 or more.
fn write_qps(value: &str) -> Result<f64, String> {
    let qps: f64 = value
        .parse()
        .map_err(|_| format!("{value:?} is not a number of requests a second"))?;
    windlass::WriteLimit::new(qps, 1).map(|l| l.qps)
}

/// `--admin`: an address as given, or a bare port on loopback (the admin
/// endpoint tells anyone who can reach it about every plugin, so it is
/// exposed beyond this machine only when asked for).
pub(crate) fn admin_addr(value: &str) -> Result<std::net::SocketAddr, String> {
    let port = value.strip_prefix(':').unwrap_or(value);
    if let Ok(port) = port.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    value
        .parse()
        .map_err(|_| format!("{value:?} is neither HOST:PORT nor a port"))
}

/// `--metrics-bind-address` and `--health-probe-bind-address` as
/// controller-runtime reads them: `:PORT` is every interface, `HOST:PORT`
/// one address, and `0` turns the listener off (`None`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct BindAddr(pub(crate) Option<std::net::SocketAddr>);

pub(crate) fn bind_addr(value: &str) -> Result<BindAddr, String> {
    if value == "0" {
        return Ok(BindAddr(None));
    }
    let full = match value.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => value.to_owned(),
    };
    full.parse().map(|a| BindAddr(Some(a))).map_err(|_| {
        format!("{value:?} is not an address: write :PORT (every interface), HOST:PORT, or 0 (off)")
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn write_qps_is_a_number_of_at_least_zero() {
        assert_eq!(super::write_qps("0"), Ok(0.0));
        assert_eq!(super::write_qps("2.5"), Ok(2.5));
        assert!(super::write_qps("-1").unwrap_err().contains("at least 0"));
        assert!(
            super::write_qps("fast")
                .unwrap_err()
                .contains("not a number")
        );
        assert!(super::write_qps("inf").is_err());
    }

    #[test]
    fn bind_addresses_read_as_controller_runtime_reads_them() {
        let addr = |v: &str| super::bind_addr(v).map(|b| b.0.map(|a| a.to_string()));
        assert_eq!(addr(":8080"), Ok(Some("0.0.0.0:8080".into())));
        assert_eq!(addr("127.0.0.1:8081"), Ok(Some("127.0.0.1:8081".into())));
        assert_eq!(addr("0"), Ok(None));
        assert!(addr("8080").is_err());
    }

    #[test]
    fn every_flag_can_come_from_the_environment() {
        use clap::CommandFactory;
        fn check(cmd: &clap::Command, path: &str) {
            for arg in cmd.get_arguments() {
                if arg.is_positional() || matches!(arg.get_id().as_str(), "help" | "version") {
                    continue;
                }
                let long = arg.get_long().unwrap_or_default();
                let want = format!("WINDLASS_{}", long.to_uppercase().replace('-', "_"));
                let name = format!("{path} --{long}");
                match arg.get_env() {
                    Some(env) => assert_eq!(env.to_str(), Some(want.as_str()), "{name}"),
                    // Names of one object, never shared across runs.
                    None => assert!(
                        matches!(
                            long,
                            "name" | "object" | "owned" | "cache" | "finalize" | "dir" | "sdk-path"
                        ),
                        "{name} has no environment variable"
                    ),
                }
            }
            for sub in cmd.get_subcommands() {
                check(sub, &format!("{path} {}", sub.get_name()));
            }
        }
        check(&super::Cli::command(), "windlass");
    }

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
