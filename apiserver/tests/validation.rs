//! Validation as a cluster answers it: `422 Invalid` with kube's field
//! causes for built-in kinds (container ports, probes, volumes, env, Service
//! ports) through the real kubectl, and over raw HTTP the shape of the
//! Status (every cause listed, typed as kube types it).

mod common;

use common::Http;
use common::kubectl::Kube;
use serde_json::{Value, json};

const BAD_PORT_DEPLOYMENT: &str = "
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx
        ports: [{containerPort: 70000}]
";

/// `kubectl apply` of a Deployment whose container port is out of range
/// shows kube's message, and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_apply_of_a_bad_deployment_shows_the_422() {
    let k = Kube::new().await;
    let err = k.fail(&["apply", "-f", "-"], Some(BAD_PORT_DEPLOYMENT));
    assert!(
        err.contains(
            "The Deployment \"web\" is invalid: spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"
        ),
        "{err}"
    );
    assert!(!k.exists(&["get", "deployment", "web"]));
    // Server-side apply is held to the same rules.
    let err = k.fail(
        &["apply", "--server-side", "-f", "-"],
        Some(BAD_PORT_DEPLOYMENT),
    );
    assert!(
        err.contains("must be between 1 and 65535, inclusive"),
        "{err}"
    );
}

/// Several problems in one pod: kubectl lists every cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_lists_every_cause_of_a_bad_pod() {
    let k = Kube::new().await;
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(
            "
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: web
    image: nginx
    ports: [{name: http, containerPort: 80}, {name: http, containerPort: 81, protocol: ICMP}]
    env: [{name: 'A=B', value: x}]
    livenessProbe:
      exec: {command: [ 'true' ]}
      tcpSocket: {port: 80}
    readinessProbe: {periodSeconds: -1, httpGet: {port: 80}}
    volumeMounts: [{name: missing, mountPath: /data}]
  - name: web
    image: nginx
  volumes: [{name: cache}]
",
        ),
    );
    for cause in [
        "spec.volumes[0]: Required value: must specify a volume type",
        "spec.containers[0].ports[1].name: Duplicate value: \"http\"",
        "spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
        "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
        "spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
        "spec.containers[1].name: Duplicate value: \"web\"",
        "spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
        "spec.containers[0].readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
    ] {
        assert!(err.contains(cause), "missing {cause:?} in:\n{err}");
    }
    assert!(!k.exists(&["get", "pod", "p"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_refuses_bad_service_ports() {
    let k = Kube::new().await;
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(
            "
apiVersion: v1
kind: Service
metadata: {name: s}
spec:
  type: NodePort
  ports:
  - {port: 80, nodePort: 30080}
  - {name: b, port: 80, targetPort: 0}
",
        ),
    );
    for cause in [
        "spec.ports[0].name: Required value",
        "spec.ports[1]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}",
    ] {
        assert!(err.contains(cause), "missing {cause:?} in:\n{err}");
    }
    // A ClusterIP service may not ask for a node port.
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(
            "
apiVersion: v1
kind: Service
metadata: {name: c}
spec:
  ports: [{port: 80, nodePort: 30080}]
",
        ),
    );
    assert!(
        err.contains(
            "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
        ),
        "{err}"
    );
    // The node port allocator's range.
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(
            "
apiVersion: v1
kind: Service
metadata: {name: np}
spec:
  type: NodePort
  ports: [{port: 80, nodePort: 80}]
",
        ),
    );
    assert!(
        err.contains("spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"),
        "{err}"
    );
    k.ok_in(
        &["apply", "-f", "-"],
        Some(
            "
apiVersion: v1
kind: Service
metadata: {name: np}
spec:
  type: NodePort
  ports: [{name: http, port: 80, nodePort: 30080}, {name: https, port: 443}]
",
        ),
    );
}

/// The Status itself: 422, reason `Invalid`, the message listing every
/// cause in brackets as kube's aggregate prints it, each cause typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_lists_and_types_every_cause() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new())
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i",
            "ports": [{"containerPort": 0}, {"containerPort": 8080, "protocol": "ICMP"}]}]}});
    let (code, s) = http.post("/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(
        s["message"],
        "Pod \"p\" is invalid: [spec.containers[0].ports[0].containerPort: Required value, spec.containers[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"]"
    );
    let causes: Vec<(&str, &str)> = s["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["reason"].as_str().unwrap(), c["field"].as_str().unwrap()))
        .collect();
    assert_eq!(
        causes,
        [
            (
                "FieldValueRequired",
                "spec.containers[0].ports[0].containerPort"
            ),
            (
                "FieldValueNotSupported",
                "spec.containers[0].ports[1].protocol"
            ),
        ]
    );
    let (code, _) = http.get("/api/v1/namespaces/default/pods/p").await;
    assert_eq!(code, 404);
    // An update is held to the same rules.
    let good = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}]}});
    let (code, stored) = http
        .post("/api/v1/namespaces/default/services", &good)
        .await;
    assert_eq!(code, 201, "{stored}");
    let mut bad: Value = stored.clone();
    bad["spec"]["ports"][0]["port"] = json!(0);
    let (code, s) = http
        .send(
            "PUT",
            "/api/v1/namespaces/default/services/s",
            "application/json",
            Some(&bad),
        )
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(s["details"]["causes"][0]["field"], "spec.ports[0].port");
}

