#!/usr/bin/env python3
"""Writes apiserver/src/proto/schema.txt, the wire schema the protobuf decoder
reads, from the Kubernetes `generated.proto` files (kubernetes/api,
kubernetes/apimachinery and kubernetes/kube-aggregator, one directory per
group/version as in those repos, under `api/`, `apimachinery/` and
`kube-aggregator/`; the committed file is from their v0.36.2 tags).

    python3 apiserver/src/proto/gen-schema.py PROTO_ROOT > apiserver/src/proto/schema.txt

Only the messages reachable from the kinds the embedded server serves are
written. One line per message: its name, then `number:jsonName:type` per
field, where type is `s` string, `i` integer, `b` bool, `y` bytes, `d`
floating point, a special type (`time`, `mtime`, `dur`, `qty`, `ios`, `raw`,
`fields`), or a message name; prefixed `*` for repeated and `%` for a map
with string keys, and suffixed `^` for a field Go inlines into its parent.
"""
import os
import re
import sys

ROOT = sys.argv[1]
FILES = [
    "api/core/v1", "api/apps/v1", "api/batch/v1", "api/rbac/v1", "api/policy/v1",
    "api/networking/v1", "api/scheduling/v1", "api/storage/v1", "api/discovery/v1",
    "api/coordination/v1", "api/events/v1", "api/autoscaling/v2", "api/node/v1",
    "api/autoscaling/v1", "api/authorization/v1", "api/authentication/v1",
    "api/certificates/v1", "apimachinery/pkg/apis/meta/v1",
    "kube-aggregator/pkg/apis/apiregistration/v1",
]
KINDS = [
    "core.v1." + k for k in [
        "Namespace", "Pod", "Node", "ConfigMap", "Secret", "Service", "ServiceAccount",
        "Event", "ResourceQuota", "LimitRange", "Endpoints", "PersistentVolumeClaim",
        "PersistentVolume", "PodTemplate", "ReplicationController"]
] + ["apps.v1." + k for k in ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet",
                              "ControllerRevision"]] + [
    "batch.v1.Job", "batch.v1.CronJob", "autoscaling.v2.HorizontalPodAutoscaler",
    "policy.v1.PodDisruptionBudget", "policy.v1.Eviction", "rbac.v1.Role", "rbac.v1.RoleBinding",
    "rbac.v1.ClusterRole", "rbac.v1.ClusterRoleBinding", "networking.v1.Ingress",
    "networking.v1.IngressClass", "networking.v1.NetworkPolicy",
    "discovery.v1.EndpointSlice", "scheduling.v1.PriorityClass",
    "storage.v1.StorageClass", "node.v1.RuntimeClass", "coordination.v1.Lease",
    "events.v1.Event", "meta.v1.DeleteOptions",
    "autoscaling.v1.HorizontalPodAutoscaler", "autoscaling.v1.Scale",
    "authorization.v1.SelfSubjectAccessReview", "authorization.v1.SelfSubjectRulesReview",
    "authorization.v1.SubjectAccessReview", "authorization.v1.LocalSubjectAccessReview",
    "authentication.v1.SelfSubjectReview", "authentication.v1.TokenReview",
    "authentication.v1.TokenRequest", "certificates.v1.CertificateSigningRequest",
    "apiregistration.v1.APIService",
]
SPECIAL = {
    "meta.v1.Time": "time", "meta.v1.MicroTime": "mtime", "meta.v1.Duration": "dur",
    "api.resource.Quantity": "qty", "util.intstr.IntOrString": "ios",
    "pkg.runtime.RawExtension": "raw",
    "meta.v1.FieldsV1": "fields",
}
SCALAR = {"string": "s", "int32": "i", "int64": "i", "bool": "b", "bytes": "y",
          "double": "d", "float": "d"}
# Go embeds these with `json:",inline"`: their fields belong to the parent.
INLINE = {"volumeSource", "handler", "persistentVolumeSource", "ingressRuleValue"}


def short(pkg):
    # "api.apps.v1" -> "apps.v1"; "apimachinery.pkg.apis.meta.v1" -> "meta.v1"
    parts = pkg.split(".")
    return ".".join(parts[-2:])


messages = {}
for f in FILES:
    path = os.path.join(ROOT, f, "generated.proto")
    text = open(path).read()
    pkg = short(re.search(r"^package ([\w.]+);", text, re.M).group(1))
    depth, name = 0, None
    for line in text.splitlines():
        line = line.split("//")[0].strip()
        m = re.match(r"message (\w+) \{", line)
        if m and depth == 0:
            name, depth = f"{pkg}.{m.group(1)}", 1
            messages[name] = []
            continue
        if name is None:
            continue
        depth += line.count("{") - line.count("}")
        if depth == 0:
            name = None
            continue
        m = re.match(r"(optional|repeated)?\s*(map<string, ?([\w.]+)>|[\w.]+) (\w+) = (\d+);", line)
        if m and depth == 1:
            label, ty, mapval, field, num = m.groups()
            messages[name].append((int(num), field, label == "repeated", mapval or ty,
                                   mapval is not None, pkg))


def resolve(ty, pkg):
    if ty in SCALAR:
        return SCALAR[ty]
    if ty.startswith("."):
        ty = short(ty[1:].rsplit(".", 1)[0]) + "." + ty.rsplit(".", 1)[1]
    elif "." not in ty:
        ty = f"{pkg}.{ty}"
    return SPECIAL.get(ty, ty)


out, todo = {}, list(KINDS)
while todo:
    name = todo.pop()
    if name in out:
        continue
    if name not in messages:
        sys.exit(f"unknown message {name}")
    fields = []
    for num, field, repeated, ty, is_map, pkg in messages[name]:
        t = resolve(ty, pkg)
        if "." in t:
            todo.append(t)
        prefix = "%" if is_map else ("*" if repeated else "")
        suffix = "^" if field in INLINE else ""
        fields.append(f"{num}:{field}:{prefix}{t}{suffix}")
    out[name] = fields

print("# Generated by apiserver/src/proto/gen-schema.py from the Kubernetes generated.proto files.")
for name in sorted(out):
    print(" ".join([name] + out[name]))
