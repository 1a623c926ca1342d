//! Leader election over a `coordination.k8s.io/v1` Lease, so that several
//! windlass replicas can run for availability while only one reconciles.
//!
//! As client-go's leaderelection: a candidate reads the Lease; it takes it
//! when nobody holds it or when the holder has not renewed it for the lease
//! duration — measured on *our* clock from when we last saw the record
//! change, so clock skew between machines does not matter — writing with the
//! resourceVersion it read, so two candidates cannot both win (one gets a
//! 409). The leader renews every retry period; if it cannot renew for the
//! renew deadline it has lost the lease and must stop reconciling. On an
//! orderly shutdown it releases the lease so a standby takes over at once.

use std::time::Duration;

use http::Method;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use crate::client::{ApiClient, ApiError};

/// Which Lease, who we are, and the timing.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// Unique per process: the holder identity written to the Lease.
    pub identity: String,
    /// How long a lease not renewed stays valid for others.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up.
    pub renew_deadline: Duration,
    /// Pause between attempts to acquire or renew.
    pub retry_period: Duration,
}

impl LeaseConfig {
    /// client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retries.
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// A unique identity for this process: host name, process id and a random
/// suffix (a restarted process is a new candidate).
pub fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "windlass".to_owned());
    format!("{host}_{}_{:08x}", std::process::id(), fastrand::u32(..))
}

/// Why a leader stopped being one.
#[derive(Debug, thiserror::Error)]
pub enum LeaseLost {
    #[error("could not renew the lease {lease} for {deadline:?}: {last_error}")]
    NotRenewed {
        lease: String,
        deadline: Duration,
        last_error: String,
    },
    #[error("the lease {lease} is now held by {holder}")]
    TakenOver { lease: String, holder: String },
}

/// A candidate for one Lease.
pub struct Elector {
    client: ApiClient,
    config: LeaseConfig,
    /// The holder and renew time last read, and when we first saw them.
    observed: Option<(String, String, Instant)>,
}

/// What one attempt found.
enum Attempt {
    Leading,
    HeldBy(String),
}

impl Elector {
    pub fn new(client: ApiClient, config: LeaseConfig) -> Self {
        Self {
            client,
            config,
            observed: None,
        }
    }

    pub fn config(&self) -> &LeaseConfig {
        &self.config
    }

    fn path(&self) -> String {
        format!(
            "/apis/coordination.k8s.io/v1/namespaces/{}/leases/{}",
            self.config.namespace, self.config.name
        )
    }

    fn lease_name(&self) -> String {
        format!("{}/{}", self.config.namespace, self.config.name)
    }

    /// Returns once this process holds the lease.
    pub async fn acquire(&mut self) {
        let mut reported: Option<String> = None;
        loop {
            match self.try_acquire_or_renew().await {
                Ok(Attempt::Leading) => {
                    tracing::info!(lease = %self.lease_name(), identity = %self.config.identity, "became the leader");
                    return;
                }
                Ok(Attempt::HeldBy(holder)) => {
                    if reported.as_deref() != Some(holder.as_str()) {
                        tracing::info!(lease = %self.lease_name(), %holder, "standing by: another replica leads");
                        reported = Some(holder);
                    }
                }
                Err(e) => {
                    tracing::warn!(lease = %self.lease_name(), error = %e, "cannot read or take the lease; retrying")
                }
            }
            tokio::time::sleep(jittered(self.config.retry_period)).await;
        }
    }

    /// Runs `work` while leading: renewals go on beside it from the start
    /// (loading plugins can take longer than a lease lasts), and if the
    /// lease is lost `work` is dropped at once and the loss returned. The
    /// loss is noticed within the renew deadline, which is shorter than the
    /// lease duration, so a caller that then stops reconciling at once has
    /// stopped before any other replica can take the lease.
    pub async fn lead<F: std::future::Future>(&mut self, work: F) -> Result<F::Output, LeaseLost> {
        tokio::select! {
            out = work => Ok(out),
            lost = self.hold() => Err(lost),
        }
    }

