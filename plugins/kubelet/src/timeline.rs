//! One container's life on a simulated node: when it exits (the pod's
//! `windlass.dev/exit-after`), and when the kubelet starts it again.
//!
//! The state is what the pod's status says (running since, waiting in
//! back-off after an exit, or terminated for good), so the same status and
//! the same clock always give the same answer. Kubelet's restart back-off
//! (`pkg/kubelet/kuberuntime`, `doBackOff` over a `flowcontrol.Backoff` of
//! 10 s doubling to 5 min): the first exit restarts at once, the n-th waits
//! 10 s · 2ⁿ⁻², at most 5 min; a container that ran longer than 10 min
//! before exiting starts the sequence again.

use std::time::Duration;

use windlass_sdk::Time;

/// How kubelet restarts a pod's containers (`spec.restartPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestartPolicy {
    Always,
    OnFailure,
    Never,
}

impl RestartPolicy {
    /// The pod's policy; `Always` when unset (the API default).
    pub(crate) fn parse(text: Option<&str>) -> Self {
        match text {
            Some("Never") => RestartPolicy::Never,
            Some("OnFailure") => RestartPolicy::OnFailure,
            _ => RestartPolicy::Always,
        }
    }

    /// Whether a container that exited with `code` is started again.
    pub(crate) fn restarts(self, code: i64) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => code != 0,
            RestartPolicy::Never => false,
        }
    }
}

/// What the pod's annotations script for its containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Script {
    /// How long each run lasts; `None`: until the pod is deleted.
    pub exit_after: Option<Duration>,
    /// The code each run exits with.
    pub exit_code: i64,
    pub policy: RestartPolicy,
}

/// One finished run of a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Exit {
    pub code: i64,
    pub started: Time,
    pub finished: Time,
    /// Which run it was (the restart count while it ran): its container ID.
    pub run: i64,
    /// Stopped by the kubelet (deletion) rather than by itself.
    pub killed: bool,
}

impl Exit {
    /// Kubelet's reason for a terminated container.
    pub(crate) fn reason(&self) -> &'static str {
        if self.code == 0 { "Completed" } else { "Error" }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Running {
        since: Time,
    },
    /// Exited (see `Timeline::last`) and waiting out the back-off.
    BackOff,
    /// Exited and not to be started again.
    Done(Exit),
}

/// A container's state, its restart count and its previous run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeline {
    pub state: State,
    pub restarts: i64,
    pub last: Option<Exit>,
}

/// Bounds catching up after a long absence (each cycle after the first
/// few takes at least 10 s plus the run).
const MAX_STEPS: usize = 10_000;
const BACKOFF_START: Duration = Duration::from_secs(10);
const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// How long kubelet waits before starting a container again after an exit
/// that ended a run of `ran` with `restarts` restarts so far.
pub(crate) fn backoff(restarts: i64, ran: Duration) -> Duration {
    if restarts <= 0 || ran > 2 * BACKOFF_MAX {
        return Duration::ZERO;
    }
    let doublings = u32::try_from(restarts - 1).unwrap_or(u32::MAX).min(16);
    (BACKOFF_START * 2u32.pow(doublings)).min(BACKOFF_MAX)
}

/// `t` to whole seconds, as the API server stores a `metav1.Time`.
pub(crate) fn whole_seconds(t: Time) -> Time {
    Time::from_millis(t.millis().div_euclid(1000) * 1000)
}

impl Timeline {
    /// A first run starting at `at`.
    pub(crate) fn start(at: Time) -> Self {
        Timeline {
            state: State::Running { since: at },
            restarts: 0,
            last: None,
        }
    }

    /// When the back-off after the last exit ends.
    pub(crate) fn backoff_ends(&self) -> Option<Time> {
        let last = self.last?;
        Some(last.finished + backoff(self.restarts, last.finished.since(last.started)))
    }

    /// When this timeline next changes by itself: a run ends, or a back-off
    /// is over (only while restarts are allowed).
    pub(crate) fn next_change(&self, script: &Script, restarts: bool) -> Option<Time> {
        match self.state {
            State::Running { since } => script.exit_after.map(|e| since + e),
            State::BackOff if restarts => self.backoff_ends(),
            State::BackOff | State::Done(_) => None,
        }
    }

    /// Lives the timeline up to `until`: runs end, and (while `restarts`)
    /// containers start again as the policy and back-off say.
    pub(crate) fn advance(&mut self, script: &Script, until: Time, restarts: bool) {
        for _ in 0..MAX_STEPS {
            match self.next_change(script, restarts) {
                Some(at) if at <= until => self.step(script, at, restarts),
                _ => return,
            }
        }
    }

