//! Syncing one pod bound to a simulated node: the status a kubelet would
//! report for it now, whether it is to be removed, the events of what
//! happened since its status was last written, and when it next changes.
//!
//! No container runs. A pod is started the first time it is synced: its
//! init containers complete one after another at that instant (sidecars,
//! init containers with `restartPolicy: Always`, keep running), then its
//! containers run, ready at once (readiness probes pass), until the pod's
//! `windlass.dev/exit-after` ends a run (see `timeline.rs`) or the pod is
//! deleted (see `termination.rs`). Everything is derived from the pod and
//! the clock, so syncing twice at the same instant gives the same answer,
//! and a pod whose status already says it gets no write.

use std::borrow::Cow;
use std::time::Duration;

use windlass_sdk::{Event, ObjectRef, Time};

use crate::conditions::conditions;
use crate::events::{events, killing};

use crate::ids;
use crate::qos;
use crate::status::{
    Cond, ContainerState, ContainerStatus, Running, Status, Terminated, Waiting, classify,
};
use crate::termination::Deletion;
use crate::timeline::{Exit, RestartPolicy, Script, State, Timeline, backoff, whole_seconds};
use crate::view::{Container, Ip, Pod, Str};
use windlass_sdk::duration;

/// Where a pod runs: what a kubelet knows about its own node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place<'p> {
    /// The node's InternalIP, the pod's `hostIP`.
    pub host_ip: &'p str,
    /// The address the pod gets if its status has none yet.
    pub pod_ip: Option<&'p str>,
    /// Record events at all (not when only checking a status, in `index`).
    pub record: bool,
    /// Record `Pulled`, `Created` and `Started` for every container start.
    pub start_events: bool,
}

/// What syncing a pod asks for.
#[derive(Debug, Default)]
pub(crate) struct Sync<'a> {
    /// The status to write, when the stored one says something else.
    pub status: Option<Status<'a>>,
    /// Every container has stopped after a deletion: remove the pod.
    pub remove: bool,
    /// What happened since the status was last written.
    pub events: Vec<Event>,
    /// When the pod next changes by itself.
    pub due: Option<Time>,
}

/// Kubelet's view of the pod at `now`.
pub(crate) fn sync<'a>(pod: &'a Pod<'a>, now: Time, place: &Place<'_>) -> Sync<'a> {
    let deletion = Deletion::of(&pod.metadata);
    if matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed")) {
        // Kubelet never moves a pod out of a terminal phase. Its containers
        // are gone, so a deleted one is removed at once.
        return Sync {
            remove: deletion.is_some_and(|d| d.grace_secs > 0),
            ..Sync::default()
        };
    }
    if deletion.is_some_and(|d| d.grace_secs == 0) {
        // The final delete was sent; finalizers hold the pod.
        return Sync::default();
    }
    let started = pod.status.start_time.as_deref().and_then(Time::parse);
    if deletion.is_some() && started.is_none() && pod.status.container_statuses.is_empty() {
        // Deleted before it ever started: nothing to stop.
        return Sync {
            remove: true,
            ..Sync::default()
        };
    }
    let stored = Status::stored(&pod.status);
    let mut run = Run::new(pod, &stored, started.unwrap_or_else(|| whole_seconds(now)));
    let mut sync = Sync::default();
    match deletion {
        None => {
            for tl in &mut run.timelines {
                tl.advance(&run.script, now, true);
                sync.due = earliest(sync.due, tl.next_change(&run.script, true));
            }
        }
        Some(d) => {
            let stopped = run.stop(&d, now);
            if stopped <= now {
                sync.remove = true;
                // Someone waits to see how it ended before letting it go.
                if !pod.metadata.finalizers.is_empty() {
                    run.finish();
                    sync.status = Some(run.status(&stored, now, place, true));
                }
                if place.record {
                    sync.events = killing(&stored, pod);
                }
                return sync;
            }
            sync.due = Some(run.next_stop(&d, now));
        }
    }
    let status = run.status(&stored, now, place, false);
    if status != stored {
        if place.record {
            sync.events = events(&stored, &status, pod, place.start_events);
        }
        sync.status = Some(status);
    }
    sync
}

/// How long the containers of a Job's pod run when its annotations do not
/// say (`windlass.dev/exit-after`).
pub(crate) const JOB_RUN: Duration = Duration::from_secs(1);

/// The pod's containers, living their timelines.
struct Run<'a> {
    pod: &'a Pod<'a>,
    script: Script,
    /// When the pod started (its `startTime`).
    t0: Time,
    /// One per `spec.containers` entry.
    timelines: Vec<Timeline>,
    terminating: bool,
}