const WIDGET_CRD: &str = "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [replicas, size]
            properties:
              replicas: {type: integer, minimum: 1}
              size: {type: string, enum: [small, large]}
              name: {type: string, maxLength: 5, pattern: '^[a-z]+$'}
              tags: {type: array, maxItems: 2, items: {type: string}}
";

/// A custom resource is held to its CRD's value validations: every broken
/// rule is one cause of one 422, in kube's words; a valid one is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn custom_resources_are_validated_by_their_schema() {
    let k = Kube::new().await;
    k.apply_crd(WIDGET_CRD);
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(
            "
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {replicas: 0, size: huge, name: TOOLONG, tags: [a, b, c]}
",
        ),
    );
    assert!(err.contains("The Widget \"w\" is invalid:"), "{err}");
    for cause in [
        "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
        "spec.size: Unsupported value: \"huge\": supported values: \"small\", \"large\"",
        "spec.name: Too long: may not be more than 5 bytes",
        "spec.name: Invalid value: \"TOOLONG\": spec.name in body should match '^[a-z]+$'",
        "spec.tags: Too many: 3: must have at most 2 items",
    ] {
        assert!(err.contains(cause), "missing {cause:?} in:\n{err}");
    }
    let err = k.fail(
        &["apply", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {name: abc}\n"),
    );
    assert!(
        err.contains("spec.replicas: Required value") && err.contains("spec.size: Required value"),
        "{err}"
    );
    assert!(!k.exists(&["get", "widget", "w"]));
    k.ok_in(
        &["apply", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {replicas: 2, size: small}\n"),
    );
    // A patch that breaks a rule is refused; the stored object is kept.
    let err = k.fail(
        &[
            "patch",
            "widget",
            "w",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":"two"}}"#,
        ],
        None,
    );
    assert!(
        err.contains("spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""),
        "{err}"
    );
    assert_eq!(
        k.ok(&["get", "widget", "w", "-o", "jsonpath={.spec.replicas}"]),
        "2"
    );
}

const GADGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.replicas <= self.maxReplicas
              message: replicas must be at most maxReplicas
            - rule: self.replicas >= oldSelf.replicas
              messageExpression: "'replicas may not go below ' + string(oldSelf.replicas)"
            properties:
              replicas: {type: integer}
              maxReplicas: {type: integer}
              mode:
                type: string
                x-kubernetes-validations:
                - {rule: "self in ['a', 'b']", reason: FieldValueForbidden, message: mode must be a or b}
              ratio:
                type: number
                x-kubernetes-validations: [{rule: "self < 1.0"}]
"#;

/// `x-kubernetes-validations` through the real kubectl: every failed rule
/// is one cause of one 422 in kube's words (the node's type as the value,
/// `reason` as the cause type); a transition rule runs on update only; a
/// valid object is stored and a refused update keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn custom_resources_are_held_to_their_cel_rules() {
    let k = Kube::new().await;
    k.apply_crd(GADGET_CRD);
    let gadget = |spec: &str| {
        format!("apiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: g}}\nspec: {spec}\n")
    };
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(&gadget("{replicas: 5, maxReplicas: 3, mode: c, ratio: 2}")),
    );
    assert!(err.contains("The Gadget \"g\" is invalid:"), "{err}");
    for cause in [
        "spec: Invalid value: \"object\": replicas must be at most maxReplicas",
        "spec.mode: Forbidden: mode must be a or b",
        "spec.ratio: Invalid value: \"number\": failed rule: self < 1.0",
    ] {
        assert!(err.contains(cause), "missing {cause:?} in:\n{err}");
    }
    assert!(
        !err.contains("may not go below"),
        "no oldSelf on create: {err}"
    );
    assert!(!k.exists(&["get", "gadget", "g"]));
    // A field the rule reads but the object lacks, as kube's runtime says it.
    let err = k.fail(&["apply", "-f", "-"], Some(&gadget("{replicas: 1}")));
    assert!(
        err.contains("spec: Invalid value: \"object\": no such key: maxReplicas evaluating rule: replicas must be at most maxReplicas"),
        "{err}"
    );
    k.ok_in(
        &["apply", "-f", "-"],
        Some(&gadget(
            "{replicas: 2, maxReplicas: 3, mode: a, ratio: 0.5}",
        )),
    );
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(&gadget(
            "{replicas: 1, maxReplicas: 3, mode: a, ratio: 0.5}",
        )),
    );
    assert!(
        err.contains("spec: Invalid value: \"object\": replicas may not go below 2"),
        "{err}"
    );
    assert_eq!(
        k.ok(&["get", "gadget", "g", "-o", "jsonpath={.spec.replicas}"]),
        "2"
    );
    k.ok(&[
        "patch",
        "gadget",
        "g",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
}

const COG_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: cogs.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: cogs, singular: cog, kind: Cog}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - {rule: self.replicas <= 10, message: too many replicas}
            properties:
              size: {type: string}
              replicas: {type: integer, default: 1}
              ports:
                type: array
                items:
                  type: object
                  properties:
                    name: {type: string}
                    port: {type: integer, default: 80}
