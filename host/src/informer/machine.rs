//! The informer's list / stream / watch state machine, as plain data and
//! one function: [`Machine::step`] takes what just happened on the wire
//! ([`Input`]) and returns, through the caller's buffer, what to do
//! ([`Action`]s: cache writes, counters, failures to record, restarts).
//! The task around it (`task.rs`) does the I/O; [`Machine::request`] tells
//! it which request comes next. kube-runtime's `watcher` state enum is the
//! model.
//!
//! The states, in order of a healthy start:
//!
//! ```text
//!              streaming lists                        paged LISTs
//! Empty ──open──► Streaming ──end bookmark──┐   Empty ──page──► Listing ──last page──┐
//!            (ADDED events collected)       │          (pages collected)             │
//!                                           ▼                                        ▼
//!                             Watching { version } ◄─────────────────────────────────┘
//! ```
//!
//! `Watching` resumes from its version after a disconnect; a 410 Gone
//! sends it back to `Empty`, to fetch the full state again. A server that
//! refuses streaming lists (4xx), or ignores them (a bookmark without the
//! end mark), gets paged LISTs from then on.

use super::decode::{Event, ObjectEvent, Page, Skipped};
use crate::model::CachedObject;

/// What the informer knows, and so what it asks the server for next.
#[derive(Debug)]
enum State {
    /// Nothing: the full state is fetched next.
    Empty,
    /// A paged LIST in progress: the objects so far, and the next page's
    /// token (none: the first page, again).
    Listing {
        objects: Vec<CachedObject>,
        continue_token: Option<String>,
    },
    /// A streaming list in progress, on an open watch: the initial ADDED
    /// events so far.
    Streaming { objects: Vec<CachedObject> },
    /// The cache holds the full state; watching from `version`, the last
    /// version seen.
    Watching { version: String },
}

/// The state, and what carries across states.
#[derive(Debug)]
pub(super) struct Machine {
    state: State,
    /// Full states come from streaming lists (until the server shows it
    /// does not do them).
    streaming: bool,
    /// Failures in a row, for backoff. A paged LIST and a watch closed by
    /// the server end a run of them.
    failures: u32,
    /// A full state was applied before: the next one is a relist.
    listed: bool,
}

/// The request the task makes next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Request {
    /// A page of a paged LIST: the first, or the one after `continue_token`.
    List { continue_token: Option<String> },
    /// A watch from `from`; with none, a streaming list (a watch with
    /// `sendInitialEvents=true`).
    Watch { from: Option<String> },
}

/// What happened on the wire.
#[derive(Debug)]
pub(super) enum Input {
    /// A page of a paged LIST arrived.
    Page(Page),
    /// The LIST request failed; `gone`: with 410 (a continue token expired).
    ListFailed { error: String, gone: bool },
    /// The watch is open.
    Opened,
    /// The server refused to open the watch with this status.
    Refused { code: u16, error: String },
    /// An event arrived on the open watch.
    Event(Event),
    /// The open watch ended by itself.
    Ended(End),
}

/// How an open watch ended by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum End {
    /// The server closed it (its `timeoutSeconds`).
    Closed,
    /// Nothing arrived for the idle timeout.
    Idle,
    /// The connection broke.
    Broken(String),
}

/// What the task does.
#[derive(Debug, PartialEq)]
pub(super) enum Action {
    /// Replace the cache with the full state at `version`, reporting what
    /// changed (deletes missed meanwhile included); the informer is synced
    /// and requests work again.
    Replace {
        objects: Vec<CachedObject>,
        version: String,
        /// It came from a streaming list.
        streamed: bool,
        /// It is not the first full state.
        relist: bool,
    },
    /// An object was added or changed; the cache reflects its
    /// resourceVersion now.
    Upsert(CachedObject),
    /// An object was deleted (this is its last state); the cache reflects
    /// its resourceVersion now.
    Remove(CachedObject),
    /// The cache reflects this version now (a bookmark).
    Version(String),
    /// An object was not taken; `during` says where, for the log.
    Skip {
        skipped: Skipped,
        during: &'static str,
    },
    /// The watch opened: forget the last failure.
    Recovered,
    /// The watch connection is over (each one is counted): stop reading it.
    Restart(Restart),
    /// A request failed: record `error`, then wait out the backoff of the
    /// `failures`-th failure in a row before the next request.
    Failed { error: String, failures: u32 },
}