impl<'a> Run<'a> {
    fn new(pod: &'a Pod<'a>, stored: &Status<'_>, t0: Time) -> Self {
        let annotations = &pod.metadata.annotations;
        let exit_after = match annotations.exit_after.as_deref() {
            Some(text) => duration::parse(text),
            // A Job's pod runs to completion, as kwok's stages complete
            // them: its containers exit 0 after a short run.
            None if pod.metadata.job_controlled() => Some(JOB_RUN),
            None => None,
        };
        let script = Script {
            exit_after,
            exit_code: annotations
                .exit_code
                .as_deref()
                .and_then(|c| c.trim().parse().ok())
                .unwrap_or(0),
            policy: RestartPolicy::parse(pod.spec.restart_policy.as_deref()),
        };
        let timelines = pod
            .spec
            .containers
            .iter()
            .map(|c| {
                stored
                    .container_statuses
                    .iter()
                    .find(|s| s.name == c.name)
                    .and_then(from_status)
                    .unwrap_or_else(|| Timeline::start(t0))
            })
            .collect();
        Run {
            pod,
            script,
            t0,
            timelines,
            terminating: pod.metadata.deletion_timestamp.is_some(),
        }
    }

    /// Lives the containers through a deletion up to `now`: until it began
    /// as before, then without restarts, each running container stopping by
    /// itself or being killed. Returns when the last one stops (the start
    /// of the deletion if none was running).
    fn stop(&mut self, d: &Deletion, now: Time) -> Time {
        let mut last = d.started;
        for (tl, c) in self.timelines.iter_mut().zip(&self.pod.spec.containers) {
            tl.advance(&self.script, now.min(d.started), true);
            if !tl.is_running() {
                continue;
            }
            let kill_at = d.kill_at(c);
            let exits_at = tl.next_change(&self.script, false);
            last = last.max(exits_at.map_or(kill_at, |e| e.min(kill_at)));
            match exits_at {
                Some(e) if e <= kill_at && e <= now => tl.advance(&self.script, now, false),
                _ if kill_at <= now => tl.kill(kill_at),
                _ => {}
            }
        }
        last
    }

    /// When the next container stops during a deletion.
    fn next_stop(&self, d: &Deletion, now: Time) -> Time {
        self.timelines
            .iter()
            .zip(&self.pod.spec.containers)
            .filter(|(tl, _)| tl.is_running())
            .map(|(tl, c)| {
                let kill_at = d.kill_at(c);
                tl.next_change(&self.script, false)
                    .map_or(kill_at, |e| e.min(kill_at))
            })
            .filter(|t| *t > now)
            .min()
            .unwrap_or(now)
    }

    /// After a deletion: a container waiting to restart stays as it ended.
    fn finish(&mut self) {
        for tl in &mut self.timelines {
            if let (State::BackOff, Some(last)) = (tl.state, tl.last) {
                tl.state = State::Done(last);
                tl.last = None;
                tl.restarts = last.run;
            }
        }
    }

    /// Whether every container has ended for good; then when the last did.
    fn ended(&self) -> Option<Time> {
        self.timelines
            .iter()
            .map(|tl| match tl.state {
                State::Done(exit) => Some(exit.finished),
                _ => None,
            })
            .try_fold(self.t0, |acc, t| t.map(|t| acc.max(t)))
    }

    /// The status of the pod as its containers now are. `finished`: the
    /// pod is being removed after a deletion (its phase is final).
    fn status(
        &self,
        stored: &Status<'a>,
        now: Time,
        place: &Place<'_>,
        finished: bool,
    ) -> Status<'a> {
        let pod = self.pod;
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        let ended = self.ended();
        let mut init = Vec::with_capacity(pod.spec.init_containers.len());
        let mut sidecars_running = 0;
        for c in &pod.spec.init_containers {
            let tl = self.init_timeline(c, stored, ended);
            sidecars_running += usize::from(tl.is_running());
            init.push(self.container_status(c, &tl, uid, !is_sidecar(c)));
        }
        let containers: Vec<ContainerStatus<'a>> = pod
            .spec
            .containers
            .iter()
            .zip(&self.timelines)
            .map(|(c, tl)| self.container_status(c, tl, uid, false))
            .collect();
        let phase = self.phase(sidecars_running, finished);
        let host_ip = stored
            .host_ip
            .clone()
            .unwrap_or_else(|| Cow::Owned(place.host_ip.to_owned()));
        let pod_ip = stored.pod_ip.clone().or_else(|| {
            if pod.spec.host_network == Some(true) {
                Some(host_ip.clone())
            } else {
                place.pod_ip.map(|ip| Cow::Owned(ip.to_owned()))
            }
        });
        let ips = |stored: &[Ip<'a>], ip: &Option<Str<'a>>| {
            if stored.is_empty() {
                ip.iter().map(|ip| Ip { ip: ip.clone() }).collect()
            } else {
                stored.to_vec()
            }
        };
        let statuses: Vec<&ContainerStatus<'_>> = init
            .iter()
            .zip(&pod.spec.init_containers)
            .filter(|(_, c)| is_sidecar(c))
            .map(|(s, _)| s)
            .chain(&containers)
            .collect();
        Status {
            phase: Some(Cow::Borrowed(phase)),
            conditions: conditions(stored, pod, phase, &statuses, now),
            host_ips: ips(&stored.host_ips, &Some(host_ip.clone())),
            host_ip: Some(host_ip),
            pod_ips: ips(&stored.pod_ips, &pod_ip),
            pod_ip,
            start_time: Some(
                stored
                    .start_time
                    .clone()
                    .unwrap_or_else(|| Cow::Owned(self.t0.to_rfc3339())),
            ),
            init_container_statuses: init,
            container_statuses: containers,
            qos_class: Some(Cow::Borrowed(qos::class(&pod.spec))),
            ephemeral_container_statuses: self.ephemeral_statuses(stored, now, phase, uid),
        }
    }

