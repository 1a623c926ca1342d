//! The initial-sync part: a server preloaded with pods, then a fresh child
//! process per side times informer start → synced and its memory growth.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::runtime::Runtime;
use windlass::client::ApiClient;
use windlass::contract::{KindRef, Watch};
use windlass::discovery::Discovery;
use windlass::informer::InformerConfig;
use windlass::informers::Informers;

use super::load::{PODS, create_many, get, http, pod_body};
use super::table::thousands;
use super::{CHILD_ANSWER, CHILD_KUBECONFIG, CHILD_ROLE, fresh_server, runtime};

/// What a child measured.
#[derive(Debug, Default, Clone, serde::Serialize, Deserialize)]
pub(crate) struct SyncResult {
    pub(crate) seconds: f64,
    pub(crate) objects: u64,
    /// The cache's own accounting (windlass only).
    pub(crate) cache_bytes: Option<u64>,
    /// Resident memory growth from just before the start to synced.
    pub(crate) rss_growth: Option<u64>,
    /// The process's resident memory once synced.
    pub(crate) rss: Option<u64>,
}

pub(crate) struct Sync {
    pub(crate) pods: u64,
    pub(crate) preload_per_sec: f64,
    /// The server's time to answer a paged list of every pod.
    pub(crate) list_secs: f64,
    /// Bytes per pod in a list, as served and without managedFields.
    pub(crate) raw_per_pod: f64,
    pub(crate) stripped_per_pod: f64,
    pub(crate) windlass: SyncResult,
    pub(crate) peer: SyncResult,
}

pub(crate) fn initial_sync(servers: &Runtime, pods: u64) -> Sync {
    let server = servers.block_on(fresh_server());
    let addr = server.addr();
    eprintln!("initial sync: preloading {} pods", thousands(pods));
    let secs = servers.block_on(create_many(addr, PODS, 0, pods, None, "pods", pod_body));
    let (raw, stripped, listed, list_secs) = servers.block_on(raw_sizes(addr));
    assert_eq!(listed, pods, "the server lists every preloaded pod");
    let kubeconfig = server.kubeconfig();
    eprintln!("initial sync: windlass informer (child process)");
    let windlass = run_child("windlass", &kubeconfig);
    eprintln!("initial sync: kube-rs reflector (child process)");
    let peer = run_child("peer", &kubeconfig);
    for (side, r) in [("windlass", &windlass), ("peer", &peer)] {
        assert_eq!(r.objects, pods, "{side} cached every pod");
    }
    servers.block_on(server.shutdown());
    Sync {
        pods,
        preload_per_sec: pods as f64 / secs,
        list_secs,
        raw_per_pod: raw as f64 / pods as f64,
        stripped_per_pod: stripped as f64 / pods as f64,
        windlass,
        peer,
    }
}

/// Total bytes of the pods' JSON in list pages, as served and without
/// `metadata.managedFields` (which the caches drop); how many there are; and
/// the seconds the server took to answer the pages (what any informer's
/// first list waits for at least).
pub(crate) async fn raw_sizes(addr: SocketAddr) -> (u64, u64, u64, f64) {
    #[derive(Deserialize)]
    struct Page<'a> {
        #[serde(borrow)]
        items: Vec<&'a RawValue>,
        metadata: PageMeta,
    }
    #[derive(Deserialize)]
    struct PageMeta {
        #[serde(default, rename = "continue")]
        next: Option<String>,
    }
    let c = http();
    let (mut raw, mut stripped, mut n) = (0u64, 0u64, 0u64);
    let mut token: Option<String> = None;
    let mut serving = Duration::ZERO;
    loop {
        let path = match &token {
            Some(t) => format!("{PODS}?limit=500&continue={t}"),
            None => format!("{PODS}?limit=500"),
        };
        let asked = Instant::now();
        let body = get(&c, addr, &path).await;
        serving += asked.elapsed();
        let page: Page<'_> = serde_json::from_slice(&body).expect("a pod list");
        for item in &page.items {
            raw += item.get().len() as u64;
            let mut v: Value = serde_json::from_str(item.get()).expect("a pod");
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
            stripped += v.to_string().len() as u64;
            n += 1;
        }
        match page.metadata.next.filter(|t| !t.is_empty()) {
            Some(t) => token = Some(t),
            None => return (raw, stripped, n, serving.as_secs_f64()),
        }
    }
}