/// Why a watch connection is over, and so what comes next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Restart {
    /// Closed by the server: resume from the last version.
    Resume,
    /// The version `from` is too old (410): fetch the full state again.
    Relist { from: Option<String> },
    /// Silent for the idle timeout: reconnect.
    Idle,
    /// The server does not do streaming lists: paged LISTs from now on.
    PagedLists(String),
    /// It failed (an [`Action::Failed`] follows).
    Failed,
}

impl Machine {
    /// A machine that knows nothing yet; `streaming`: try streaming lists.
    pub fn new(streaming: bool) -> Self {
        Self {
            state: State::Empty,
            streaming,
            failures: 0,
            listed: false,
        }
    }

    /// The request to make next.
    pub fn request(&self) -> Request {
        match &self.state {
            State::Empty if !self.streaming => Request::List {
                continue_token: None,
            },
            State::Empty | State::Streaming { .. } => Request::Watch { from: None },
            State::Listing { continue_token, .. } => Request::List {
                continue_token: continue_token.clone(),
            },
            State::Watching { version } => Request::Watch {
                from: Some(version.clone()),
            },
        }
    }

    /// True while the cache does not hold a full state: the next request
    /// fetches one, or one is being fetched. (Full-state fetches of every
    /// informer share a bound; the task holds a permit while this is true.)
    pub fn fetching(&self) -> bool {
        !matches!(self.state, State::Watching { .. })
    }

    /// One step: what `input` changes, and what the task must do about it,
    /// pushed onto `actions` in order.
    pub fn step(&mut self, input: Input, actions: &mut Vec<Action>) {
        let state = std::mem::replace(&mut self.state, State::Empty);
        self.state = match (state, input) {
            // A paged LIST.
            (state @ (State::Empty | State::Listing { .. }), Input::Page(page)) => {
                let mut objects = match state {
                    State::Listing { objects, .. } => objects,
                    _ => Vec::new(),
                };
                skips(actions, page.skipped, "list");
                objects.extend(page.objects);
                match page.continue_token {
                    Some(next) => State::Listing {
                        objects,
                        continue_token: Some(next),
                    },
                    None => {
                        self.failures = 0;
                        self.full_state(actions, objects, page.version, false)
                    }
                }
            }
            // The continue token expired mid-list: start over at once.
            (
                State::Listing {
                    continue_token: Some(_),
                    ..
                },
                Input::ListFailed { gone: true, .. },
            ) => State::Listing {
                objects: Vec::new(),
                continue_token: None,
            },
            (State::Empty | State::Listing { .. }, Input::ListFailed { error, .. }) => {
                self.fail(actions, format!("list failed: {error}"));
                State::Empty
            }

            // Opening a watch.
            (State::Empty, Input::Opened) => {
                actions.push(Action::Recovered);
                State::Streaming {
                    objects: Vec::new(),
                }
            }
            (State::Watching { version }, Input::Opened) => {
                actions.push(Action::Recovered);
                State::Watching { version }
            }
            (State::Empty, Input::Refused { code, error }) => match code {
                410 => relist(actions, None),
                400 | 405 | 422 => self.paged_lists(actions, error),
                _ => {
                    self.watch_failed(actions, error);
                    State::Empty
                }
            },
            (State::Watching { version }, Input::Refused { code, error }) => {
                if code == 410 {
                    relist(actions, Some(version))
                } else {
                    self.watch_failed(actions, error);
                    State::Watching { version }
                }
            }

            // A streaming list's initial events.
            (State::Streaming { objects }, Input::Event(event)) => {
                self.initial_event(actions, objects, event)
            }
            // Watching.
            (State::Watching { version }, Input::Event(event)) => {
                self.watch_event(actions, version, event)
            }

            // The watch ended by itself; a streaming list cut short starts
            // over.
            (state, Input::Ended(end)) => {
                match end {
                    End::Closed => {
                        self.failures = 0;
                        actions.push(Action::Restart(Restart::Resume));
                    }
                    End::Idle => actions.push(Action::Restart(Restart::Idle)),
                    End::Broken(error) => self.watch_failed(actions, error),
                }
                match state {
                    State::Streaming { .. } => State::Empty,
                    other => other,
                }
            }

            // What the request made cannot bring (a page while watching, an
            // event with no watch open): nothing changes.
            (state, _) => state,
        };
    }

