//! Watch streams: resume after a revision, synthetic initial events,
//! streaming lists, bookmarks, selector transitions and slow-watcher cut-off.
//!
//! Each watch is one task reading the shared broadcast of events (every event
//! serialized once, in revision order) and writing lines into a small bounded
//! channel that feeds the HTTP body. A watcher that falls behind the
//! broadcast, or does not take a line within [`SLOW_WATCHER`], is closed; its
//! client resumes from the last revision it saw.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::Response;
use serde_json::json;
use tokio::sync::{broadcast, mpsc};

use crate::filter::Filter;
use crate::represent::{self, Shape};
use crate::request::{ChannelBody, Query, RespBody};
use crate::resources::Resource;
use crate::shared::Shared;
use crate::state::{Event, EventType, Obj, RvError, event_line};
use crate::status::{ApiError, ApiResult};
use crate::table;

/// How long a watcher may leave a line untaken before it is closed.
const SLOW_WATCHER: Duration = Duration::from_secs(10);
/// Lines buffered per watcher between its task and the connection.
const LINE_BUFFER: usize = 256;
/// The server-side cap on a watch's duration, like `--min-request-timeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

struct Watcher {
    res: Arc<Resource>,
    version: String,
    filter: Filter,
    shape: Shape,
    /// What a Table's rows carry (`includeObject`).
    rows: table::RowObject,
    table_columns_sent: bool,
    tx: mpsc::Sender<Bytes>,
}

impl Watcher {
    async fn send(&mut self, line: Bytes) -> bool {
        matches!(
            tokio::time::timeout(SLOW_WATCHER, self.tx.send(line)).await,
            Ok(Ok(()))
        )
    }

    fn line(&mut self, typ: &str, obj: &Obj, shared: Option<&Bytes>) -> Bytes {
        let value = match self.shape {
            Shape::Table => {
                let with = !self.table_columns_sent;
                self.table_columns_sent = true;
                table::table(
                    &self.res,
                    std::iter::once(&obj.value()),
                    self.rows,
                    None,
                    None,
                    with,
                )
            }
            Shape::Metadata => represent::partial(&obj.value()),
            Shape::Object => {
                let bytes = represent::object_bytes(&self.res, &self.version, obj);
                return match shared {
                    // The line every watcher shares, when this one's object
                    // is the stored one.
                    Some(line) if bytes.as_ptr() == obj.bytes.as_ptr() => line.clone(),
                    _ => event_line(typ, &bytes),
                };
            }
        };
        event_line(
            typ,
            &serde_json::to_vec(&value).expect("JSON values serialize"),
        )
    }

    /// The line for one event, if this watcher sees it.
    fn translate(&mut self, ev: &Event) -> Option<Bytes> {
        if ev.res != self.res.storage_key() {
            return None;
        }
        let now = self.filter.matches(&ev.obj);
        let before = ev.prev.as_ref().is_some_and(|p| self.filter.matches(p));
        match (ev.typ, before, now) {
            (EventType::Added, _, true)
            | (EventType::Deleted, _, true)
            | (EventType::Modified, true, true) => {
                Some(self.line(ev.typ.as_str(), &ev.obj, Some(&ev.line)))
            }
            (EventType::Modified, false, true) => Some(self.line("ADDED", &ev.obj, None)),
            (EventType::Modified, true, false) => {
                // The object it was, at the revision that moved it.
                let mut v = ev.prev.as_ref()?.value();
                v["metadata"]["resourceVersion"] = json!(ev.rv.to_string());
                Some(self.line("DELETED", &Obj::new(&ev.res, ev.rv, &v), None))
            }
            _ => None,
        }
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = match self.shape {
            Shape::Metadata => {
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta})
            }
            _ => {
                json!({"kind": self.res.kind, "apiVersion": self.res.api_version(&self.version), "metadata": meta})
            }
        };
        event_line(
            "BOOKMARK",
            &serde_json::to_vec(&obj).expect("JSON values serialize"),
        )
    }
}

fn expired_line(rv: u64, floor_hint: &str) -> Bytes {
    let status =
        ApiError::gone(format!("too old resource version: {rv} ({floor_hint})")).to_status();
    event_line(
        "ERROR",
        &serde_json::to_vec(&status).expect("JSON values serialize"),
    )
}

