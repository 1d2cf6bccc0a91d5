#!/usr/bin/env python3
"""Generates crates/protobuf/src/schema.rs: the protobuf field tables of the served kinds.

Reads the prost sources of the `k8s-pb` crate (generated from Kubernetes' generated.proto files)
and writes, for every message reachable from the served kinds, its fields: tag, name, wire kind,
repeated-ness and message type. Usage:

    python3 crates/protobuf/tools/gen_protobuf_schema.py ~/.cargo/registry/src/*/k8s-pb-0.9.0/src > crates/protobuf/src/schema.rs
"""
import os
import re
import sys

ROOTS = [
    "io.k8s.api.core.v1." + k
    for k in [
        "Binding", "ComponentStatus", "ConfigMap", "Endpoints", "Event", "LimitRange", "Namespace", "Node",
        "PersistentVolumeClaim", "PersistentVolume", "Pod", "PodTemplate", "ReplicationController",
        "ResourceQuota", "Secret", "ServiceAccount", "Service",
    ]
] + [
    "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
    "io.k8s.api.apps.v1.ControllerRevision",
    "io.k8s.api.apps.v1.DaemonSet",
    "io.k8s.api.apps.v1.Deployment",
    "io.k8s.api.apps.v1.ReplicaSet",
    "io.k8s.api.apps.v1.StatefulSet",
    "io.k8s.api.events.v1.Event",
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
    "io.k8s.api.batch.v1.CronJob",
    "io.k8s.api.batch.v1.Job",
    "io.k8s.api.certificates.v1.CertificateSigningRequest",
    "io.k8s.api.networking.v1.IngressClass",
    "io.k8s.api.networking.v1.Ingress",
    "io.k8s.api.networking.v1.IPAddress",
    "io.k8s.api.networking.v1.NetworkPolicy",
    "io.k8s.api.networking.v1.ServiceCIDR",
    "io.k8s.api.policy.v1.PodDisruptionBudget",
    "io.k8s.api.rbac.v1.ClusterRoleBinding",
    "io.k8s.api.rbac.v1.ClusterRole",
    "io.k8s.api.rbac.v1.RoleBinding",
    "io.k8s.api.rbac.v1.Role",
    "io.k8s.api.storage.v1.CSIDriver",
    "io.k8s.api.storage.v1.CSINode",
    "io.k8s.api.storage.v1.CSIStorageCapacity",
    "io.k8s.api.storage.v1.StorageClass",
    "io.k8s.api.storage.v1.VolumeAttachment",
    "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
    "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
    "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
    "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
    "io.k8s.api.scheduling.v1.PriorityClass",
    "io.k8s.api.coordination.v1.Lease",
    "io.k8s.api.node.v1.RuntimeClass",
    "io.k8s.api.discovery.v1.EndpointSlice",
    "io.k8s.api.flowcontrol.v1.FlowSchema",
    "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration",
    "io.k8s.api.authentication.v1.TokenRequest",
    "io.k8s.api.autoscaling.v1.Scale",
    "io.k8s.api.policy.v1.Eviction",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.runtime.Unknown",
]

ATTR = re.compile(r'#\[prost\(([^)]*)\)\]')
FIELD = re.compile(r'pub (r#)?(\w+):\s*(.+),\s*$')
STRUCT = re.compile(r'pub struct (\w+) \{')


def module_name(rel):
    parts = rel.split(os.sep)[:-1]  # drop mod.rs
    # Kubernetes names these packages with a hyphen (as the OpenAPI definitions do).
    parts = [p.replace("_", "-") if p in ("kube_aggregator", "apiextensions_apiserver") else p for p in parts]
    return "io.k8s." + ".".join(parts)