    /// One event of a streaming list's initial state: objects are collected
    /// until the bookmark that ends them.
    fn initial_event(
        &mut self,
        actions: &mut Vec<Action>,
        mut objects: Vec<CachedObject>,
        event: Event,
    ) -> State {
        match event {
            Event::Object {
                kind: ObjectEvent::Added,
                object,
            } => {
                match object {
                    Ok(o) => objects.push(o),
                    Err(skipped) => actions.push(Action::Skip {
                        skipped,
                        during: "streaming list",
                    }),
                }
                State::Streaming { objects }
            }
            Event::Bookmark {
                version,
                initial_end: true,
            } => self.full_state(actions, objects, version, true),
            Event::Bookmark { .. } => self.paged_lists(
                actions,
                "a bookmark came before the end of the initial events".into(),
            ),
            Event::Error { code: 410, .. } => relist(actions, None),
            Event::Error { code, message } => {
                self.watch_failed(actions, format!("watch error {code}: {message}"));
                State::Empty
            }
            Event::Object { kind, .. } => {
                let kind = kind.as_str();
                self.watch_failed(
                    actions,
                    format!("{kind} event before the initial events ended"),
                );
                State::Empty
            }
            Event::Unknown(kind) => {
                self.watch_failed(
                    actions,
                    format!("{kind} event before the initial events ended"),
                );
                State::Empty
            }
            Event::Malformed(error) => {
                self.watch_failed(actions, error);
                State::Empty
            }
        }
    }

    /// One event of a watch from `version`, the last version seen.
    fn watch_event(
        &mut self,
        actions: &mut Vec<Action>,
        mut version: String,
        event: Event,
    ) -> State {
        match event {
            Event::Object { kind, object } => match object {
                Ok(o) => {
                    if !o.resource_version().is_empty() {
                        o.resource_version().clone_into(&mut version);
                    }
                    actions.push(match kind {
                        ObjectEvent::Deleted => Action::Remove(o),
                        ObjectEvent::Added | ObjectEvent::Modified => Action::Upsert(o),
                    });
                }
                Err(skipped) => {
                    // Its version still counts as seen, so a resumed watch
                    // does not bring it back.
                    if let Some(v) = &skipped.version {
                        v.clone_into(&mut version);
                    }
                    actions.push(Action::Skip {
                        skipped,
                        during: kind.as_str(),
                    });
                }
            },
            Event::Bookmark { version: v, .. } => {
                version.clone_from(&v);
                actions.push(Action::Version(v));
            }
            Event::Error { code: 410, .. } => return relist(actions, Some(version)),
            Event::Error { code, message } => {
                self.watch_failed(actions, format!("watch error {code}: {message}"));
            }
            Event::Unknown(kind) => {
                self.watch_failed(actions, format!("unknown watch event type {kind:?}"));
            }
            Event::Malformed(error) => self.watch_failed(actions, error),
        }
        State::Watching { version }
    }

    /// A full state arrived: the cache takes it, and the watch goes on
    /// from its version.
    fn full_state(
        &mut self,
        actions: &mut Vec<Action>,
        objects: Vec<CachedObject>,
        version: String,
        streamed: bool,
    ) -> State {
        actions.push(Action::Replace {
            objects,
            version: version.clone(),
            streamed,
            relist: std::mem::replace(&mut self.listed, true),
        });
        State::Watching { version }
    }

    /// A request failed: counted, recorded, backed off.
    fn fail(&mut self, actions: &mut Vec<Action>, error: String) {
        self.failures += 1;
        actions.push(Action::Failed {
            error,
            failures: self.failures,
        });
    }

    /// The watch failed: the connection is over, and the failure recorded.
    fn watch_failed(&mut self, actions: &mut Vec<Action>, error: String) {
        actions.push(Action::Restart(Restart::Failed));
        self.fail(actions, format!("watch failed: {error}"));
    }

    /// The server does not do streaming lists: paged LISTs from now on.
    fn paged_lists(&mut self, actions: &mut Vec<Action>, why: String) -> State {
        self.streaming = false;
        actions.push(Action::Restart(Restart::PagedLists(why)));
        State::Empty
    }
}

/// 410 Gone: the full state again.
fn relist(actions: &mut Vec<Action>, from: Option<String>) -> State {
    actions.push(Action::Restart(Restart::Relist { from }));
    State::Empty
}