"#;

/// A CRD's schema defaults are filled in on create, update, patch and
/// server-side apply, before validation (a rule may read a defaulted
/// field), as kube's decoder fills them; the applier does not own what was
/// defaulted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn custom_resources_get_their_schema_defaults() {
    let k = Kube::new().await;
    k.apply_crd(COG_CRD);
    let spec = |name: &str| {
        k.ok(&["get", "cog", name, "-o", "jsonpath={.spec}"])
            .parse::<Value>()
            .unwrap()
    };
    // Create: the rule reads `replicas`, which only the default gives.
    k.ok_in(
        &["create", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Cog\nmetadata: {name: a}\nspec: {size: s, ports: [{name: http}]}\n"),
    );
    assert_eq!(
        spec("a"),
        json!({"size": "s", "replicas": 1, "ports": [{"name": "http", "port": 80}]})
    );
    // A merge patch's null removes the field, and the default comes back.
    k.ok(&[
        "patch",
        "cog",
        "a",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":5}}"#,
    ]);
    assert_eq!(spec("a")["replicas"], 5);
    k.ok(&[
        "patch",
        "cog",
        "a",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":null}}"#,
    ]);
    assert_eq!(spec("a")["replicas"], 1);
    // A replace that leaves it out.
    k.ok_in(
        &["replace", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Cog\nmetadata: {name: a}\nspec: {size: m}\n"),
    );
    assert_eq!(spec("a"), json!({"size": "m", "replicas": 1}));
    // Server-side apply: defaulted, and not the applier's field.
    k.ok_in(
        &["apply", "--server-side", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Cog\nmetadata: {name: b}\nspec: {size: l}\n"),
    );
    assert_eq!(spec("b"), json!({"size": "l", "replicas": 1}));
    let managed = k.ok(&[
        "get",
        "cog",
        "b",
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[0].fieldsV1}",
    ]);
    assert_eq!(
        managed.parse::<Value>().unwrap(),
        json!({"f:spec": {"f:size": {}}})
    );
    // A default does not get past the rules: an explicit value still can fail.
    let err = k.fail(
        &["apply", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Cog\nmetadata: {name: c}\nspec: {size: s, replicas: 11}\n"),
    );
    assert!(
        err.contains("spec: Invalid value: \"object\": too many replicas"),
        "{err}"
    );
}

/// A CRD whose rule does not compile, or that sets `uniqueItems`, is
/// refused with kube's path and message, and is not served.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crds_with_bad_rules_or_unique_items_are_refused() {
    let k = Kube::new().await;
    let bad_rule = GADGET_CRD.replace(
        "rule: self.replicas <= self.maxReplicas",
        "rule: self.replicas <=",
    );
    let err = k.fail(&["apply", "-f", "-"], Some(&bad_rule));
    assert!(
        err.contains("The CustomResourceDefinition \"gadgets.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas <=\", Message:\"replicas must be at most maxReplicas\""),
        "{err}"
    );
    assert!(
        err.contains("compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting"),
        "{err}"
    );
    let typo = GADGET_CRD.replace("self in ['a', 'b']", "slef in ['a', 'b']");
    let err = k.fail(&["apply", "-f", "-"], Some(&typo));
    assert!(
        err.contains("spec.validation.openAPIV3Schema.properties[spec].properties[mode].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{")
            && err.contains("compilation failed: ERROR: <input>:1:1: undeclared reference to 'slef' (in container '')"),
        "{err}"
    );
    let unique = GADGET_CRD.replace(
        "replicas: {type: integer}",
        "replicas: {type: integer}\n              tags: {type: array, uniqueItems: true, items: {type: string}}",
    );
    let err = k.fail(&["apply", "-f", "-"], Some(&unique));
    assert!(
        err.contains("spec.validation.openAPIV3Schema.properties[spec].properties[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
        "{err}"
    );
    assert!(!k.exists(&["get", "crd", "gadgets.example.com"]));
}

/// A CRD whose schema kube would refuse (not structural, a list map key
/// that may be missing, a default of the wrong type) is refused with one
/// `422` naming each problem as kube does; a sound schema with defaults
/// is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crds_whose_schemas_kube_refuses_are_refused() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new())
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let crd = |schema: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": schema}}]}})
    };
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, s) = http
        .post(
            path,
            &crd(
                json!({"type": "object", "properties": {"spec": {"properties": {
                "size": {"type": "integer", "default": "large"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "mode": {"type": "string", "anyOf": [{"type": "string", "enum": ["a"]}]}}}}}),
            ),
        )
        .await;
    assert_eq!(code, 422, "{s}");
    let at = "spec.validation.openAPIV3Schema.properties[spec]";
    assert_eq!(
        s["message"],
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"widgets.example.com\" is invalid: [\
            {at}.properties[mode].anyOf[0].type: Forbidden: must be empty to be structural, \
            {at}.type: Required value: must not be empty for specified object fields, \
            {at}.properties[ports].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property]"
        )
    );
    let (code, s) = http.get(&format!("{path}/widgets.example.com")).await;
    assert_eq!(code, 404, "{s}");
    // Typed, the schema is structural, and the default is checked next.
    let (code, s) = http
        .post(
            path,
            &crd(
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "size": {"type": "integer", "default": "large"}}}}}),
            ),
        )
        .await;
    assert_eq!(code, 422, "{s}");
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties[size].default";
    assert_eq!(
        s["details"]["causes"][0],
        json!({"reason": "FieldValueInvalid", "field": at,
            "message": format!("Invalid value: \"string\": {at} in body must be of type integer: \"string\"")})
    );
    let (code, s) = http
        .post(
            path,
            &crd(
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "size": {"type": "integer", "default": 3},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {
                        "name": {"type": "string", "default": "http"}}}}}}}}),
            ),
        )
        .await;
    assert_eq!(code, 201, "{s}");
}