    /// The pod's ephemeral containers (`kubectl debug`): each started when
    /// the kubelet first sees it, if the pod still runs, and running from
    /// then on; never ready, never restarted, as a kubelet runs them.
    fn ephemeral_statuses(
        &self,
        stored: &Status<'_>,
        now: Time,
        phase: &str,
        uid: &str,
    ) -> Vec<ContainerStatus<'a>> {
        let running = phase == "Running" && !self.terminating;
        self.pod
            .spec
            .ephemeral_containers
            .iter()
            .filter_map(|c| {
                let seen = stored
                    .ephemeral_container_statuses
                    .iter()
                    .find(|s| s.name == c.name)
                    .and_then(from_status);
                let tl = seen.or_else(|| running.then(|| Timeline::start(now)))?;
                let mut status = self.container_status(c, &tl, uid, false);
                status.ready = false;
                Some(status)
            })
            .collect()
    }

    /// An init container's timeline. A regular one completed at the pod's
    /// start, with no time taken; a sidecar runs from then until the main
    /// containers have all ended (`ended`), when it is stopped too.
    fn init_timeline(
        &self,
        c: &Container<'_>,
        stored: &Status<'_>,
        ended: Option<Time>,
    ) -> Timeline {
        let exit = |finished| Exit {
            code: 0,
            started: self.t0,
            finished,
            run: 0,
            killed: false,
        };
        if !is_sidecar(c) {
            return Timeline {
                state: State::Done(exit(self.t0)),
                restarts: 0,
                last: None,
            };
        }
        let sidecar = stored
            .init_container_statuses
            .iter()
            .find(|s| s.name == c.name)
            .and_then(from_status)
            .filter(Timeline::is_running)
            .unwrap_or_else(|| Timeline::start(self.t0));
        match ended {
            Some(at) => Timeline {
                state: State::Done(Exit {
                    run: sidecar.restarts,
                    ..exit(at)
                }),
                ..sidecar
            },
            None => sidecar,
        }
    }

    /// The pod's phase, as kubelet's `getPhase` reads its containers.
    fn phase(&self, sidecars_running: usize, finished: bool) -> &'static str {
        let running = sidecars_running + self.timelines.iter().filter(|t| t.is_running()).count();
        let stopped = self.timelines.len() + sidecars_running - running;
        let succeeded = self
            .timelines
            .iter()
            .filter(|t| matches!(t.state, State::Done(e) if e.code == 0))
            .count();
        if running > 0 {
            return "Running";
        }
        if stopped == 0 {
            return "Pending";
        }
        if finished {
            // The pod is over: its containers will not be started again.
            return if stopped == succeeded {
                "Succeeded"
            } else {
                "Failed"
            };
        }
        match self.script.policy {
            RestartPolicy::Always => "Running",
            _ if stopped == succeeded => "Succeeded",
            RestartPolicy::Never => "Failed",
            RestartPolicy::OnFailure => "Running",
        }
    }

    fn container_status(
        &self,
        c: &'a Container<'a>,
        tl: &Timeline,
        uid: &str,
        init: bool,
    ) -> ContainerStatus<'a> {
        let pod = self.pod;
        let image: Str<'a> = c.image.clone().unwrap_or_default();
        let terminated = |e: &Exit| Terminated {
            exit_code: e.code,
            reason: Some(Cow::Borrowed(e.reason())),
            started_at: Some(Cow::Owned(e.started.to_rfc3339())),
            finished_at: Some(Cow::Owned(e.finished.to_rfc3339())),
            container_id: Some(Cow::Owned(ids::container_id(uid, &c.name, e.run))),
        };
        let (state, id, ready, started) = match tl.state {
            State::Running { since } => (
                ContainerState {
                    running: Some(Running {
                        started_at: Some(Cow::Owned(since.to_rfc3339())),
                    }),
                    ..ContainerState::default()
                },
                tl.restarts,
                !self.terminating,
                true,
            ),
            State::BackOff => {
                let last = tl.last.unwrap_or(Exit {
                    code: 0,
                    started: self.t0,
                    finished: self.t0,
                    run: tl.restarts,
                    killed: false,
                });
                let wait = backoff(tl.restarts, last.finished.since(last.started));
                let message = format!(
                    "back-off {} restarting failed container={} pod={}_{}({uid})",
                    duration::format_secs(wait.as_secs()),
                    c.name,
                    pod.metadata.name,
                    pod.metadata.namespace.as_deref().unwrap_or_default(),
                );
                (
                    ContainerState {
                        waiting: Some(Waiting {
                            reason: Some(Cow::Borrowed("CrashLoopBackOff")),
                            message: Some(Cow::Owned(message)),
                        }),
                        ..ContainerState::default()
                    },
                    last.run,
                    false,
                    false,
                )
            }
            State::Done(exit) => (
                ContainerState {
                    terminated: Some(terminated(&exit)),
                    ..ContainerState::default()
                },
                exit.run,
                // An init container that completed is ready.
                init && exit.code == 0,
                false,
            ),
        };
        ContainerStatus {
            name: Cow::Borrowed(&c.name),
            state,
            last_state: ContainerState {
                terminated: tl.last.as_ref().map(terminated),
                ..ContainerState::default()
            },
            ready,
            restart_count: tl.restarts,
            image_id: Cow::Owned(ids::image_id(&image)),
            image,
            container_id: Some(Cow::Owned(ids::container_id(uid, &c.name, id))),
            started: Some(started),
        }
    }
}

