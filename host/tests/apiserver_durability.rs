//! Durability of the embedded API server as a real process: `windlass apiserver
//! --data DIR` is killed with SIGKILL under write load and restarted; every
//! acknowledged write must still be there and revisions must keep increasing.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// One HTTP/1.1 request on a fresh connection; `(status, JSON body)`.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> std::io::Result<(u16, Value)> {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("incomplete response"))?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status line"))?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Ok((code, serde_json::from_str(&body).unwrap_or(Value::Null)))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn rv_of(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {v}"))
}

/// The server process; killed (SIGKILL) when dropped, so a failing test leaves nothing behind.
struct Server(Child);

impl Server {
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `windlass apiserver` on `data`, waits for its kubeconfig and returns the address.
fn start(data: &Path, kubeconfig: &Path) -> (Server, SocketAddr) {
    let _ = std::fs::remove_file(kubeconfig);
    let mut child = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .arg("apiserver")
        .args(["--listen", "127.0.0.1:0", "--data"])
        .arg(data)
        .arg("--write-kubeconfig")
        .arg(kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("windlass runs");
    let started = Instant::now();
    loop {
        let server = std::fs::read_to_string(kubeconfig).ok().and_then(|k| {
            k.lines()
                .find_map(|l| l.trim().strip_prefix("server: http://").map(str::to_owned))
        });
        if let Some(addr) = server.and_then(|s| s.trim().parse().ok())
            && http(addr, "GET", "/readyz", None).is_ok()
        {
            return (Server(child), addr);
        }
        if started.elapsed() > Duration::from_secs(30) || child.try_wait().ok().flatten().is_some()
        {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`windlass apiserver` did not start (is the subcommand wired in main.rs?)");
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn acknowledged_writes_survive_kill_9_and_revisions_increase() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut acked_all: Vec<(String, u64)> = Vec::new();
    let mut max_rv = 0;
    for round in 0..3 {
        let (mut child, addr) = start(&data, &kubeconfig);
        let (code, list) = http(addr, "GET", CMS, None).unwrap();
        assert_eq!(code, 200);
        let items = list["items"].as_array().unwrap();
        for (name, rv) in &acked_all {
            let found = items
                .iter()
                .find(|i| i["metadata"]["name"] == name.as_str())
                .unwrap_or_else(|| {
                    panic!("round {round}: acknowledged write {name} (rv {rv}) was lost")
                });
            assert_eq!(rv_of(found), *rv, "{name} changed");
        }
        assert!(rv_of(&list) >= max_rv, "the list revision went backwards");

        let acked = Arc::new(Mutex::new(Vec::new()));
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let acked = acked.clone();
                std::thread::spawn(move || {
                    for i in 0..100_000 {
                        let name = format!("r{round}-w{w}-{i}");
                        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name}, "data": {"i": i.to_string()}});
                        match http(addr, "POST", CMS, Some(&cm)) {
                            Ok((201, obj)) => acked.lock().unwrap().push((name, rv_of(&obj))),
                            _ => break,
                        }
                    }
                })
            })
            .collect();
        // Kill once enough writes are acknowledged, not after a fixed time:
        // a loaded machine may be slow to get going.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while acked.lock().unwrap().len() < 100 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill(); // SIGKILL: no shutdown, no flush.
        for w in writers {
            w.join().unwrap();
        }
        let acked = std::mem::take(&mut *acked.lock().unwrap());
        assert!(
            acked.len() >= 20,
            "round {round}: only {} writes acknowledged",
            acked.len()
        );
        let round_max = acked.iter().map(|(_, rv)| *rv).max().unwrap();
        assert!(round_max > max_rv, "revisions increase across restarts");
        max_rv = round_max;
        acked_all.extend(acked);
    }
    // A final restart still has everything, and new writes get higher revisions.
    let (_server, addr) = start(&data, &kubeconfig);
    let (_, list) = http(addr, "GET", CMS, None).unwrap();
    // Writes in flight at the kill may or may not have landed; acknowledged ones must have.
    assert!(list["items"].as_array().unwrap().len() >= acked_all.len());
    let (code, obj) = http(
        addr,
        "POST",
        CMS,
        Some(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "last"}})),
    )
    .unwrap();
    assert_eq!(code, 201);
    assert!(rv_of(&obj) > max_rv);
}
