//! Durable storage: a SQLite revision log in the style of kine, written by one
//! thread that commits concurrent writes as a group.
//!
//! Every write appends a row `(rv, key, deleted, value)`; the current state is
//! the newest row per key, loaded into memory at start. The in-memory store
//! queues writes in revision order; the writer thread takes everything queued
//! at once, commits it in one transaction, then acknowledges each write.
//! Nothing is acknowledged before its commit. While one group commits, the
//! next one queues up, so groups grow with concurrency and commit latency.
//!
//! The database is in WAL mode: a commit has written its frames to the WAL
//! file before it returns. Whether it also waits for the disk depends on the
//! [`Durability`]: not with `synchronous=NORMAL`, which survives the death of
//! the process; an fsync per group with `synchronous=FULL`, which survives
//! power loss.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use rusqlite::{Connection, params};
use tokio::sync::oneshot;

use crate::durability::Durability;

/// How far the revision counter jumps on every start: writes that were
/// visible but not yet durable when the process died may have shown
/// revisions to watchers, and those numbers must never be reused.
pub(crate) const RESTART_GAP: u64 = 1_000_000;

/// Upper bound on writes committed in one transaction.
const MAX_BATCH: usize = 20_000;

/// One appended revision.
#[derive(Debug)]
pub(crate) struct Record {
    pub(crate) rv: u64,
    pub(crate) key: String,
    /// `None` for a deletion.
    pub(crate) value: Option<Bytes>,
    /// A newer record of the same key, queued behind this one, may take its
    /// place in the log (see [`Storage::append_group`]).
    pub(crate) supersedable: bool,
}

/// A queued record and the acknowledgement of its commit.
type Entry = (Queued, Option<Ack>);

/// A record as the queue holds it.
#[derive(Debug)]
struct Queued {
    record: Record,
    /// Must be committed in the same transaction as the entry after it.
    joined: bool,
    /// A newer record of the same key, in the same transaction, replaced
    /// it: nothing is inserted, but its write is acknowledged with the batch.
    superseded: bool,
}

pub(crate) type Ack = oneshot::Sender<Result<(), String>>;

/// Writes on their way from the store to the writer thread.
#[derive(Default)]
struct Queue {
    pending: Mutex<Pending>,
    wake: Condvar,
}

#[derive(Default)]
struct Pending {
    writes: Vec<Entry>,
    /// Where each supersedable record still queued is, by key.
    supersedable: HashMap<String, usize>,
    /// The writer must take at least this many writes in its next batch:
    /// a superseded record and the record that replaced it commit together.
    no_cut_before: usize,
    /// Writes the writer has taken and not yet committed.
    in_flight: usize,
    /// Why the last commit failed; `None` once one succeeds.
    failing: Option<String>,
    /// The writer is waiting for writes: the next one must wake it. (Waking
    /// costs a system call, wasted while the writer is busy committing.)
    idle: bool,
    /// No more writes are taken: the storage was closed or the writer died.
    closed: bool,
}

const WRITER_STOPPED: &str = "storage writer has stopped";

impl Queue {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `group`, to be committed in one transaction.
    fn push(&self, group: Vec<(Record, Option<Ack>)>) {
        let mut p = self.lock();
        if p.closed {
            drop(p);
            for (_, ack) in group {
                if let Some(ack) = ack {
                    let _ = ack.send(Err(WRITER_STOPPED.into()));
                }
            }
            return;
        }
        let last = group.len().saturating_sub(1);
        for (i, (record, ack)) in group.into_iter().enumerate() {
            // While commits fail, a new write waits behind the failing ones:
            // its client hears at once that it is not yet stored, rather than
            // waiting out its timeout.
            let ack = match (&p.failing, ack) {
                (Some(e), Some(ack)) => {
                    let _ = ack.send(Err(format!(
                        "storage is failing ({e}); the write is queued behind {} others and may still be applied",
                        p.writes.len() + p.in_flight
                    )));
                    None
                }
                (_, ack) => ack,
            };
            if record.supersedable {
                let at = p.writes.len();
                if let Some(old) = p.supersedable.insert(record.key.clone(), at) {
                    p.writes[old].0.superseded = true;
                    // Everything from the superseded record on commits in
                    // one transaction: the record that replaces it, and
                    // the writes it carried along (a charged quota and the
                    // object charged), are then never stored apart.
                    p.no_cut_before = p.no_cut_before.max(at + (last - i) + 1);
                }
            }
            let queued = Queued {
                record,
                joined: i < last,
                superseded: false,
            };
            p.writes.push((queued, ack));
        }
        let wake = std::mem::take(&mut p.idle);
        drop(p);
        if wake {
            self.wake.notify_one();
        }
    }

    fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }

    fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Waits for writes and moves them (about [`MAX_BATCH`], never parting
    /// what must commit together) into the empty `batch`; `false` once the
    /// queue is closed and drained.
    fn take(&self, batch: &mut Vec<Entry>) -> bool {
        let mut p = self.lock();
        while p.writes.is_empty() && !p.closed {
            p.idle = true;
            p = self.wake.wait(p).unwrap_or_else(PoisonError::into_inner);
        }
        p.idle = false;
        let mut cut = MAX_BATCH.max(p.no_cut_before);
        while cut < p.writes.len() && p.writes[cut - 1].0.joined {
            cut += 1;
        }
        if cut >= p.writes.len() {
            std::mem::swap(batch, &mut p.writes);
        } else {
            batch.extend(p.writes.drain(..cut));
        }
        // What stays queued is no longer where the index says; it is only
        // a missed saving to forget it.
        p.supersedable.clear();
        p.no_cut_before = 0;
        p.in_flight = batch.len();
        !batch.is_empty()
    }

    /// Records how the commit of the taken batch went.
    fn committed(&self, result: Result<(), String>) {
        let mut p = self.lock();
        match result {
            Ok(()) => {
                p.in_flight = 0;
                p.failing = None;
            }
            Err(e) => p.failing = Some(e),
        }
    }

    fn backlog(&self) -> Backlog {
        let p = self.lock();
        Backlog {
            writes: p.writes.len() + p.in_flight,
            failing: p.failing.clone(),
        }
    }
}

/// Writes accepted but not yet committed, and whether commits are failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Backlog {
    pub(crate) writes: usize,
    pub(crate) failing: Option<String>,
}

/// Held by the writer thread: however it exits (a panic included), queued
/// writes are refused rather than left waiting forever.
struct FailPendingOnExit<'a>(&'a Queue);

impl Drop for FailPendingOnExit<'_> {
    fn drop(&mut self) {
        let mut p = self.0.lock();
        p.closed = true;
        for (_, ack) in p.writes.drain(..) {
            if let Some(ack) = ack {
                let _ = ack.send(Err(WRITER_STOPPED.into()));
            }
        }
    }
}

/// What the log held at start.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// `(key, object JSON)` for every live key, in no particular order.
    pub(crate) objects: Vec<(String, Bytes)>,
    /// The first revision this run may hand out is `start_rv + 1`.
    pub(crate) start_rv: u64,
}

/// Storage errors at open time.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("cannot create data directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot open database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("database {path} did not accept synchronous={wanted} (it reads back level {found})")]
    Synchronous {
        path: PathBuf,
        wanted: &'static str,
        found: i64,
    },
}

/// The store's side of storage.
pub(crate) struct Storage {
    /// `None` in memory (acknowledge at once), and once closed.
    queue: Option<Arc<Queue>>,
    thread: Option<JoinHandle<()>>,
    /// Read back from the database after setting it; `None` in memory.
    durability: Option<Durability>,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("durability", &self.durability)
            .finish()
    }
}

impl Storage {
    pub(crate) fn in_memory() -> (Self, Loaded) {
        (
            Self {
                queue: None,
                thread: None,
                durability: None,
            },
            Loaded::default(),
        )
    }

