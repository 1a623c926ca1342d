//! A server out of file descriptors backs off instead of spinning on
//! `accept`, and recovers when descriptors free up. Its own test binary:
//! it lowers this process's descriptor limit (with `prlimit`, util-linux),
//! which would starve any other test running beside it.

mod common;

use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::Http;
use windlass_apiserver::{Config, start};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Sets this process's soft limit on open files.
fn set_soft_nofile(limit: &str) {
    let pid = std::process::id().to_string();
    let out = Command::new("prlimit")
        .args(["--pid", &pid, &format!("--nofile={limit}:")])
        .output()
        .expect("prlimit (util-linux) is installed");
    assert!(out.status.success(), "{out:?}");
}

fn soft_nofile() -> String {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    line.split_whitespace().nth(3).unwrap().to_owned()
}

/// The limit: after a failed `accept` the server waits 5 ms, doubling to
/// 1 s (Go's http.Server, so kube-apiserver), instead of retrying at once.
/// With the descriptors exhausted for about two seconds, a spinning loop
/// fails `accept` hundreds of thousands of times; this one a dozen or so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_backs_off_when_out_of_file_descriptors() {
    let server = start(Config::new()).await.unwrap();
    let addr = server.addr();
    let original = soft_nofile();
    set_soft_nofile(&(open_fds() + 40).to_string());
    let clients = tokio::task::spawn_blocking(move || {
        let mut clients = Vec::new();
        for _ in 0..200 {
            match TcpStream::connect(addr) {
                Ok(c) => clients.push(c),
                Err(_) => break,
            }
        }
        clients
    })
    .await
    .unwrap();
    assert!(!clients.is_empty());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let failures = server.accept_failures();
    assert!(failures >= 1, "the descriptors ran out");
    assert!(
        failures < 100,
        "{failures} failed accepts in about 2 s: not backing off"
    );
    drop(clients);
    set_soft_nofile(&original);
    let (c, _) = Http::new(addr).get("/version").await;
    assert_eq!(c, 200, "the server recovers");
    server.shutdown().await;
}
