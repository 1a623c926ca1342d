#!/usr/bin/env python3
"""Writes apiserver/src/proto/omitempty.txt, the fields Go's JSON encoding
leaves out when they hold their zero value, from the Kubernetes Go types
(`types.go` and the other non-test files of kubernetes/api, one directory
per group/version, under `api/`, and apimachinery's `pkg/apis/meta/v1`,
under `apimachinery/`). The committed file is from kubernetes/api and
kubernetes/apimachinery at master of 2026-11 (v0.37 in progress).

    python3 apiserver/src/proto/gen-omitempty.py ROOT > apiserver/src/proto/omitempty.txt

One line per field: the message (named as in `schema.txt`), the JSON name,
and `z` for a scalar (bool, number, string) left out when false, 0 or "",
or `e` for a list or map left out when empty. Pointers and structs are
never left out by `omitempty` and are not listed; neither are fields
without `omitempty`.
"""
import os
import re
import sys

ROOT = sys.argv[1]
DIRS = {
    "core.v1": "api/core/v1", "apps.v1": "api/apps/v1", "batch.v1": "api/batch/v1",
    "rbac.v1": "api/rbac/v1", "policy.v1": "api/policy/v1",
    "networking.v1": "api/networking/v1", "scheduling.v1": "api/scheduling/v1",
    "storage.v1": "api/storage/v1", "discovery.v1": "api/discovery/v1",
    "coordination.v1": "api/coordination/v1", "events.v1": "api/events/v1",
    "autoscaling.v2": "api/autoscaling/v2", "node.v1": "api/node/v1",
    "autoscaling.v1": "api/autoscaling/v1", "authorization.v1": "api/authorization/v1",
    "authentication.v1": "api/authentication/v1", "certificates.v1": "api/certificates/v1",
    "meta.v1": "apimachinery/pkg/apis/meta/v1",
}
# Types from other packages that are structs (Go never omits them).
FOREIGN_STRUCTS = {"Quantity", "IntOrString", "RawExtension", "Time", "MicroTime",
                   "Duration", "FieldsV1"}

structs, named = {}, {}
for pkg, d in DIRS.items():
    path = os.path.join(ROOT, d)
    for f in sorted(os.listdir(path)):
        if not f.endswith(".go") or f.endswith("_test.go") or f.startswith("zz_") \
                or f.startswith("generated"):
            continue
        text = open(os.path.join(path, f)).read()
        for m in re.finditer(r"^type (\w+) struct \{\n(.*?)^\}", text, re.M | re.S):
            fields = []
            for line in m.group(2).splitlines():
                fm = re.match(r'\s*(\w+)\s+(\S+)\s+`json:"([^"]*)"', line)
                if fm:
                    fields.append((fm.group(2), fm.group(3)))
            structs[(pkg, m.group(1))] = fields
        for m in re.finditer(r"^type (\w+) (\S+)\s*$", text, re.M):
            named[m.group(1)] = m.group(2)


def kind(go_type):
    """`e` for a list or map, `z` for a scalar, None for a pointer or struct."""
    if go_type.startswith("*"):
        return None
    if go_type.startswith("[]") or go_type.startswith("map["):
        return "e"
    base = go_type.split(".")[-1]
    if base in FOREIGN_STRUCTS or any(n == base for (_, n) in structs):
        return None
    under = named.get(base)
    if under is not None and (under.startswith("[]") or under.startswith("map[")):
        return "e"
    return "z"


for (pkg, name), fields in sorted(structs.items()):
    for go_type, tag in fields:
        parts = tag.split(",")
        if not parts[0] or "omitempty" not in parts[1:]:
            continue
        k = kind(go_type)
        if k:
            print(f"{pkg}.{name} {parts[0]} {k}")