/// The Status of a failed rule over raw HTTP: each cause typed by the
/// rule's `reason`, the field the rule's node (or its `fieldPath`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_rules_are_typed_causes() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new())
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let crd: Value = serde_yaml_ng::from_str(GADGET_CRD).unwrap();
    let (code, s) = http
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(code, 201, "{s}");
    let g = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
        "spec": {"replicas": 4, "maxReplicas": 3, "mode": "z"}});
    let (code, s) = http
        .post("/apis/example.com/v1/namespaces/default/gadgets", &g)
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        s["message"],
        "Gadget.example.com \"g\" is invalid: [spec: Invalid value: \"object\": replicas must be at most maxReplicas, spec.mode: Forbidden: mode must be a or b]"
    );
    let causes: Vec<(&str, &str, &str)> = s["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["reason"].as_str().unwrap(),
                c["field"].as_str().unwrap(),
                c["message"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        causes,
        [
            (
                "FieldValueInvalid",
                "spec",
                "Invalid value: \"object\": replicas must be at most maxReplicas"
            ),
            (
                "FieldValueForbidden",
                "spec.mode",
                "Forbidden: mode must be a or b"
            ),
        ]
    );
}

const SPROCKET_CRD: &str = "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sprockets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: sprockets, singular: sprocket, kind: Sprocket}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            oneOf:
            - required: [url]
            - required: [path]
            properties:
              url: {type: string}
              path: {type: string}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}
";

/// Set and map lists refuse repeats (`Duplicate value` at the index), and
/// `oneOf` is enforced, in kube's words, through the real kubectl.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn list_types_and_one_of_are_enforced() {
    let k = Kube::new().await;
    k.apply_crd(SPROCKET_CRD);
    let sprocket = |spec: &str| {
        format!("apiVersion: example.com/v1\nkind: Sprocket\nmetadata: {{name: s}}\nspec: {spec}\n")
    };
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(&sprocket(
            "{url: u, path: p, tags: [a, b, a], ports: [{name: http, port: 80}, {name: http, port: 81}]}",
        )),
    );
    for cause in [
        "spec.tags[2]: Duplicate value: \"a\"",
        "spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"http\"}",
        ": Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
    ] {
        assert!(err.contains(cause), "missing {cause:?} in:\n{err}");
    }
    let err = k.fail(&["apply", "-f", "-"], Some(&sprocket("{tags: [a]}")));
    assert!(
        err.contains("\"spec\" must validate one and only one schema (oneOf). Found none valid"),
        "{err}"
    );
    assert!(!k.exists(&["get", "sprocket", "s"]));
    k.ok_in(
        &["apply", "-f", "-"],
        Some(&sprocket(
            "{url: u, tags: [a, b], ports: [{name: http, port: 80}]}",
        )),
    );
}

/// kube-apiserver's own field-validation test body: unknown fields and
/// repeated ones, at the top of the spec and deep in a container.
const REPEATED: &str = r#"{
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "NAME", "labels": {"app": "nginx"}},
    "spec": {
        "unknown1": "val1",
        "unknownDupe": "valDupe",
        "unknownDupe": "valDupe2",
        "paused": true,
        "paused": false,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{
                "name": "nginx",
                "image": "nginx:latest",
                "unknownNested": "val1",
                "imagePullPolicy": "Always",
                "imagePullPolicy": "Never"
            }]}
        }
    }
}"#;

