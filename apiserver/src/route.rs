//! Which endpoint a request path names: the discovery documents, OpenAPI,
//! health checks, or a resource (`ResPath`).

/// A parsed resource URL.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ResPath {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) plural: String,
    pub(crate) ns: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) sub: Option<String>,
    pub(crate) watch: bool,
}

#[derive(Debug, PartialEq)]
pub(crate) enum Route {
    /// A health endpoint, and the one check its path names, if any.
    Health(&'static str, Option<String>),
    Version,
    Api,
    Apis,
    Group(String),
    ResourceList(String, String),
    Res(ResPath),
    OpenApiV2,
    OpenApiIndex,
    OpenApi(String),
    NotFound,
}

pub(crate) fn route(path: &str) -> Route {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        [check @ ("healthz" | "readyz" | "livez"), rest @ ..] => {
            let endpoint = match *check {
                "healthz" => "healthz",
                "readyz" => "readyz",
                _ => "livez",
            };
            Route::Health(endpoint, (!rest.is_empty()).then(|| rest.join("/")))
        }
        ["version"] => Route::Version,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiIndex,
        ["openapi", "v3", rest @ ..] => Route::OpenApi(rest.join("/")),
        ["api"] => Route::Api,
        ["apis"] => Route::Apis,
        ["api", v] => Route::ResourceList(String::new(), (*v).into()),
        ["apis", g] => Route::Group((*g).into()),
        ["apis", g, v] => Route::ResourceList((*g).into(), (*v).into()),
        ["api", v, rest @ ..] => res_path("", v, rest),
        ["apis", g, v, rest @ ..] => res_path(g, v, rest),
        _ => Route::NotFound,
    }
}

fn res_path(group: &str, version: &str, rest: &[&str]) -> Route {
    let (watch, rest) = match rest {
        ["watch", r @ ..] => (true, r),
        r => (false, r),
    };
    let s = |x: &&str| Some((*x).to_owned());
    let (plural, ns, name, sub) = match rest {
        [r] => (*r, None, None, None),
        ["namespaces", n, sub @ ("status" | "finalize")] => ("namespaces", None, s(n), s(sub)),
        ["namespaces", ns, r] => (*r, s(ns), None, None),
        [r, n] => (*r, None, s(n), None),
        ["namespaces", ns, r, n] => (*r, s(ns), s(n), None),
        [r, n, sub] => (*r, None, s(n), s(sub)),
        ["namespaces", ns, r, n, sub] => (*r, s(ns), s(n), s(sub)),
        _ => return Route::NotFound,
    };
    Route::Res(ResPath {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        ns,
        name,
        sub,
        watch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/api"), Route::Api);
        assert_eq!(
            route("/apis/apps/v1"),
            Route::ResourceList("apps".into(), "v1".into())
        );
        let Route::Res(r) = route("/api/v1/namespaces/d/pods/p/status") else {
            panic!()
        };
        assert_eq!(
            (
                r.plural.as_str(),
                r.ns.as_deref(),
                r.name.as_deref(),
                r.sub.as_deref()
            ),
            ("pods", Some("d"), Some("p"), Some("status"))
        );
        let Route::Res(r) = route("/api/v1/namespaces/d") else {
            panic!()
        };
        assert_eq!(
            (r.plural.as_str(), r.ns, r.name.as_deref()),
            ("namespaces", None, Some("d"))
        );
        let Route::Res(r) = route("/api/v1/watch/namespaces/d/configmaps") else {
            panic!()
        };
        assert!(r.watch);
        assert_eq!(
            (r.plural.as_str(), r.ns.as_deref()),
            ("configmaps", Some("d"))
        );
        let Route::Res(r) = route("/api/v1/namespaces/d/finalize") else {
            panic!()
        };
        assert_eq!(
            (r.plural.as_str(), r.name.as_deref(), r.sub.as_deref()),
            ("namespaces", Some("d"), Some("finalize"))
        );
        assert_eq!(route("/nope"), Route::NotFound);
    }
}