/// An init container with `restartPolicy: Always`: a sidecar, which keeps
/// running beside the main containers.
fn is_sidecar(c: &Container<'_>) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// A container's timeline from its stored status, if that is one a
/// kubelet wrote (running, waiting to restart after an exit, or ended).
fn from_status(s: &ContainerStatus<'_>) -> Option<Timeline> {
    let exit = |t: &Terminated<'_>, run: i64| {
        Some(Exit {
            code: t.exit_code,
            started: Time::parse(t.started_at.as_deref()?)?,
            finished: Time::parse(t.finished_at.as_deref()?)?,
            run,
            killed: false,
        })
    };
    let restarts = s.restart_count.max(0);
    let last = s.last_state.terminated.as_ref();
    if let Some(r) = &s.state.running {
        return Some(Timeline {
            state: State::Running {
                since: Time::parse(r.started_at.as_deref()?)?,
            },
            restarts,
            last: last.and_then(|t| exit(t, restarts - 1)),
        });
    }
    if let Some(t) = &s.state.terminated {
        return Some(Timeline {
            state: State::Done(exit(t, restarts)?),
            restarts,
            last: last.and_then(|t| exit(t, restarts - 1)),
        });
    }
    if s.state.waiting.is_some() {
        return Some(Timeline {
            state: State::BackOff,
            restarts,
            last: Some(exit(last?, restarts)?),
        });
    }
    None
}

/// A reference to the pod, for events about it.
pub(crate) fn pod_ref(pod: &Pod<'_>) -> ObjectRef {
    ObjectRef::new(
        "v1",
        "Pod",
        pod.metadata.namespace.as_deref().unwrap_or("default"),
        &*pod.metadata.name,
    )
}

/// The earlier of two optional instants.
pub(crate) fn earliest(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The latest instant the stored status records (when it was last
/// written, near enough), and the start of a deletion: the `now` at which
/// `index` checks whether the status is the kubelet's.
pub(crate) fn as_of(pod: &Pod<'_>) -> Time {
    let s = &pod.status;
    let mut latest = Time::UNIX_EPOCH;
    let mut see = |t: Option<&str>| {
        if let Some(t) = t.and_then(Time::parse) {
            latest = latest.max(t);
        }
    };
    see(s.start_time.as_deref());
    for c in s
        .init_container_statuses
        .iter()
        .chain(&s.container_statuses)
    {
        see(c
            .state
            .running
            .as_ref()
            .and_then(|r| r.started_at.as_deref()));
        see(c
            .state
            .terminated
            .as_ref()
            .and_then(|t| t.finished_at.as_deref()));
        see(c
            .last_state
            .terminated
            .as_ref()
            .and_then(|t| t.finished_at.as_deref()));
    }
    for c in &s.conditions {
        if let Cond::Own(c) = classify(c) {
            see(c.last_transition_time.as_deref());
        }
    }
    match Deletion::of(&pod.metadata) {
        Some(d) => latest.max(d.started),
        None => latest,
    }
}