/// Repeated JSON fields, in each `fieldValidation` mode, reported in the
/// order of the document beside the unknown ones, as kube reports them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_json_fields_in_each_field_validation_mode() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new())
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let body = |name: &str| bytes::Bytes::from(REPEATED.replace("NAME", name));
    let problems = [
        "unknown field \"spec.unknown1\"",
        "unknown field \"spec.unknownDupe\"",
        "duplicate field \"spec.paused\"",
        "unknown field \"spec.template.spec.containers[0].unknownNested\"",
        "duplicate field \"spec.template.spec.containers[0].imagePullPolicy\"",
    ];
    let r = http
        .request(
            "POST",
            &format!("{path}?fieldValidation=Strict"),
            "application/json",
            "",
            body("strict"),
        )
        .await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: {}",
            problems.join(", ")
        )
    );
    let (code, _) = http.get(&format!("{path}/strict")).await;
    assert_eq!(code, 404, "a refused body stores nothing");
    let r = http
        .request(
            "POST",
            &format!("{path}?fieldValidation=Warn"),
            "application/json",
            "",
            body("warn"),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.warnings(), problems);
    let r = http
        .request(
            "POST",
            &format!("{path}?fieldValidation=Ignore"),
            "application/json",
            "",
            body("ignore"),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    // The last of a repeated field wins, as Go's decoder has it: `false`,
    // which Go's encoder then leaves out.
    assert!(r.body["spec"].get("paused").is_none(), "{}", r.body);
    assert_eq!(
        r.body["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Never"
    );
    // An update is read the same way.
    let mut put = r.body.clone();
    put["metadata"]["labels"]["v"] = serde_json::json!("2");
    let text = put
        .to_string()
        .replacen("\"replicas\":1", "\"replicas\":1,\"replicas\":2", 1);
    let r = http
        .request(
            "PUT",
            &format!("{path}/ignore?fieldValidation=Strict"),
            "application/json",
            "",
            bytes::Bytes::from(text),
        )
        .await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .ends_with("strict decoding error: duplicate field \"spec.replicas\""),
        "{}",
        r.body
    );
}

/// A ConfigMap whose YAML repeats `a` (line 6) and `b` (line 8) and has an
/// unknown top-level field.
const REPEATED_YAML: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: NAME
data:
  a: one
  b: two
  a: three
  b: four
bogus: 1
";

/// Repeated keys of a YAML body, in go-yaml's words with their lines, as
/// kube reports them: one strict decoding error (before the unknown field)
/// under `Strict`, a warning per key under `Warn`; and in an apply patch
/// (the body of kube's own field-validation conformance test has one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_yaml_keys_in_each_field_validation_mode() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new())
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let path = "/api/v1/namespaces/default/configmaps";
    let body = |name: &str| bytes::Bytes::from(REPEATED_YAML.replace("NAME", name));
    let r = http
        .request(
            "POST",
            &format!("{path}?fieldValidation=Strict"),
            "application/yaml",
            "",
            body("strict"),
        )
        .await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
         yaml: unmarshal errors:\n  line 8: key \"a\" already set in map\n  \
         line 9: key \"b\" already set in map, unknown field \"bogus\""
    );
    let (code, _) = http.get(&format!("{path}/strict")).await;
    assert_eq!(code, 404, "a refused body stores nothing");
    let r = http
        .request(
            "POST",
            &format!("{path}?fieldValidation=Warn"),
            "application/yaml",
            "",
            body("warn"),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.warnings(),
        [
            "line 8: key \"a\" already set in map",
            "line 9: key \"b\" already set in map",
            "unknown field \"bogus\""
        ]
    );
    // The last of a repeated key wins, as the YAML decoder has it.
    assert_eq!(r.body["data"]["a"], "three");
    let r = http
        .request(
            "POST",
            &format!("{path}?fieldValidation=Ignore"),
            "application/yaml",
            "",
            body("ignore"),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());

    // Server-side apply: refused under Strict, warned under Warn.
    let apply = |mode: &str| format!("{path}/applied?fieldManager=test&fieldValidation={mode}");
    let patch = bytes::Bytes::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  x: one\n  x: two\n",
    );
    let r = http
        .request(
            "PATCH",
            &apply("Strict"),
            "application/apply-patch+yaml",
            "",
            patch.clone(),
        )
        .await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("line 7: key \"x\" already set in map"),
        "{}",
        r.body
    );
    let (code, _) = http.get(&format!("{path}/applied")).await;
    assert_eq!(code, 404, "a refused apply stores nothing");
    let r = http
        .request(
            "PATCH",
            &apply("Warn"),
            "application/apply-patch+yaml",
            "",
            patch,
        )
        .await;
    assert!(r.code == 201 || r.code == 200, "{}", r.body);
    assert_eq!(r.warnings(), ["line 7: key \"x\" already set in map"]);
}

