//! `/healthz`, `/readyz` and `/livez` as kube-apiserver answers them: `ok`
//! when every check passes; with `?verbose`, a line per check (`[+]ping
//! ok`) and `readyz check passed`; `?exclude=<check>` (repeatable) skips
//! checks, warning about names it does not know; `/readyz/<check>` runs
//! one check (a failing one says why); a failing check answers 500 with
//! the list (`[-]storage failed: reason withheld`, the reason logged).
//! Readiness and health check the storage, liveness does
//! not: a server whose disk is full is alive, but should get no traffic.

/// The checks of `endpoint` (`healthz`, `readyz` or `livez`).
fn checks(endpoint: &str) -> &'static [&'static str] {
    if endpoint == "livez" {
        &["ping", "log"]
    } else {
        &["ping", "log", "storage"]
    }
}

/// How the server is: why its storage fails, if it does.
pub(crate) struct State<'a> {
    pub(crate) storage_failure: Option<&'a str>,
}

impl State<'_> {
    fn run(&self, check: &str) -> Result<(), String> {
        match (check, self.storage_failure) {
            ("storage", Some(e)) => Err(e.to_owned()),
            _ => Ok(()),
        }
    }
}

/// A request to one of the endpoints.
pub(crate) struct Ask<'a> {
    /// `healthz`, `readyz` or `livez`.
    pub(crate) endpoint: &'a str,
    /// `/readyz/<check>`: that check only.
    pub(crate) check: Option<&'a str>,
    pub(crate) verbose: bool,
    pub(crate) exclude: Vec<&'a str>,
}

/// The status code and text of the answer.
pub(crate) fn answer(ask: &Ask<'_>, state: &State<'_>) -> (u16, String) {
    let all = checks(ask.endpoint);
    if let Some(one) = ask.check {
        return match all.iter().find(|c| **c == one) {
            None => (404, "404 page not found\n".to_owned()),
            Some(c) => match state.run(c) {
                Ok(()) => (200, "ok".to_owned()),
                Err(e) => (500, format!("internal server error: {e}\n")),
            },
        };
    }
    let mut lines = String::new();
    let mut failed = false;
    for c in all {
        if ask.exclude.contains(c) {
            lines.push_str(&format!("[+]{c} excluded: ok\n"));
            continue;
        }
        match state.run(c) {
            Ok(()) => lines.push_str(&format!("[+]{c} ok\n")),
            Err(e) => {
                // As kube: the reason goes to the log, not to whoever asks
                // (`/readyz/<check>` alone says it).
                failed = true;
                tracing::warn!(check = c, endpoint = ask.endpoint, reason = %e, "health check failed");
                lines.push_str(&format!("[-]{c} failed: reason withheld\n"));
            }
        }
    }
    let unknown: Vec<String> = (ask.exclude.iter())
        .filter(|e| !all.contains(e))
        .map(|e| format!("{e:?}"))
        .collect();
    if !unknown.is_empty() {
        lines.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            unknown.join(",")
        ));
    }
    let endpoint = ask.endpoint;
    if failed {
        (500, format!("{lines}{endpoint} check failed\n"))
    } else if ask.verbose {
        (200, format!("{lines}{endpoint} check passed\n"))
    } else {
        (200, "ok".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask<'a>(
        endpoint: &'a str,
        check: Option<&'a str>,
        verbose: bool,
        exclude: &[&'a str],
    ) -> Ask<'a> {
        Ask {
            endpoint,
            check,
            verbose,
            exclude: exclude.to_vec(),
        }
    }

    const FINE: State<'static> = State {
        storage_failure: None,
    };
    const FULL: State<'static> = State {
        storage_failure: Some("disk full"),
    };

    #[test]
    fn healthy_answers_ok_or_every_check_when_verbose() {
        assert_eq!(
            answer(&ask("readyz", None, false, &[]), &FINE),
            (200, "ok".into())
        );
        assert_eq!(
            answer(&ask("readyz", None, true, &[]), &FINE),
            (
                200,
                "[+]ping ok\n[+]log ok\n[+]storage ok\nreadyz check passed\n".into()
            )
        );
        assert_eq!(
            answer(&ask("livez", None, true, &["log", "etcd"]), &FINE),
            (
                200,
                "[+]ping ok\n[+]log excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"etcd\"\nlivez check passed\n".into()
            )
        );
    }

    #[test]
    fn failing_storage_fails_readiness_and_health_not_liveness() {
        let (code, text) = answer(&ask("readyz", None, false, &[]), &FULL);
        assert_eq!(code, 500);
        assert_eq!(
            text,
            "[+]ping ok\n[+]log ok\n[-]storage failed: reason withheld\nreadyz check failed\n"
        );
        assert_eq!(answer(&ask("healthz", None, false, &[]), &FULL).0, 500);
        assert_eq!(
            answer(&ask("livez", None, false, &[]), &FULL),
            (200, "ok".into())
        );
        // Excluding the failing check passes.
        assert_eq!(
            answer(&ask("readyz", None, false, &["storage"]), &FULL).0,
            200
        );
    }

    #[test]
    fn one_check_by_path() {
        assert_eq!(
            answer(&ask("readyz", Some("ping"), false, &[]), &FULL),
            (200, "ok".into())
        );
        assert_eq!(
            answer(&ask("readyz", Some("storage"), false, &[]), &FULL),
            (500, "internal server error: disk full\n".into())
        );
        assert_eq!(
            answer(&ask("livez", Some("storage"), false, &[]), &FINE).0,
            404
        );
        assert_eq!(
            answer(&ask("readyz", Some("nope"), false, &[]), &FINE).0,
            404
        );
    }
}