    /// Opens (creating if needed) `dir/state.db`, compacts superseded rows and
    /// loads the live objects.
    pub(crate) fn open(
        dir: &Path,
        durability: Durability,
        max_pages: Option<u64>,
    ) -> Result<(Self, Loaded), StorageError> {
        std::fs::create_dir_all(dir).map_err(|source| StorageError::CreateDir {
            path: dir.into(),
            source,
        })?;
        let path = dir.join("state.db");
        let err = |source| StorageError::Open {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(&path).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", durability.synchronous())
            .map_err(err)?;
        let found: i64 = conn
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .map_err(err)?;
        let read_back = Durability::from_synchronous(found);
        if read_back != Some(durability) {
            return Err(StorageError::Synchronous {
                path,
                wanted: durability.synchronous(),
                found,
            });
        }
        let loaded = prepare(&conn).map_err(err)?;
        if let Some(pages) = max_pages {
            // A stand-in for a full disk (tests): commits past it fail
            // with SQLITE_FULL, "database or disk is full".
            conn.pragma_update(None, "max_page_count", pages as i64)
                .map_err(err)?;
        }
        let queue = Arc::new(Queue::default());
        let thread = std::thread::Builder::new()
            .name("apiserver-writer".into())
            .spawn({
                let queue = queue.clone();
                move || writer(conn, &queue)
            })
            .expect("spawning the storage writer thread");
        Ok((
            Self {
                queue: Some(queue),
                thread: Some(thread),
                durability: read_back,
            },
            loaded,
        ))
    }

    /// Queues a revision. Must be called in revision order.
    #[cfg(test)]
    pub(crate) fn append(&self, record: Record, ack: Option<Ack>) {
        self.append_group(vec![(record, ack)]);
    }

    /// Queues revisions that are committed in one transaction, so that a
    /// crash keeps all or none of them (a charged quota and the object it
    /// is charged for). Must be called in revision order.
    ///
    /// A supersedable record still queued when a newer record of its key
    /// arrives is not inserted: the newer one takes its place in the same
    /// transaction (the log keeps only the newest row per key anyway). So
    /// a quota charged by many concurrent creates is written once per
    /// group commit, yet always in the transaction of what it counts.
    pub(crate) fn append_group(&self, group: Vec<(Record, Option<Ack>)>) {
        match &self.queue {
            Some(queue) => queue.push(group),
            None => {
                for (_, ack) in group {
                    if let Some(ack) = ack {
                        let _ = ack.send(match self.durability {
                            None => Ok(()),
                            // Closed: a write arriving after shutdown must not be acknowledged.
                            Some(_) => {
                                Err("storage is closed (the server is shutting down)".into())
                            }
                        });
                    }
                }
            }
        }
    }

    /// Writes waiting to be committed, and the last commit's failure;
    /// `None` in memory.
    pub(crate) fn backlog(&self) -> Option<Backlog> {
        self.queue.as_ref().map(|q| q.backlog())
    }

    /// What acknowledged writes survive, as read back from the database
    /// connection; `None` in memory.
    pub(crate) fn durability(&self) -> Option<Durability> {
        self.durability
    }

    /// Commits everything queued and stops the writer.
    pub(crate) fn close(&mut self) {
        if let Some(queue) = self.queue.take() {
            queue.close();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        self.close();
    }
}

fn prepare(conn: &Connection) -> rusqlite::Result<Loaded> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS log (
             rv INTEGER PRIMARY KEY,
             key TEXT NOT NULL,
             deleted INTEGER NOT NULL,
             value BLOB
         );
         CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);",
    )?;
    // Compaction: only the newest row per key matters, and tombstones only
    // while they carry the highest revision. There is deliberately no index
    // on `key`: it would double the pages every commit writes, for a query
    // that runs once per start (sorting the keys is fast enough for that).
    conn.execute_batch(
        "DROP INDEX IF EXISTS log_key;
         BEGIN;
         DELETE FROM log WHERE rv NOT IN (SELECT MAX(rv) FROM log GROUP BY key);
         DELETE FROM log WHERE deleted = 1 AND rv < (SELECT MAX(rv) FROM log);
         COMMIT;",
    )?;
    let max_rv: u64 = conn.query_row("SELECT COALESCE(MAX(rv), 0) FROM log", [], |r| {
        r.get::<_, i64>(0)
    })? as u64;
    let prev_start: u64 = conn
        .query_row("SELECT v FROM meta WHERE k = 'start'", [], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap_or(0) as u64;
    let start_rv = max_rv.max(prev_start) + RESTART_GAP;
    conn.execute(
        "INSERT INTO meta (k, v) VALUES ('start', ?1) ON CONFLICT(k) DO UPDATE SET v = excluded.v",
        params![start_rv as i64],
    )?;
    let mut stmt = conn.prepare("SELECT key, value FROM log WHERE deleted = 0")?;
    let objects = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, Bytes::from(r.get::<_, Vec<u8>>(1)?)))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Loaded { objects, start_rv })
}