const HPA_V1: &str = "
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  targetCPUUtilizationPercentage: PERCENT
";

/// Server-side apply of an `autoscaling/v1` HPA is applied in v1 and
/// stored as v2, as kube converts it: the percentage is the CPU metric.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_side_apply_of_an_hpa_in_autoscaling_v1_is_converted() {
    let k = Kube::new().await;
    k.ok_in(
        &["apply", "--server-side", "-f", "-"],
        Some(&HPA_V1.replace("PERCENT", "50")),
    );
    let v2 = k.json(&["get", "horizontalpodautoscalers.v2.autoscaling", "web"]);
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 50,
        "{v2}"
    );
    assert!(
        v2["spec"].get("targetCPUUtilizationPercentage").is_none(),
        "{v2}"
    );
    // Applied again with a new percentage: the stored metric follows.
    k.ok_in(
        &["apply", "--server-side", "-f", "-"],
        Some(&HPA_V1.replace("PERCENT", "70")),
    );
    let v1 = k.json(&["get", "horizontalpodautoscalers.v1.autoscaling", "web"]);
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70, "{v1}");
    let v2 = k.json(&["get", "horizontalpodautoscalers.v2.autoscaling", "web"]);
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 70,
        "{v2}"
    );
    assert_eq!(v2["spec"]["metrics"].as_array().unwrap().len(), 1, "{v2}");
    assert_eq!(v2["spec"]["maxReplicas"], 5);
}

/// Storage as a cluster answers it: a claim without access modes or a
/// request is refused in kube's words; a claim naming no class gets the
/// default one (the newest default), an explicit `""` keeps none; a bound
/// claim's spec is fixed, and so is a class's provisioner.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_get_the_default_class_and_are_held_to_kubes_rules() {
    let k = Kube::new().await;
    let err = k.fail(
        &["apply", "-f", "-"],
        Some("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: bad}\nspec: {}\n"),
    );
    assert!(
        err.contains("The PersistentVolumeClaim \"bad\" is invalid")
            && err.contains("spec.accessModes: Required value: at least 1 access mode is required")
            && err.contains("spec.resources[storage]: Required value"),
        "{err}"
    );
    assert!(!k.exists(&["get", "pvc", "bad"]));
    let err = k.fail(
        &["apply", "-f", "-"],
        Some("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: bad}\nspec: {}\n"),
    );
    assert!(
        err.contains("spec.capacity: Required value")
            && err.contains("spec: Required value: must specify a volume type"),
        "{err}"
    );

    let class = |name: &str, default: bool| {
        format!(
            "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: {name}\n  \
             annotations: {{storageclass.kubernetes.io/is-default-class: \"{default}\"}}\n\
             provisioner: example.com/disk\n"
        )
    };
    let claim = |name: &str, class: &str| {
        format!(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}}}\nspec:\n  \
             accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 1Gi}}}}\n{class}"
        )
    };
    // No default class yet: the claim keeps none.
    k.ok_in(&["apply", "-f", "-"], Some(&claim("before", "")));
    k.ok_in(&["apply", "-f", "-"], Some(&class("slow", false)));
    k.ok_in(&["apply", "-f", "-"], Some(&class("standard", true)));
    k.ok_in(&["apply", "-f", "-"], Some(&claim("data", "")));
    k.ok_in(
        &["apply", "-f", "-"],
        Some(&claim("none", "  storageClassName: \"\"\n")),
    );
    let class_of = |name: &str| k.json(&["get", "pvc", name])["spec"]["storageClassName"].clone();
    assert_eq!(class_of("before"), Value::Null);
    assert_eq!(class_of("data"), json!("standard"));
    assert_eq!(class_of("none"), json!(""));
    let sc = k.json(&["get", "sc", "standard"]);
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert_eq!(sc["volumeBindingMode"], "Immediate");

    // Binding is the one change a claim's spec takes.
    k.ok(&[
        "patch",
        "pvc",
        "data",
        "-p",
        r#"{"spec":{"volumeName":"pv-1"}}"#,
    ]);
    let err = k.fail(
        &[
            "patch",
            "pvc",
            "data",
            "-p",
            r#"{"spec":{"accessModes":["ReadWriteMany"]}}"#,
        ],
        None,
    );
    assert!(
        err.contains("spec: Forbidden: spec is immutable after creation"),
        "{err}"
    );
    let err = k.fail(
        &[
            "patch",
            "sc",
            "standard",
            "-p",
            r#"{"provisioner":"example.com/other"}"#,
        ],
        None,
    );
    assert!(
        err.contains("provisioner: Forbidden: updates to provisioner are forbidden."),
        "{err}"
    );
}