    fn step(&mut self, script: &Script, at: Time, restarts: bool) {
        match self.state {
            State::Running { since } => {
                let exit = Exit {
                    code: script.exit_code,
                    started: since,
                    finished: whole_seconds(at),
                    run: self.restarts,
                    killed: false,
                };
                if !(restarts && script.policy.restarts(exit.code)) {
                    self.state = State::Done(exit);
                    return;
                }
                self.last = Some(exit);
                self.state = State::BackOff;
                if self.backoff_ends().is_some_and(|end| end <= exit.finished) {
                    self.restart(exit.finished);
                }
            }
            State::BackOff => self.restart(at),
            State::Done(_) => {}
        }
    }

    fn restart(&mut self, at: Time) {
        self.restarts += 1;
        self.state = State::Running {
            since: whole_seconds(at),
        };
    }

    /// Stops a running container at `at` (the kubelet killing it).
    pub(crate) fn kill(&mut self, at: Time) {
        if let State::Running { since } = self.state {
            self.state = State::Done(Exit {
                code: 137,
                started: since,
                finished: whole_seconds(at),
                run: self.restarts,
                killed: true,
            });
        }
    }

    pub(crate) fn is_running(&self) -> bool {
        matches!(self.state, State::Running { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Time {
        Time::from_millis(secs * 1000)
    }

    #[test]
    fn backoff_doubles_from_the_second_exit_and_caps() {
        let ran = Duration::from_secs(30);
        let secs: Vec<u64> = (0..9).map(|n| backoff(n, ran).as_secs()).collect();
        assert_eq!(secs, [0, 10, 20, 40, 80, 160, 300, 300, 300]);
        // A run longer than twice the cap resets the sequence.
        assert_eq!(backoff(5, Duration::from_secs(601)), Duration::ZERO);
        assert_eq!(backoff(5, Duration::from_secs(600)).as_secs(), 160);
    }

    #[test]
    fn always_restarts_with_backoff() {
        let script = Script {
            exit_after: Some(Duration::from_secs(30)),
            exit_code: 1,
            policy: RestartPolicy::Always,
        };
        let mut tl = Timeline::start(t(0));
        tl.advance(&script, t(29), true);
        assert_eq!(tl, Timeline::start(t(0)));
        // First exit at 30: restarted at once.
        tl.advance(&script, t(30), true);
        assert_eq!(tl.state, State::Running { since: t(30) });
        assert_eq!(tl.restarts, 1);
        // Second exit at 60: back-off 10 s, running again at 70.
        tl.advance(&script, t(65), true);
        assert_eq!(tl.state, State::BackOff);
        assert_eq!(tl.next_change(&script, true), Some(t(70)));
        tl.advance(&script, t(70), true);
        assert_eq!(tl.state, State::Running { since: t(70) });
        assert_eq!(tl.restarts, 2);
        // Catching up in one go gives the same as stepping: exits at 100
        // (back-off 20 s) and 150 (40 s), running from 190.
        let mut jump = Timeline::start(t(0));
        jump.advance(&script, t(200), true);
        assert_eq!(jump.state, State::Running { since: t(190) });
        assert_eq!(jump.restarts, 4);
        assert_eq!(jump.last.unwrap().finished, t(150));
    }

    #[test]
    fn never_and_on_failure_stop_for_good() {
        for (policy, code, done) in [
            (RestartPolicy::Never, 0, true),
            (RestartPolicy::Never, 3, true),
            (RestartPolicy::OnFailure, 0, true),
            (RestartPolicy::OnFailure, 3, false),
        ] {
            let script = Script {
                exit_after: Some(Duration::from_millis(1500)),
                exit_code: code,
                policy,
            };
            let mut tl = Timeline::start(t(10));
            tl.advance(&script, t(12), true);
            assert_eq!(
                matches!(tl.state, State::Done(_)),
                done,
                "{policy:?} {code}"
            );
            if let State::Done(exit) = tl.state {
                assert_eq!((exit.code, exit.finished, exit.run), (code, t(11), 0));
            }
        }
    }

    #[test]
    fn no_restarts_while_terminating() {
        let script = Script {
            exit_after: Some(Duration::from_secs(5)),
            exit_code: 0,
            policy: RestartPolicy::Always,
        };
        let mut tl = Timeline::start(t(0));
        tl.advance(&script, t(100), false);
        assert!(matches!(tl.state, State::Done(e) if e.finished == t(5)));
        let mut running = Timeline::start(t(0));
        running.kill(t(3));
        assert!(matches!(running.state, State::Done(e) if e.code == 137 && e.killed));
    }
}