def resolve(module, rust_type):
    """Qualified message name of a Rust type path used in `module`."""
    t = rust_type
    for wrapper in ["::core::option::Option<", "::prost::alloc::vec::Vec<", "::prost::alloc::boxed::Box<"]:
        while t.startswith(wrapper):
            # A declaration joined from several lines keeps rustfmt's trailing comma.
            t = t[len(wrapper):-1].rstrip(", ")
    m = re.match(r'(?:::\w+)*::BTreeMap<\s*::prost::alloc::string::String,\s*(.+?),?\s*>$', t)
    if m:
        t = m.group(1)
    parts = t.split("::")
    mod = module.split(".")
    while parts and parts[0] == "super":
        mod = mod[:-1]
        parts = parts[1:]
    return ".".join(mod + parts)


def parse(root):
    messages = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f != "mod.rs":
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            module = module_name(rel)
            current = None
            attr = None
            # Join multi-line field declarations (generic types split over lines).
            lines = []
            pending = None
            for raw in open(path).read().splitlines():
                line = raw.strip()
                if pending is not None:
                    pending += line
                    if pending.count("<") == pending.count(">") and pending.endswith(","):
                        lines.append(pending)
                        pending = None
                    continue
                if line.startswith("pub ") and not line.startswith("pub struct") and not line.startswith("pub mod") \
                        and not line.startswith("pub enum") and not line.startswith("pub fn") \
                        and (line.count("<") != line.count(">") or not line.endswith(",")):
                    pending = line
                    continue
                lines.append(line)
            for line in lines:
                m = STRUCT.match(line)
                if m:
                    current = module + "." + m.group(1)
                    messages[current] = []
                    continue
                if line == "}":
                    current = None
                    continue
                a = ATTR.match(line)
                if a and current:
                    attr = a.group(1)
                    continue
                fm = FIELD.match(line)
                if fm and current and attr:
                    name, rust_type = fm.group(2), fm.group(3)
                    messages[current].append((attr, name, rust_type, module))
                    attr = None
    return messages


def field_kind(attr, rust_type, module):
    tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
    repeated = "repeated" in attr
    first = attr.split(",")[0].strip()
    if first.startswith("btree_map"):
        value = re.search(r'btree_map = "string, (\w+)"', attr).group(1)
        if value == "message":
            return tag, False, ("Map", resolve(module, rust_type))
        return tag, False, ("Map", value)
    if first.startswith("bytes"):
        return tag, repeated, ("Scalar", "bytes")
    if first == "message":
        return tag, repeated, ("Message", resolve(module, rust_type))
    return tag, repeated, ("Scalar", first)


SCALARS = {"string": "Str", "bytes": "Bytes", "bool": "Bool", "int32": "Int32", "int64": "Int64", "double": "Double"}


def main():
    messages = parse(sys.argv[1])
    seen = []
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if name not in messages:
            sys.exit(f"unknown message {name}")
        seen.append(name)
        for attr, fname, rust_type, module in messages[name]:
            _, _, (kind, target) = field_kind(attr, rust_type, module)
            if kind in ("Message", "Map") and target not in SCALARS:
                todo.append(target)
    out = [
        "//! Protobuf field tables of the served kinds, generated by `tools/gen_protobuf_schema.py`",
        "//! from the `k8s-pb` crate's prost sources (Kubernetes' generated.proto). Do not edit.",
        "",
        "use super::{Field, Kind, Message};",
        "",
        "/// Every message reachable from the served kinds, sorted by name.",
        "pub(super) static MESSAGES: &[Message] = &[",
    ]
    for name in sorted(seen):
        out.append(f"    Message {{ name: {name!r}, fields: &[".replace("'", '"'))
        for attr, fname, rust_type, module in messages[name]:
            tag, repeated, (kind, target) = field_kind(attr, rust_type, module)
            if kind == "Scalar":
                k = f"Kind::{SCALARS[target]}"
            elif kind == "Message":
                k = f'Kind::Message("{target}")'
            elif target in SCALARS:
                k = f"Kind::Map(&Kind::{SCALARS[target]})"
            else:
                k = f'Kind::Map(&Kind::Message("{target}"))'
            out.append(f'        Field {{ tag: {tag}, name: "{fname}", kind: {k}, repeated: {str(repeated).lower()} }},')
        out.append("    ] },")
    out.append("];")
    print("\n".join(out))


main()