/// `StorageObjectInUseProtection` as a cluster has it: every claim and
/// volume created gets its protection finalizer (once, however it is
/// created: dry run and server-side apply too), so deleting one leaves it
/// `Terminating` until the finalizer is taken off (by the controllers a
/// bare server does not run; here by hand).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_and_volumes_are_protected_by_finalizers_until_let_go() {
    const CLAIM: &str = "kubernetes.io/pvc-protection";
    const VOLUME: &str = "kubernetes.io/pv-protection";
    let k = Kube::new().await;
    let claim = |name: &str, finalizers: &str| {
        format!(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}{finalizers}}}\n\
             spec:\n  accessModes: [ReadWriteOnce]\n  resources: {{requests: {{storage: 1Gi}}}}\n"
        )
    };
    let volume = |name: &str, finalizers: &str| {
        format!(
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}{finalizers}}}\n\
             spec:\n  capacity: {{storage: 1Gi}}\n  accessModes: [ReadWriteOnce]\n  \
             hostPath: {{path: /tmp/{name}}}\n"
        )
    };
    let finalizers = |what: &[&str]| k.json(what)["metadata"]["finalizers"].clone();

    k.ok_in(&["create", "-f", "-"], Some(&claim("data", "")));
    assert_eq!(finalizers(&["get", "pvc", "data"]), json!([CLAIM]));
    k.ok_in(
        &["create", "-f", "-"],
        Some(&claim(
            "mine",
            &format!(", finalizers: [example.com/keep, {CLAIM}]"),
        )),
    );
    assert_eq!(
        finalizers(&["get", "pvc", "mine"]),
        json!(["example.com/keep", CLAIM]),
        "not given twice"
    );
    k.ok_in(
        &["apply", "--server-side", "-f", "-"],
        Some(&claim("applied", "")),
    );
    assert_eq!(finalizers(&["get", "pvc", "applied"]), json!([CLAIM]));
    let dry: Value = serde_json::from_str(&k.ok_in(
        &["create", "--dry-run=server", "-o", "json", "-f", "-"],
        Some(&claim("dry", "")),
    ))
    .unwrap();
    assert_eq!(dry["metadata"]["finalizers"], json!([CLAIM]));
    assert!(!k.exists(&["get", "pvc", "dry"]));

    k.ok_in(&["create", "-f", "-"], Some(&volume("pv-1", "")));
    assert_eq!(finalizers(&["get", "pv", "pv-1"]), json!([VOLUME]));
    k.ok_in(
        &["create", "-f", "-"],
        Some(&volume("pv-2", &format!(", finalizers: [{VOLUME}]"))),
    );
    assert_eq!(finalizers(&["get", "pv", "pv-2"]), json!([VOLUME]));

    // Deleted, they stay, Terminating, until the finalizer comes off.
    k.ok(&["delete", "pvc", "data", "--wait=false"]);
    k.ok(&["delete", "pv", "pv-1", "--wait=false"]);
    for what in [["pvc", "data"], ["pv", "pv-1"]] {
        let o = k.json(&["get", what[0], what[1]]);
        assert!(o["metadata"]["deletionTimestamp"].is_string(), "{o}");
        let shown = k.ok(&["get", what[0], what[1]]);
        assert!(shown.contains("Terminating"), "{shown}");
    }
    // No finalizer can be added to what is being deleted.
    let err = k.fail(
        &[
            "patch",
            "pvc",
            "data",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/late"}]"#,
        ],
        None,
    );
    assert!(
        err.contains("no new finalizers can be added if the object is being deleted"),
        "{err}"
    );
    for what in [["pvc", "data"], ["pv", "pv-1"]] {
        k.ok(&[
            "patch",
            what[0],
            what[1],
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ]);
        k.eventually(&format!("{} {} gone", what[0], what[1]), || {
            !k.exists(&["get", what[0], what[1]])
        });
    }
}