/// The writer thread: waits for writes, takes everything queued as one
/// group, commits it and acknowledges it, until the queue is closed.
fn writer(conn: Connection, queue: &Queue) {
    let _fail_pending = FailPendingOnExit(queue);
    let mut batch = Vec::new();
    let (mut writes, mut commits) = (0, 0);
    while queue.take(&mut batch) {
        (writes, commits) = (writes + batch.len(), commits + 1);
        // The writes are already visible in memory, so a failed commit (a
        // full disk, an I/O error) is retried, in order and before anything
        // newer, until it works: the disk never skips a revision that
        // clients or watchers saw. The waiting clients hear at once that
        // their write is not yet durable (and may still be applied).
        let mut pause = Duration::from_millis(100);
        while let Err(e) = commit(&conn, &batch) {
            queue.committed(Err(e.to_string()));
            tracing::error!(error = %e, writes = batch.len(), retry_in = ?pause, "apiserver storage commit failed; retrying (free disk space or fix the data directory); new writes are refused once the backlog is full");
            for (_, ack) in &mut batch {
                if let Some(ack) = ack.take() {
                    let _ = ack.send(Err(format!(
                        "storage write failed: {e}; the write is retried and may still be applied"
                    )));
                }
            }
            if queue.is_closed() {
                tracing::error!(
                    writes = batch.len(),
                    "apiserver storage closed while commits were failing: the newest writes are lost"
                );
                return;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(5));
        }
        queue.committed(Ok(()));
        for (_, ack) in batch.drain(..) {
            if let Some(ack) = ack {
                let _ = ack.send(Ok(()));
            }
        }
    }
    tracing::debug!(writes, commits, "apiserver storage writer stopped");
    let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
}