/// Starts a watch and returns the streaming response.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    res: Arc<Resource>,
    version: &str,
    filter: Filter,
    q: &Query,
    shape: Shape,
) -> ApiResult<Response<RespBody>> {
    let rv = q.non_empty("resourceVersion");
    let send_initial = q.flag("sendInitialEvents");
    if send_initial && !shared.streaming_lists {
        return Err(ApiError::invalid(
            "ListOptions",
            crate::status::Target { group: "meta.k8s.io", resource: "listoptions", name: "" },
            &[("sendInitialEvents".into(), "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".into())],
        ));
    }
    if send_initial && q.get("resourceVersionMatch") != Some("NotOlderThan") {
        return Err(ApiError::invalid(
            "ListOptions",
            crate::status::Target { group: "meta.k8s.io", resource: "listoptions", name: "" },
            &[("resourceVersionMatch".into(), "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan".into())],
        ));
    }
    let bookmarks = q.flag("allowWatchBookmarks");
    let timeout = q
        .non_empty("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT);
    let synthetic = send_initial || rv.is_none() || rv == Some("0");
    let rows = table::RowObject::of(q)?;
    let (tx, rx) = mpsc::channel(LINE_BUFFER);
    let mut w = Watcher {
        version: version.to_owned(),
        res,
        filter,
        shape,
        rows,
        table_columns_sent: false,
        tx,
    };
    let (initial, from, sub) = {
        let st = shared.lock();
        if synthetic {
            let objs = st.list(&w.res.storage_key(), w.filter.namespace());
            (objs, st.rv, st.subscribe(st.rv))
        } else {
            let from: u64 = rv.unwrap_or_default().parse().map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid resource version: {}",
                    rv.unwrap_or_default()
                ))
            })?;
            (vec![], from, st.subscribe(from))
        }
    };
    let mut shutdown = shared.shutdown.clone();
    let interval = shared.bookmark_interval;
    tokio::spawn(async move {
        let (past, mut live) = match sub {
            Ok(s) => s,
            Err(RvError::Expired | RvError::TooLarge) => {
                let _ = w.send(expired_line(from, "history compacted")).await;
                return;
            }
        };
        for o in &initial {
            if w.filter.matches(o) {
                let line = w.line("ADDED", o, None);
                if !w.send(line).await {
                    return;
                }
            }
        }
        if send_initial {
            let line = w.bookmark(from, true);
            if !w.send(line).await {
                return;
            }
        }
        let mut last = from;
        for ev in past {
            if ev.rv <= last {
                continue;
            }
            last = ev.rv;
            if let Some(line) = w.translate(&ev)
                && !w.send(line).await
            {
                return;
            }
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
        loop {
            tokio::select! {
                ev = live.recv() => match ev {
                    Ok(ev) => {
                        if ev.rv <= last {
                            continue;
                        }
                        last = ev.rv;
                        if let Some(line) = w.translate(&ev)
                            && !w.send(line).await {
                                return;
                            }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) | Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = tick.tick(), if bookmarks => {
                    let line = w.bookmark(last, false);
                    if !w.send(line).await {
                        return;
                    }
                }
                _ = &mut deadline => return,
                _ = shutdown.changed() => return,
            }
        }
    });
    Ok(Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(http_body_util::BodyExt::boxed(ChannelBody(rx)))
        .expect("static response parts are valid"))
}

/// Only used by tests: the value of a bookmark line.
#[cfg(test)]
fn parse_line(b: &Bytes) -> serde_json::Value {
    serde_json::from_slice(b).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Query;
    use crate::resources::builtins;
    use crate::state::Obj;
    use serde_json::Value;

    fn watcher(selector: &str) -> Watcher {
        let res = Arc::new(
            builtins()
                .into_iter()
                .find(|r| r.plural == "configmaps")
                .unwrap(),
        );
        let q = Query::parse(Some(&format!("labelSelector={selector}")));
        let filter = Filter::parse(&res, "v1", &q, Some("d"), None).unwrap();
        let (tx, _rx) = mpsc::channel(1);
        Watcher {
            version: "v1".into(),
            res,
            filter,
            shape: Shape::Object,
            rows: table::RowObject::Metadata,
            table_columns_sent: false,
            tx,
        }
    }

    fn ev(typ: EventType, rv: u64, labels: Value, prev_labels: Option<Value>) -> Event {
        let obj = Arc::new(Obj::new(
            "/configmaps",
            rv,
            &json!({"metadata": {"name": "c", "namespace": "d", "labels": labels, "resourceVersion": rv.to_string()}}),
        ));
        let prev = prev_labels.map(|l| {
            Arc::new(Obj::new(
                "/configmaps",
                rv - 1,
                &json!({"metadata": {"name": "c", "namespace": "d", "labels": l}}),
            ))
        });
        Event {
            rv,
            typ,
            res: "/configmaps".into(),
            ns: "d".into(),
            name: "c".into(),
            line: event_line(typ.as_str(), &obj.bytes),
            obj,
            prev,
        }
    }

    #[test]
    fn selector_transitions_become_added_and_deleted() {
        let mut w = watcher("app%3Dweb");
        let enter = w
            .translate(&ev(
                EventType::Modified,
                5,
                json!({"app": "web"}),
                Some(json!({})),
            ))
            .unwrap();
        assert_eq!(parse_line(&enter)["type"], "ADDED");
        let leave = w
            .translate(&ev(
                EventType::Modified,
                6,
                json!({}),
                Some(json!({"app": "web"})),
            ))
            .unwrap();
        let leave = parse_line(&leave);
        assert_eq!(leave["type"], "DELETED");
        assert_eq!(leave["object"]["metadata"]["resourceVersion"], "6");
        assert!(
            w.translate(&ev(EventType::Modified, 7, json!({}), Some(json!({}))))
                .is_none()
        );
        let stay = w
            .translate(&ev(
                EventType::Modified,
                8,
                json!({"app": "web"}),
                Some(json!({"app": "web"})),
            ))
            .unwrap();
        assert_eq!(parse_line(&stay)["type"], "MODIFIED");
    }

    #[test]
    fn bookmarks_carry_only_the_revision() {
        let w = watcher("");
        let b = parse_line(&w.bookmark(42, true));
        assert_eq!(b["type"], "BOOKMARK");
        assert_eq!(b["object"]["metadata"]["resourceVersion"], "42");
        assert_eq!(
            b["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
        assert_eq!(b["object"]["kind"], "ConfigMap");
    }
}
