#!/usr/bin/env python3
"""Writes apiserver/src/openapi/definitions.json, the OpenAPI schemas of the
built-in kinds the embedded server serves, from the Kubernetes OpenAPI v2
spec (`api/openapi-spec/swagger.json` of kubernetes/kubernetes; the official
Python client ships the same file as `kubernetes/swagger.json.unprocessed`).

    python3 apiserver/src/openapi/gen-definitions.py SWAGGER_JSON > apiserver/src/openapi/definitions.json

Only the definitions reachable from the kinds below (and their lists) are
written, unchanged: descriptions and `x-kubernetes-*` extensions included,
since `kubectl explain` prints the former and clients read the latter. One
definition a line, sorted, so that a regeneration diffs by type.
"""
import json
import sys

SPEC = sys.argv[1]

# (group, version, kind) of everything the server serves or answers with.
KINDS = [("", "v1", k) for k in [
    "Namespace", "Pod", "Node", "ConfigMap", "Secret", "Service", "ServiceAccount",
    "Event", "ResourceQuota", "LimitRange", "Endpoints", "PersistentVolumeClaim",
    "PersistentVolume", "PodTemplate", "ReplicationController", "Binding",
    "Status", "DeleteOptions",
]] + [("apps", "v1", k) for k in [
    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ControllerRevision",
]] + [
    ("batch", "v1", "Job"), ("batch", "v1", "CronJob"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    ("autoscaling", "v1", "HorizontalPodAutoscaler"), ("autoscaling", "v1", "Scale"),
    ("policy", "v1", "PodDisruptionBudget"), ("policy", "v1", "Eviction"),
    ("rbac.authorization.k8s.io", "v1", "Role"), ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    ("networking.k8s.io", "v1", "Ingress"), ("networking.k8s.io", "v1", "IngressClass"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("discovery.k8s.io", "v1", "EndpointSlice"),
    ("scheduling.k8s.io", "v1", "PriorityClass"),
    ("storage.k8s.io", "v1", "StorageClass"),
    ("node.k8s.io", "v1", "RuntimeClass"),
    ("coordination.k8s.io", "v1", "Lease"),
    ("events.k8s.io", "v1", "Event"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "v1", "APIService"),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "v1", "SubjectAccessReview"),
    ("authorization.k8s.io", "v1", "LocalSubjectAccessReview"),
    ("authentication.k8s.io", "v1", "TokenReview"),
    ("authentication.k8s.io", "v1", "SelfSubjectReview"),
    ("authentication.k8s.io", "v1", "TokenRequest"),
]

spec = json.load(open(SPEC))
defs = spec["definitions"]
by_gvk = {}
for name, d in defs.items():
    for g in d.get("x-kubernetes-group-version-kind", []):
        by_gvk.setdefault((g["group"], g["version"], g["kind"]), name)

todo = []
for g, v, k in KINDS:
    if (g, v, k) not in by_gvk:
        sys.exit(f"the spec has no definition of {g}/{v} {k}")
    todo.append(by_gvk[(g, v, k)])
    if (g, v, k + "List") in by_gvk:
        todo.append(by_gvk[(g, v, k + "List")])


def refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.rsplit("/", 1)[1]
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


out = {}
while todo:
    name = todo.pop()
    if name in out:
        continue
    out[name] = defs[name]
    todo.extend(refs(defs[name]))

print("{")
names = sorted(out)
for i, name in enumerate(names):
    comma = "," if i + 1 < len(names) else ""
    print(f"{json.dumps(name)}:{json.dumps(out[name], sort_keys=True, separators=(',', ':'))}{comma}")
print("}")