/// Commits a batch in one transaction. The statements are cached: this runs
/// once per group commit, thousands of times a second.
fn commit(conn: &Connection, batch: &[Entry]) -> rusqlite::Result<()> {
    conn.prepare_cached("BEGIN")?.execute([])?;
    let result = insert(conn, batch).and_then(|()| {
        conn.prepare_cached("COMMIT")?.execute([])?;
        Ok(())
    });
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

fn insert(conn: &Connection, batch: &[Entry]) -> rusqlite::Result<()> {
    let mut stmt =
        conn.prepare_cached("INSERT INTO log (rv, key, deleted, value) VALUES (?1, ?2, ?3, ?4)")?;
    for (q, _) in batch {
        if q.superseded {
            continue;
        }
        let r = &q.record;
        stmt.execute(params![
            r.rv as i64,
            r.key,
            r.value.is_none() as i64,
            r.value.as_deref()
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(rv: u64, key: &str, value: Option<&'static str>) -> Record {
        Record {
            rv,
            key: key.into(),
            value: value.map(|v| Bytes::from_static(v.as_bytes())),
            supersedable: false,
        }
    }

    #[tokio::test]
    async fn a_failing_commit_is_retried_in_order_until_it_works() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, _) = Storage::open(dir.path(), Durability::Process, None).unwrap();
        // Another connection holds the write lock: commits fail (busy).
        let blocker = Connection::open(dir.path().join("state.db")).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        let (tx1, rx1) = oneshot::channel();
        s.append(
            record(RESTART_GAP + 1, "/configmaps/a/x", Some("1")),
            Some(tx1),
        );
        let first = rx1.await.unwrap();
        assert!(
            first
                .as_ref()
                .is_err_and(|e| e.contains("may still be applied")),
            "{first:?}"
        );
        let backlog = s.backlog().unwrap();
        assert_eq!(backlog.writes, 1);
        assert!(
            backlog.failing.is_some_and(|e| e.contains("locked")),
            "{:?}",
            s.backlog()
        );
        // A write arriving while commits fail hears so at once, and waits
        // behind the failing one.
        let (tx2, rx2) = oneshot::channel();
        s.append(
            record(RESTART_GAP + 2, "/configmaps/a/x", Some("2")),
            Some(tx2),
        );
        let second = rx2.await.unwrap();
        assert!(
            second
                .as_ref()
                .is_err_and(|e| e.contains("queued behind 1")),
            "{second:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            s.backlog().unwrap().writes,
            2,
            "nothing newer is stored meanwhile"
        );
        // The lock goes away: the failed write lands first, then the next.
        blocker.execute_batch("ROLLBACK").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while s.backlog().unwrap().writes > 0 {
            assert!(std::time::Instant::now() < deadline, "{:?}", s.backlog());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let backlog = s.backlog().unwrap();
        assert_eq!((backlog.writes, backlog.failing), (0, None));
        s.close();
        drop(s);
        let (_s, loaded) = Storage::open(dir.path(), Durability::Process, None).unwrap();
        assert_eq!(
            loaded.objects,
            [("/configmaps/a/x".to_owned(), Bytes::from_static(b"2"))]
        );
    }

    #[tokio::test]
    async fn writes_survive_reopen_and_revisions_jump() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, loaded) = Storage::open(dir.path(), Durability::Process, None).unwrap();
        assert_eq!(loaded.start_rv, RESTART_GAP);
        let (tx, rx) = oneshot::channel();
        s.append(record(RESTART_GAP + 1, "/configmaps/a/x", Some("{}")), None);
        s.append(record(RESTART_GAP + 2, "/configmaps/a/y", Some("1")), None);
        s.append(record(RESTART_GAP + 3, "/configmaps/a/x", None), None);
        s.append(
            record(RESTART_GAP + 4, "/configmaps/a/y", Some("2")),
            Some(tx),
        );
        rx.await.unwrap().unwrap();
        s.close();
        let (tx, rx) = oneshot::channel();
        s.append(
            record(RESTART_GAP + 5, "/configmaps/a/late", Some("{}")),
            Some(tx),
        );
        assert!(rx.await.unwrap().is_err(), "no acknowledgement after close");
        drop(s);
        let (_s, loaded) = Storage::open(dir.path(), Durability::Process, None).unwrap();
        assert_eq!(
            loaded.objects,
            [("/configmaps/a/y".to_owned(), Bytes::from_static(b"2"))]
        );
        assert_eq!(loaded.start_rv, 2 * RESTART_GAP + 4);
    }

    #[tokio::test]
    async fn the_writer_takes_everything_queued_as_one_group() {
        let q = Queue::default();
        let mut acks = Vec::new();
        for i in 0..3 {
            let (tx, rx) = oneshot::channel();
            q.push(vec![(record(i, "/k", None), Some(tx))]);
            acks.push(rx);
        }
        let mut batch = Vec::new();
        assert!(q.take(&mut batch));
        assert_eq!(
            batch.iter().map(|(q, _)| q.record.rv).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        q.close();
        assert!(!q.take(&mut Vec::new()), "closed and drained");
        // A writer that dies refuses what is still queued, and what comes later.
        let q = Queue::default();
        let (tx, queued) = oneshot::channel();
        q.push(vec![(record(1, "/k", None), Some(tx))]);
        drop(FailPendingOnExit(&q));
        let (tx, late) = oneshot::channel();
        q.push(vec![(record(2, "/k", None), Some(tx))]);
        assert!(queued.await.unwrap().is_err());
        assert!(late.await.unwrap().is_err());
    }

    fn supersedable(rv: u64, key: &str, value: &'static str) -> Record {
        Record {
            supersedable: true,
            ..record(rv, key, Some(value))
        }
    }

    /// A group is never split across transactions, and a superseded record
    /// always commits with the one that replaced it, even past the batch
    /// bound.
    #[test]
    fn groups_and_superseded_records_are_never_parted() {
        let q = Queue::default();
        // MAX_BATCH - 1 single writes, then a group of three straddling
        // the bound: it is taken whole.
        for rv in 0..MAX_BATCH as u64 - 1 {
            q.push(vec![(record(rv, "/k", None), None)]);
        }
        let base = MAX_BATCH as u64;
        q.push(vec![
            (supersedable(base, "/q", "1"), None),
            (record(base + 1, "/a", Some("a")), None),
            (record(base + 2, "/b", Some("b")), None),
        ]);
        q.push(vec![(record(base + 3, "/c", None), None)]);
        let mut batch = Vec::new();
        assert!(q.take(&mut batch));
        assert_eq!(batch.len(), MAX_BATCH + 2, "the group is whole");
        let mut rest = Vec::new();
        assert!(q.take(&mut rest));
        assert_eq!(rest.len(), 1);
        // A quota charged again while its last charge is queued: the older
        // row is dropped, and everything from it on is one transaction.
        for rv in 0..MAX_BATCH as u64 - 2 {
            q.push(vec![(record(rv, "/k", None), None)]);
        }
        q.push(vec![
            (supersedable(base, "/q", "1"), None),
            (record(base + 1, "/p1", Some("p")), None),
        ]);
        for rv in 0..10 {
            q.push(vec![(record(base + 2 + rv, "/k", None), None)]);
        }
        q.push(vec![
            (supersedable(base + 20, "/q", "2"), None),
            (record(base + 21, "/p2", Some("p")), None),
        ]);
        q.push(vec![(record(base + 22, "/after", None), None)]);
        let mut batch = Vec::new();
        assert!(q.take(&mut batch));
        let last = &batch.last().unwrap().0.record;
        assert_eq!(last.key, "/p2", "cut right after the superseding group");
        let superseded: Vec<_> = batch
            .iter()
            .filter(|(e, _)| e.superseded)
            .map(|(e, _)| e.record.rv)
            .collect();
        assert_eq!(superseded, [base]);
        // Once taken, a record can no longer be superseded.
        let mut rest = Vec::new();
        assert!(q.take(&mut rest));
        q.push(vec![(supersedable(base + 30, "/q", "3"), None)]);
        q.push(vec![(supersedable(base + 31, "/q", "4"), None)]);
        let mut next = Vec::new();
        assert!(q.take(&mut next));
        assert_eq!(
            next.iter().map(|(e, _)| e.superseded).collect::<Vec<_>>(),
            [true, false]
        );
    }

    /// A superseded row is not stored, but its write is acknowledged once
    /// the row that replaced it is committed; the newest value survives.
    #[tokio::test]
    async fn a_superseded_row_is_acknowledged_with_its_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, _) = Storage::open(dir.path(), Durability::Process, None).unwrap();
        let mut acks = Vec::new();
        for (i, used) in ["1", "2", "3"].into_iter().enumerate() {
            let rv = RESTART_GAP + 1 + 2 * i as u64;
            let (tq, rq) = oneshot::channel();
            let (tp, rp) = oneshot::channel();
            s.append_group(vec![
                (supersedable(rv, "/resourcequotas/a/q", used), Some(tq)),
                (
                    record(rv + 1, &format!("/pods/a/p{i}"), Some("{}")),
                    Some(tp),
                ),
            ]);
            acks.extend([rq, rp]);
        }
        for ack in acks {
            ack.await.unwrap().unwrap();
        }
        s.close();
        drop(s);
        let conn = Connection::open(dir.path().join("state.db")).unwrap();
        let rows: i64 = conn
            .query_row("SELECT COUNT(*) FROM log", [], |r| r.get(0))
            .unwrap();
        assert!((4..=6).contains(&rows), "{rows} rows");
        drop(conn);
        let (_s, loaded) = Storage::open(dir.path(), Durability::Process, None).unwrap();
        let mut objects = loaded.objects;
        objects.sort();
        assert_eq!(objects.len(), 4);
        assert_eq!(
            objects.last().unwrap(),
            &("/resourcequotas/a/q".to_owned(), Bytes::from_static(b"3"))
        );
    }

    #[test]
    fn each_durability_reads_back_its_synchronous_level() {
        for durability in [Durability::Process, Durability::PowerLoss] {
            let dir = tempfile::tempdir().unwrap();
            // `open` reads `PRAGMA synchronous` back from the writer's
            // connection and refuses to run with anything else.
            let (s, _) = Storage::open(dir.path(), durability, None).unwrap();
            assert_eq!(s.durability(), Some(durability));
            drop(s);
            let conn = Connection::open(dir.path().join("state.db")).unwrap();
            let mode: String = conn
                .pragma_query_value(None, "journal_mode", |r| r.get(0))
                .unwrap();
            assert_eq!(mode, "wal", "{durability}: the database is in WAL mode");
        }
        assert_eq!(Storage::in_memory().0.durability(), None);
    }
}