fn skips(actions: &mut Vec<Action>, skipped: Vec<Skipped>, during: &'static str) {
    actions.extend(
        skipped
            .into_iter()
            .map(|skipped| Action::Skip { skipped, during }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, rv: &str) -> CachedObject {
        let text = format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"ns","uid":"u-{name}","resourceVersion":"{rv}"}}}}"#
        );
        CachedObject::parse(&text).unwrap()
    }

    fn added(name: &str, rv: &str) -> Input {
        Input::Event(Event::Object {
            kind: ObjectEvent::Added,
            object: Ok(object(name, rv)),
        })
    }

    fn bookmark(version: &str, initial_end: bool) -> Input {
        Input::Event(Event::Bookmark {
            version: version.into(),
            initial_end,
        })
    }

    fn page(names: &[&str], continue_token: Option<&str>, version: &str) -> Input {
        Input::Page(Page {
            objects: names.iter().map(|n| object(n, "1")).collect(),
            skipped: Vec::new(),
            continue_token: continue_token.map(Into::into),
            version: version.into(),
        })
    }

    fn step(m: &mut Machine, input: Input) -> Vec<Action> {
        let mut actions = Vec::new();
        m.step(input, &mut actions);
        actions
    }

    fn names(objects: &[CachedObject]) -> Vec<&str> {
        objects.iter().map(|o| o.name()).collect()
    }

    /// The machine after a streaming list that ended at version `rv`.
    fn watching(rv: &str) -> Machine {
        let mut m = Machine::new(true);
        step(&mut m, Input::Opened);
        step(&mut m, bookmark(rv, true));
        m
    }

    #[test]
    fn a_streaming_list_collects_added_events_until_the_end_bookmark() {
        let mut m = Machine::new(true);
        assert_eq!(m.request(), Request::Watch { from: None });
        assert!(m.fetching());
        assert_eq!(step(&mut m, Input::Opened), [Action::Recovered]);
        assert!(step(&mut m, added("a", "5")).is_empty());
        assert!(step(&mut m, added("b", "6")).is_empty());
        let actions = step(&mut m, bookmark("9", true));
        let [
            Action::Replace {
                objects,
                version,
                streamed: true,
                relist: false,
            },
        ] = &actions[..]
        else {
            panic!("{actions:?}")
        };
        assert_eq!((names(objects), version.as_str()), (vec!["a", "b"], "9"));
        assert!(!m.fetching());
        assert_eq!(
            m.request(),
            Request::Watch {
                from: Some("9".into())
            }
        );
    }

    #[test]
    fn watch_events_change_the_cache_and_move_the_version() {
        let mut m = watching("9");
        assert_eq!(
            step(&mut m, added("a", "10")),
            [Action::Upsert(object("a", "10"))]
        );
        let deleted = Input::Event(Event::Object {
            kind: ObjectEvent::Deleted,
            object: Ok(object("a", "11")),
        });
        assert_eq!(step(&mut m, deleted), [Action::Remove(object("a", "11"))]);
        assert_eq!(
            step(&mut m, bookmark("12", false)),
            [Action::Version("12".into())]
        );
        // A skipped object's version counts as seen.
        let skipped = Skipped {
            key: "ns/big".into(),
            version: Some("13".into()),
            error: "too big".into(),
        };
        let bad = Input::Event(Event::Object {
            kind: ObjectEvent::Modified,
            object: Err(skipped.clone()),
        });
        assert_eq!(
            step(&mut m, bad),
            [Action::Skip {
                skipped,
                during: "MODIFIED"
            }]
        );
        assert_eq!(
            m.request(),
            Request::Watch {
                from: Some("13".into())
            }
        );
        // Closed by the server: resume from there.
        assert_eq!(
            step(&mut m, Input::Ended(End::Closed)),
            [Action::Restart(Restart::Resume)]
        );
        assert_eq!(
            m.request(),
            Request::Watch {
                from: Some("13".into())
            }
        );
    }

    #[test]
    fn gone_fetches_the_full_state_again_as_a_relist() {
        let mut m = watching("9");
        let gone = Input::Event(Event::Error {
            code: 410,
            message: "too old".into(),
        });
        assert_eq!(
            step(&mut m, gone),
            [Action::Restart(Restart::Relist {
                from: Some("9".into())
            })]
        );
        assert!(m.fetching());
        assert_eq!(m.request(), Request::Watch { from: None });
        step(&mut m, Input::Opened);
        let actions = step(&mut m, bookmark("20", true));
        assert!(
            matches!(&actions[..], [Action::Replace { relist: true, .. }]),
            "{actions:?}"
        );
        // A 410 when opening the watch does the same.
        let mut m = watching("9");
        let refused = Input::Refused {
            code: 410,
            error: "gone".into(),
        };
        assert_eq!(
            step(&mut m, refused),
            [Action::Restart(Restart::Relist {
                from: Some("9".into())
            })]
        );
    }

    #[test]
    fn a_server_that_refuses_or_ignores_streaming_lists_gets_paged_lists() {
        for refusal in [
            Input::Refused {
                code: 422,
                error: "no".into(),
            },
            Input::Event(Event::Bookmark {
                version: "3".into(),
                initial_end: false,
            }),
        ] {
            let mut m = Machine::new(true);
            if matches!(refusal, Input::Event(_)) {
                step(&mut m, Input::Opened);
            }
            let actions = step(&mut m, refusal);
            assert!(
                matches!(&actions[..], [Action::Restart(Restart::PagedLists(_))]),
                "{actions:?}"
            );
            assert_eq!(
                m.request(),
                Request::List {
                    continue_token: None
                }
            );
        }
        // A refusal of a watch from a version is only a failure.
        let mut m = watching("9");
        let refused = Input::Refused {
            code: 422,
            error: "no".into(),
        };
        assert_eq!(
            step(&mut m, refused),
            [
                Action::Restart(Restart::Failed),
                Action::Failed {
                    error: "watch failed: no".into(),
                    failures: 1
                }
            ]
        );
        assert_eq!(
            m.request(),
            Request::Watch {
                from: Some("9".into())
            }
        );
    }

    #[test]
    fn paged_lists_collect_every_page_and_restart_when_the_token_expires() {
        let mut m = Machine::new(false);
        assert!(step(&mut m, page(&["a"], Some("t1"), "")).is_empty());
        assert_eq!(
            m.request(),
            Request::List {
                continue_token: Some("t1".into())
            }
        );
        // The token expired: the list starts over, without a failure.
        let gone = Input::ListFailed {
            error: "expired".into(),
            gone: true,
        };
        assert!(step(&mut m, gone).is_empty());
        assert_eq!(
            m.request(),
            Request::List {
                continue_token: None
            }
        );
        step(&mut m, page(&["a", "b"], Some("t2"), ""));
        let actions = step(&mut m, page(&["c"], None, "30"));
        let [
            Action::Replace {
                objects,
                version,
                streamed: false,
                relist: false,
            },
        ] = &actions[..]
        else {
            panic!("{actions:?}")
        };
        assert_eq!(
            (names(objects), version.as_str()),
            (vec!["a", "b", "c"], "30")
        );
        assert_eq!(
            m.request(),
            Request::Watch {
                from: Some("30".into())
            }
        );
    }

    #[test]
    fn failures_count_up_until_a_list_or_a_closed_watch() {
        let mut m = Machine::new(false);
        let failed = || Input::ListFailed {
            error: "503".into(),
            gone: true, // a 410 on the first page is a failure like any
        };
        for n in 1..=3 {
            assert_eq!(
                step(&mut m, failed()),
                [Action::Failed {
                    error: "list failed: 503".into(),
                    failures: n
                }]
            );
        }
        step(&mut m, page(&[], None, "4"));
        let broken = Input::Ended(End::Broken("reset".into()));
        assert_eq!(
            step(&mut m, broken),
            [
                Action::Restart(Restart::Failed),
                Action::Failed {
                    error: "watch failed: reset".into(),
                    failures: 1
                }
            ]
        );
        // Silence is not a failure, and does not end a run of them.
        assert_eq!(
            step(&mut m, Input::Ended(End::Idle)),
            [Action::Restart(Restart::Idle)]
        );
        let malformed = Input::Event(Event::Malformed("malformed watch event: x".into()));
        assert!(matches!(
            &step(&mut m, malformed)[..],
            [_, Action::Failed { failures: 2, .. }]
        ));
        step(&mut m, Input::Ended(End::Closed));
        let error = Input::Event(Event::Error {
            code: 500,
            message: "boom".into(),
        });
        assert_eq!(
            step(&mut m, error),
            [
                Action::Restart(Restart::Failed),
                Action::Failed {
                    error: "watch failed: watch error 500: boom".into(),
                    failures: 1
                }
            ]
        );
    }

    #[test]
    fn a_streaming_list_cut_short_starts_over_and_keeps_nothing() {
        let mut m = Machine::new(true);
        step(&mut m, Input::Opened);
        step(&mut m, added("a", "5"));
        assert_eq!(
            step(&mut m, Input::Ended(End::Idle)),
            [Action::Restart(Restart::Idle)]
        );
        assert_eq!(m.request(), Request::Watch { from: None });
        step(&mut m, Input::Opened);
        let modified = Input::Event(Event::Object {
            kind: ObjectEvent::Modified,
            object: Ok(object("a", "6")),
        });
        assert_eq!(
            step(&mut m, modified),
            [
                Action::Restart(Restart::Failed),
                Action::Failed {
                    error: "watch failed: MODIFIED event before the initial events ended".into(),
                    failures: 1
                }
            ]
        );
        step(&mut m, Input::Opened);
        let actions = step(&mut m, bookmark("7", true));
        assert!(
            matches!(&actions[..], [Action::Replace { objects, .. }] if objects.is_empty()),
            "{actions:?}"
        );
    }
}