/// Priority as a cluster has it: the system classes are there and cannot
/// be deleted; a pod gets its class's priority (0 with none) and the
/// default not-ready/unreachable tolerations; a class that does not exist
/// is a 403; a user's class is at most one billion, and one is the
/// global default.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pods_get_their_priority_and_classes_are_held_to_kubes_rules() {
    let k = Kube::new().await;
    let classes = k.ok(&["get", "priorityclasses"]);
    assert!(
        classes.contains("system-node-critical") && classes.contains("2000001000"),
        "{classes}"
    );
    let err = k.fail(
        &["delete", "priorityclass", "system-cluster-critical"],
        None,
    );
    assert!(
        err.contains("this is a system priority class and cannot be deleted"),
        "{err}"
    );
    k.ok(&["create", "priorityclass", "high", "--value=1000"]);
    let err = k.fail(
        &["create", "priorityclass", "huge", "--value=2000000000"],
        None,
    );
    assert!(
        err.contains("maximum allowed value of a user defined priority is 1000000000"),
        "{err}"
    );
    k.ok(&[
        "create",
        "priorityclass",
        "batch",
        "--value=10",
        "--global-default",
    ]);
    let err = k.fail(
        &[
            "create",
            "priorityclass",
            "second",
            "--value=20",
            "--global-default",
        ],
        None,
    );
    assert!(
        err.contains(
            "PriorityClass batch is already marked as default. Only one default can exist"
        ),
        "{err}"
    );

    let pod = |name: &str, class: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n{class}  \
             containers: [{{name: c, image: nginx}}]\n"
        )
    };
    k.ok_in(
        &["apply", "-f", "-"],
        Some(&pod("urgent", "  priorityClassName: high\n")),
    );
    let urgent = k.json(&["get", "pod", "urgent"]);
    assert_eq!(urgent["spec"]["priority"], 1000, "{urgent}");
    assert_eq!(urgent["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    let keys: Vec<&str> = urgent["spec"]["tolerations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable"
        ]
    );
    k.ok_in(&["apply", "-f", "-"], Some(&pod("plain", "")));
    let plain = k.json(&["get", "pod", "plain"]);
    assert_eq!(plain["spec"]["priorityClassName"], "batch", "{plain}");
    assert_eq!(plain["spec"]["priority"], 10, "{plain}");
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(&pod("lost", "  priorityClassName: gold\n")),
    );
    assert!(
        err.contains("no PriorityClass with name gold was found"),
        "{err}"
    );
}

/// A CronJob is held to kube's CronJob rules: its schedule parsed as the
/// cronjob plugin parses it and its time zone looked up in the plugin's
/// database, every problem one cause of one 422; a good one is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cronjobs_are_held_to_kubes_rules() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new())
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let cronjob = |name: &str, schedule: &str, zone: &str| {
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, "timeZone": zone, "concurrencyPolicy": "Sometimes",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}]}}}}}})
    };
    let path = "/apis/batch/v1/namespaces/default/cronjobs";
    let (code, s) = http
        .post(path, &cronjob("bad", "0 25 * * *", "Mars/Olympus"))
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(s["reason"], "Invalid");
    assert_eq!(
        s["message"],
        "CronJob.batch \"bad\" is invalid: [spec.schedule: Invalid value: \"0 25 * * *\": end of range (25) above maximum (23): 25, spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus, spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"]"
    );
    let mut good = cronjob("good", "0 9 * * *", "Europe/Paris");
    good["spec"]["concurrencyPolicy"] = json!("Forbid");
    let (code, s) = http.post(path, &good).await;
    assert_eq!(code, 201, "{s}");
    assert_eq!(s["spec"]["timeZone"], "Europe/Paris");
}

/// A Job's `successPolicy` and `managedBy` are held to kube's rules over
/// HTTP: a bad policy is one 422 with every cause, and neither field may
/// change once the Job is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_success_policies_and_managers_are_held_to_kubes_rules() {
    let server = windlass_apiserver::start(windlass_apiserver::Config::new())
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let job = |name: &str, extra: Value| {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completionMode": "Indexed", "completions": 3,
                "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}]}}}});
        for (k, v) in extra.as_object().unwrap() {
            j["spec"][k] = v.clone();
        }
        j
    };
    let path = "/apis/batch/v1/namespaces/default/jobs";
    let bad = job(
        "bad",
        json!({"managedBy": "queue", "successPolicy": {"rules": [
            {"succeededIndexes": "0-3", "succeededCount": 1}, {}]}}),
    );
    let (code, s) = http.post(path, &bad).await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        s["message"],
        "Job.batch \"bad\" is invalid: [spec.managedBy: Invalid value: \"queue\": must be a domain-prefixed path (such as \"acme.io/foo\"), spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"0-3\": error parsing succeededIndexes: too large index: \"3\", spec.successPolicy.rules[0].succeededCount: Invalid value: 1: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field), spec.successPolicy.rules[1]: Required value: at least one of succeededCount or succeededIndexes must be specified]"
    );

    let good = job(
        "good",
        json!({"managedBy": "example.com/queue",
               "successPolicy": {"rules": [{"succeededIndexes": "0-2", "succeededCount": 2}]}}),
    );
    let (code, s) = http.post(path, &good).await;
    assert_eq!(code, 201, "{s}");
    assert_eq!(s["spec"]["managedBy"], "example.com/queue");
    assert_eq!(s["spec"]["successPolicy"]["rules"][0]["succeededCount"], 2);
    let (code, s) = http
        .merge_patch(
            &format!("{path}/good"),
            &json!({"spec": {"managedBy": "kubernetes.io/job-controller",
                             "successPolicy": null}}),
        )
        .await;
    assert_eq!(code, 422, "{s}");
    assert_eq!(
        s["message"],
        "Job.batch \"good\" is invalid: [spec.managedBy: Invalid value: \"kubernetes.io/job-controller\": field is immutable, spec.successPolicy: Invalid value: null: field is immutable]"
    );
}
