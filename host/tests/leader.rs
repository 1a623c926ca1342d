//! Leader election against the embedded API server: one leader at a time, a
//! release hands over at once, a crashed leader's lease expires, and a
//! leader cut off from the server notices that it lost the lease.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use windlass::client::ApiClient;
use windlass::leader::{Elector, LeaseConfig, LeaseLost};
use windlass_apiserver::RunningServer;
use windlass_tests::Proxy;

fn config(identity: &str) -> LeaseConfig {
    LeaseConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1500),
        retry_period: Duration::from_millis(200),
        ..LeaseConfig::new("default", "windlass-test", identity)
    }
}

async fn lease(client: &ApiClient) -> Value {
    let body = client
        .get("/apis/coordination.k8s.io/v1/namespaces/default/leases/windlass-test")
        .await
        .expect("the lease exists");
    serde_json::from_slice(&body).unwrap()
}

/// An in-memory server and a client of it.
async fn server() -> (RunningServer, ApiClient) {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .unwrap();
    let client = ApiClient::from_kubeconfig_yaml(&server.kubeconfig())
        .await
        .unwrap();
    (server, client)
}

/// A client of `server` through `proxy`.
async fn proxied(server: &RunningServer, proxy: &Proxy) -> ApiClient {
    ApiClient::from_kubeconfig_yaml(&proxy.kubeconfig(&server.kubeconfig(), server.addr()))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_at_a_time_and_release_hands_over_at_once() {
    let (_server, client) = server().await;
    let mut a = Elector::new(client.clone(), config("a"));
    let mut b = Elector::new(client.clone(), config("b"));
    a.acquire().await;
    let l = lease(&client).await;
    assert_eq!(l["spec"]["holderIdentity"], "a");
    assert_eq!(l["spec"]["leaseTransitions"], 0);

    // b waits while a renews (well past one lease duration).
    let renewing = tokio::spawn(async move {
        let lost = a.hold().await;
        panic!("a lost the lease: {lost}");
    });
    assert!(
        tokio::time::timeout(Duration::from_secs(4), b.acquire())
            .await
            .is_err(),
        "b took a lease that a kept renewing"
    );
    renewing.abort();

    // a releases: b takes over without waiting for expiry.
    let mut a = Elector::new(client.clone(), config("a"));
    a.acquire().await; // a still holds it; this renews
    a.release().await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(2), b.acquire())
        .await
        .expect("b takes a released lease promptly");
    assert!(started.elapsed() < Duration::from_secs(1));
    let l = lease(&client).await;
    assert_eq!(l["spec"]["holderIdentity"], "b");
    assert_eq!(l["spec"]["leaseTransitions"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_leader_loses_the_lease_and_knows_it() {
    let (server, direct) = server().await;
    let proxy = Proxy::start(server.addr()).await;
    let mut a = Elector::new(proxied(&server, &proxy).await, config("a"));
    a.acquire().await;

    // The network between a and the server goes away.
    proxy.set_refusing(true);
    proxy.cut_all();
    let cut = Instant::now();
    let mut b = Elector::new(direct.clone(), config("b"));
    let (lost, ()) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(10), a.hold()),
        async {
            tokio::time::timeout(Duration::from_secs(10), b.acquire())
                .await
                .expect("b takes an expired lease")
        }
    );
    let lost = lost.expect("a notices");
    assert!(matches!(lost, LeaseLost::NotRenewed { .. }), "{lost}");
    // b could only take it once the lease had run out on its own clock.
    assert!(cut.elapsed() >= Duration::from_millis(1800));
    assert_eq!(lease(&direct).await["spec"]["holderIdentity"], "b");

    // When a can talk again, it sees that b leads.
    proxy.set_refusing(false);
    let mut a = Elector::new(proxied(&server, &proxy).await, config("a"));
    assert!(
        tokio::time::timeout(Duration::from_secs(1), a.acquire())
            .await
            .is_err()
    );
}

/// The lease is renewed while plugins load: a load that takes three lease
/// durations does not let another replica take over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_is_renewed_while_plugins_load() {
    let (_server, client) = server().await;
    let mut a = Elector::new(client.clone(), config("a"));
    let mut b = Elector::new(client.clone(), config("b"));
    a.acquire().await;
    let slow_load = async {
        // A load three lease durations long, then some work.
        tokio::time::sleep(Duration::from_secs(6)).await;
        "loaded"
    };
    let (led, taken) = tokio::join!(
        a.lead(slow_load),
        tokio::time::timeout(Duration::from_secs(5), b.acquire())
    );
    assert_eq!(led.expect("a keeps the lease"), "loaded");
    assert!(taken.is_err(), "b took the lease while a was loading");
    assert_eq!(lease(&client).await["spec"]["holderIdentity"], "a");
}

/// A leader cut off from the server stops reconciling before the lease can
/// expire for anyone else: `lead` gives up within the renew deadline, and
/// the other replica can only take over once the lease duration has run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_stops_before_another_can_lead() {
    let (server, direct) = server().await;
    let proxy = Proxy::start(server.addr()).await;
    let mut a = Elector::new(proxied(&server, &proxy).await, config("a"));
    a.acquire().await;
    proxy.set_refusing(true);
    proxy.cut_all();
    let mut b = Elector::new(direct.clone(), config("b"));
    let (a_stopped, b_leads) = tokio::join!(
        async {
            let lost = a.lead(std::future::pending::<()>()).await;
            assert!(lost.is_err(), "a cannot lead on");
            Instant::now()
        },
        async {
            tokio::time::timeout(Duration::from_secs(10), b.acquire())
                .await
                .expect("b takes the lease once it expires");
            Instant::now()
        }
    );
    assert!(a_stopped < b_leads, "a stopped only after b led");
}