pub(crate) fn run_child(role: &str, kubeconfig: &str) -> SyncResult {
    use std::io::Read;
    let mut child = std::process::Command::new(std::env::current_exe().expect("own path"))
        .env(CHILD_ROLE, role)
        .env(CHILD_KUBECONFIG, kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("child starts");
    let deadline = Instant::now() + Duration::from_secs(900);
    let status = loop {
        if let Some(status) = child.try_wait().expect("child status") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the {role} sync child did not finish within 15 minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut stdout)
        .expect("child output");
    let answer = stdout
        .lines()
        .find_map(|l| l.strip_prefix(CHILD_ANSWER))
        .unwrap_or_else(|| panic!("{role} child failed ({status}): {stdout}"));
    serde_json::from_str(answer).expect("child answer")
}

/// Resident memory of this process, bytes (Linux; `None` elsewhere).
pub(crate) fn rss() -> Option<u64> {
    rss_at("/proc/self/statm")
}

/// Resident memory of process `pid`, bytes (Linux; `None` elsewhere).
pub(crate) fn rss_of(pid: u32) -> Option<u64> {
    rss_at(&format!("/proc/{pid}/statm"))
}

fn rss_at(statm: &str) -> Option<u64> {
    let statm = std::fs::read_to_string(statm).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// What the scale part ran.
pub(crate) struct Scale {
    /// Pods asked for, and preloaded (fewer when the server would not fit
    /// in this machine's memory).
    pub(crate) asked: u64,
    pub(crate) pods: u64,
    /// The bench process's resident memory growth per pod preloaded: the
    /// embedded server's cost of holding them.
    pub(crate) server_per_pod: Option<f64>,
    pub(crate) windlass: SyncResult,
}

/// The embedded server's resident memory per stored pod of [`pod_body`],
/// measured (about 4.8 KB: each object is kept as its bytes and the
/// attributes selectors read, and in the watch history), with a margin.
const SERVER_BYTES_PER_POD: u64 = 6_000;

/// Bytes the kernel says can be had without swapping (Linux).
fn mem_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The scale part: `pods` preloaded, then one windlass informer (a fresh
/// child process) syncs them all. Only windlass runs at this size; the
/// reflector's figures are the initial-sync part's, at a tenth of it. The
/// embedded server keeps every pod in memory, so on a machine that cannot
/// hold `pods` of them (with room for everything else) the part runs at
/// the largest size that fits, and says so.
pub(crate) fn scale(servers: &Runtime, asked: u64) -> Scale {
    let fits = mem_available().map_or(asked, |bytes| {
        // 60% of what is available, in steps of 10,000.
        (bytes / 10 * 6 / SERVER_BYTES_PER_POD) / 10_000 * 10_000
    });
    let pods = asked.min(fits.max(10_000));
    if pods < asked {
        eprintln!(
            "scale: {} pods asked, but the embedded server (reckoned at {} KB a pod) would not fit in this machine's memory; running {}",
            thousands(asked),
            SERVER_BYTES_PER_POD / 1000,
            thousands(pods)
        );
    }
    let server = servers.block_on(fresh_server());
    let addr = server.addr();
    eprintln!("scale: preloading {} pods", thousands(pods));
    let before = rss();
    servers.block_on(create_many(addr, PODS, 0, pods, None, "pods", pod_body));
    let server_per_pod = before
        .zip(rss())
        .map(|(b, a)| a.saturating_sub(b) as f64 / pods as f64);
    if let Some(b) = server_per_pod {
        eprintln!("scale: the embedded server grew by {b:.0} B a pod");
    }
    eprintln!("scale: windlass informer (child process)");
    let windlass = run_child("windlass", &server.kubeconfig());
    assert_eq!(windlass.objects, pods, "windlass cached every pod");
    servers.block_on(server.shutdown());
    Scale {
        asked,
        pods,
        server_per_pod,
        windlass,
    }
}

pub(crate) fn child(role: &str) {
    let kubeconfig = std::env::var(CHILD_KUBECONFIG).expect("kubeconfig from the parent");
    match role {
        "density-windlass" => return super::density::child_windlass(),
        "density-peer" => return super::density::child_peer(),
        _ => {}
    }
    let rt = runtime("child", 2);
    let result = rt.block_on(async {
        match role {
            "windlass" => sync_windlass(&kubeconfig).await,
            "peer" => sync_peer(&kubeconfig).await,
            other => panic!("unknown child role {other:?}"),
        }
    });
    println!(
        "{CHILD_ANSWER}{}",
        serde_json::to_string(&result).expect("serializable")
    );
}

pub(crate) async fn sync_windlass(kubeconfig: &str) -> SyncResult {
    let client = ApiClient::from_kubeconfig_yaml(kubeconfig)
        .await
        .expect("client");
    let discovery = Arc::new(Discovery::new(client.clone()));
    let pods = KindRef::new("v1", "Pod");
    // Discovery (and the connection) are warm before the clock starts.
    discovery.resolve(&pods).await.expect("pods are served");
    let informers = Informers::new(client, discovery, InformerConfig::default(), 4);
    let before = rss();
    let started = Instant::now();
    let informer = informers
        .get(&Watch {
            kind: pods,
            namespace: None,
            label_selector: None,
            field_selector: None,
            indexed: false,
        })
        .await
        .expect("informer");
    informer.wait_synced().await;
    let seconds = started.elapsed().as_secs_f64();
    let after = rss();
    let (objects, bytes) = informer.cache().read(|s| (s.len(), s.bytes()));
    SyncResult {
        seconds,
        objects: objects as u64,
        cache_bytes: Some(bytes as u64),
        rss_growth: before.zip(after).map(|(b, a)| a.saturating_sub(b)),
        rss: after,
    }
}

pub(crate) async fn sync_peer(kubeconfig: &str) -> SyncResult {
    let client = windlass_peer::client_from_kubeconfig_yaml(kubeconfig)
        .await
        .expect("client");
    // The connection is warm before the clock starts, as on the windlass side.
    let warm: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(client.clone());
    warm.list_metadata(&kube::api::ListParams::default().limit(1))
        .await
        .expect("pods are served");
    let before = rss();
    let started = Instant::now();
    let store = windlass_peer::reflect::PodStore::start(client, None);
    store.synced().await;
    let seconds = started.elapsed().as_secs_f64();
    let after = rss();
    SyncResult {
        seconds,
        objects: store.store().len() as u64,
        cache_bytes: None,
        rss_growth: before.zip(after).map(|(b, a)| a.saturating_sub(b)),
        rss: after,
    }
}