    /// Keeps renewing while leading; returns why leadership ended.
    pub async fn hold(&mut self) -> LeaseLost {
        let mut renewed = Instant::now();
        loop {
            tokio::time::sleep(self.config.retry_period).await;
            let attempt =
                tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew()).await;
            let error = match attempt {
                Ok(Ok(Attempt::Leading)) => {
                    renewed = Instant::now();
                    continue;
                }
                Ok(Ok(Attempt::HeldBy(holder))) => {
                    return LeaseLost::TakenOver {
                        lease: self.lease_name(),
                        holder,
                    };
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => "the API server did not answer in time".to_owned(),
            };
            tracing::warn!(lease = %self.lease_name(), %error, "lease renewal failed");
            if renewed.elapsed() >= self.config.renew_deadline {
                return LeaseLost::NotRenewed {
                    lease: self.lease_name(),
                    deadline: self.config.renew_deadline,
                    last_error: error,
                };
            }
        }
    }

    /// Gives the lease up (if we still hold it) so a standby can take it at
    /// once, as client-go's `ReleaseOnCancel`.
    pub async fn release(&mut self) {
        let Ok(Some(mut lease)) = self.read().await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        match self.write(Method::PUT, &lease).await {
            Ok(_) => tracing::info!(lease = %self.lease_name(), "released the lease"),
            Err(e) => {
                tracing::warn!(lease = %self.lease_name(), error = %e, "could not release the lease; it expires on its own")
            }
        }
    }

    async fn read(&self) -> Result<Option<Lease>, ApiError> {
        match self.client.get(&self.path()).await {
            Ok(body) => serde_json::from_slice(&body).map(Some).map_err(|e| {
                malformed(format!(
                    "the lease {} is not a Lease: {e}",
                    self.lease_name()
                ))
            }),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn write(&self, method: Method, lease: &Lease) -> Result<Vec<u8>, ApiError> {
        let body = serde_json::to_vec(lease).expect("a Lease serializes");
        let path = if method == Method::POST {
            format!(
                "/apis/coordination.k8s.io/v1/namespaces/{}/leases",
                self.config.namespace
            )
        } else {
            self.path()
        };
        self.client
            .request(
                method,
                &path,
                Some("application/json"),
                body,
                Some("windlass/leader-election"),
            )
            .await
            .map(|b| b.to_vec())
    }

    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, ApiError> {
        let now = MicroTime(Timestamp::now());
        let me = self.config.identity.clone();
        let duration = i32::try_from(self.config.lease_duration.as_secs().max(1)).unwrap_or(15);
        let Some(mut lease) = self.read().await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(me.clone()),
                    lease_duration_seconds: Some(duration),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.write(Method::POST, &lease).await {
                Ok(_) => {
                    self.observe(&me, "created");
                    Ok(Attempt::Leading)
                }
                Err(e) if e.is_already_exists() || e.is_conflict() => {
                    Ok(Attempt::HeldBy("another candidate".into()))
                }
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let renew = spec
            .renew_time
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default();
        let their_duration = spec
            .lease_duration_seconds
            .map_or(self.config.lease_duration, |s| {
                Duration::from_secs(s.max(0) as u64)
            });
        let seen_at = self.observe(&holder, &renew);
        if !holder.is_empty() && holder != me && seen_at.elapsed() < their_duration {
            return Ok(Attempt::HeldBy(holder));
        }
        if holder != me {
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(me.clone());
        spec.lease_duration_seconds = Some(duration);
        spec.renew_time = Some(now.clone());
        match self.write(Method::PUT, &lease).await {
            Ok(_) => {
                self.observe(&me, &now.0.to_string());
                Ok(Attempt::Leading)
            }
            // Someone else wrote first; they lead.
            Err(e) if e.is_conflict() => Ok(Attempt::HeldBy(holder)),
            Err(e) => Err(e),
        }
    }

    /// Notes the record read; returns when we first saw it as it is.
    fn observe(&mut self, holder: &str, renew: &str) -> Instant {
        match &self.observed {
            Some((h, r, at)) if h == holder && r == renew => *at,
            _ => {
                let now = Instant::now();
                self.observed = Some((holder.to_owned(), renew.to_owned(), now));
                now
            }
        }
    }
}

fn jittered(d: Duration) -> Duration {
    d.mul_f64(1.0 + 0.2 * fastrand::f64())
}

fn malformed(message: String) -> ApiError {
    ApiError {
        method: Method::GET,
        path: String::new(),
        code: 0,
        reason: "Malformed".into(),
        message,
    }
}
