#!/usr/bin/env python3
"""Generates crates/apimachinery/src/semantic/types.rs: the JSON shape of every Go struct reachable
from the workload types, as apimachinery's semantic equality and Go's JSON encoder see them.

Usage (from the workspace root, with Kubernetes' Go type definitions at hand):

    crates/apimachinery/tools/gen_semantic_types.py \
        --core  path/to/k8s.io/api/core/v1/types.go \
        --apps  path/to/k8s.io/api/apps/v1/types.go \
        --meta  path/to/k8s.io/apimachinery/pkg/apis/meta/v1/types.go \
        --source "k8s.io/api <commit>, k8s.io/apimachinery <commit>" \
        > crates/apimachinery/src/semantic/types.rs

The files come from github.com/kubernetes/api and github.com/kubernetes/apimachinery (or the
staging/ directory of kubernetes/kubernetes). Run `cargo fmt` afterwards.

Only struct, named-string and named-map/slice declarations are read; every field type must be
resolvable, so a new kind of field stops the generator instead of being skipped.
"""

import argparse
import re
import sys

# Go types with their own equality in apimachinery's `Semantic` (or their own JSON form).
SPECIAL = {
    "resource.Quantity": "Shape::Quantity",
    "meta.Time": "Shape::Time",
    "meta.MicroTime": "Shape::Time",
    "meta.FieldsV1": "Shape::Json",
    "runtime.RawExtension": "Shape::Json",
    "intstr.IntOrString": "Shape::IntOrString",
    "types.UID": "Shape::Scalar(Zero::String)",
    "types.NodeName": "Shape::Scalar(Zero::String)",
    # metav1.Duration is a struct whose JSON is a string such as "1m30s".
    "meta.Duration": "Shape::Scalar(Zero::String)",
}

BUILTIN = {
    "string": "Shape::Scalar(Zero::String)",
    "bool": "Shape::Scalar(Zero::Bool)",
    "[]byte": "Shape::Scalar(Zero::String)",  # base64; nil and empty are equal
}
for n in ["int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32",
          "uint64", "float32", "float64", "byte"]:
    BUILTIN[n] = "Shape::Scalar(Zero::Number)"

# Import names of each package: the name a file uses for another package.
QUALIFIERS = {
    "core": {"metav1": "meta", "resource": "resource", "types": "types", "intstr": "intstr"},
    "apps": {"v1": "core", "metav1": "meta", "runtime": "runtime", "intstr": "intstr"},
    "meta": {"runtime": "runtime", "types": "types"},
}

GO_PACKAGE = {"core": "core/v1", "apps": "apps/v1", "meta": "meta/v1"}

ROOTS = [
    ("POD_TEMPLATE_SPEC", "core", "PodTemplateSpec"),
    ("POD_SPEC", "core", "PodSpec"),
    ("POD", "core", "Pod"),
    ("POD_TEMPLATE", "core", "PodTemplate"),
    ("OBJECT_META", "meta", "ObjectMeta"),
    ("DEPLOYMENT", "apps", "Deployment"),
    ("REPLICA_SET", "apps", "ReplicaSet"),
    ("DAEMON_SET", "apps", "DaemonSet"),
    ("STATEFUL_SET", "apps", "StatefulSet"),
    ("CONTROLLER_REVISION", "apps", "ControllerRevision"),
]

STRUCT_RE = re.compile(r"^type (\w+) struct \{\s*$")
NAMED_RE = re.compile(r"^type (\w+) (=\s*)?([\w.\[\]*]+)\s*(//.*)?$")
FIELD_RE = re.compile(r"^\s+(\w+)\s+([\w.\[\]*]+)\s+`([^`]*)`")
EMBED_RE = re.compile(r"^\s+([\w.*]+)\s+`([^`]*)`")
JSON_TAG_RE = re.compile(r'json:"([^"]*)"')


def parse(pkg, path):
    """Returns {name: ("struct", [(json, go_type, inline)]) | ("named", go_type)}."""
    decls = {}
    with open(path, encoding="utf-8") as f:
        lines = []
        in_block = False
        for line in f.read().splitlines():
            # Block comments (the licence header, a note in DaemonEndpoint) become blank lines.
            if not in_block and line.strip().startswith("/*"):
                in_block = True
            if in_block:
                in_block = not line.strip().endswith("*/")
                line = ""
            lines.append(line)
    i = 0
    while i < len(lines):
        line = lines[i]
        m = STRUCT_RE.match(line)
        if m:
            name, fields = m.group(1), []
            i += 1
            while not lines[i].startswith("}"):
                body = lines[i].split("//")[0] if not lines[i].strip().startswith("//") else ""
                fm = FIELD_RE.match(lines[i]) if body.strip() else None
                em = EMBED_RE.match(lines[i]) if body.strip() and not fm else None
                if fm:
                    tag = JSON_TAG_RE.search(fm.group(3))
                    json_name = tag.group(1).split(",")[0] if tag else fm.group(1)
                    inline = tag is not None and "inline" in tag.group(1).split(",")[1:]
                    if json_name != "-":
                        fields.append((json_name, fm.group(2), inline))
                elif em:
                    tag = JSON_TAG_RE.search(em.group(2))
                    json_name = tag.group(1).split(",")[0] if tag else ""
                    if json_name == "":
                        fields.append(("", em.group(1), True))
                    elif json_name != "-":
                        fields.append((json_name, em.group(1), False))
                elif body.strip():
                    # Fails only if the struct is reachable from a root (see Generator.fields).
                    fields.append((None, f"{path}:{i + 1}: {lines[i].strip()}", False))
                i += 1
            decls[name] = ("struct", fields)
        else:
            m = NAMED_RE.match(line)
            if m:
                decls[m.group(1)] = ("named", m.group(3))
        i += 1
    return decls


class Generator:
    def __init__(self, packages):
        self.packages = packages
        self.structs = {}  # "core/v1.Container" -> [(json, shape)]
        self.pending = []

    def qualify(self, pkg, ident):
        """("core", "metav1.Time") -> ("meta", "Time")."""
        if "." in ident:
            q, name = ident.split(".", 1)
            target = QUALIFIERS[pkg].get(q)
            if target is None:
                sys.exit(f"{pkg}: unknown package qualifier in {ident}")
            return target, name
        return pkg, ident

    def shape(self, pkg, go_type):
        if go_type in BUILTIN:
            return BUILTIN[go_type]
        if go_type.startswith("*"):
            return f"Shape::Pointer(&{self.shape(pkg, go_type[1:])})"
        if go_type.startswith("[]"):
            return f"Shape::Slice(&{self.shape(pkg, go_type[2:])})"
        if go_type.startswith("map["):
            value = go_type[go_type.index("]") + 1:]
            return f"Shape::Map(&{self.shape(pkg, value)})"
        target, name = self.qualify(pkg, go_type)
        special = SPECIAL.get(f"{target}.{name}")
        if special:
            return special
        decl = self.packages.get(target, {}).get(name)
        if decl is None:
            sys.exit(f"{pkg}: cannot resolve type {go_type}")
        if decl[0] == "named":
            return self.shape(target, decl[1])
        key = f"{GO_PACKAGE[target]}.{name}"
        if key not in self.structs:
            self.structs[key] = None
            self.pending.append((target, name, key))
        return f'Shape::Struct("{key}")'

    def fields(self, pkg, name):
        decl = self.packages[pkg][name]
        out = []
        for json_name, go_type, inline in decl[1]:
            if json_name is None:
                sys.exit(f"cannot read a field of {pkg}.{name}: {go_type}")
            if inline:
                target, embedded = self.qualify(pkg, go_type.lstrip("*"))
                out.extend(self.fields(target, embedded))
            else:
                out.append((json_name, self.shape(pkg, go_type)))
        return out

    def run(self, roots):
        for _, pkg, name in roots:
            self.shape(pkg, name)
        while self.pending:
            pkg, name, key = self.pending.pop()
            self.structs[key] = self.fields(pkg, name)


def const_name(key):
    """"core/v1.PodSpec" -> "CORE_V1_POD_SPEC"."""
    package, name = key.split(".")
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return f"{package.replace('/', '_')}_{words}".upper()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--core", required=True)
    ap.add_argument("--apps", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    packages = {
        "core": parse("core", args.core),
        "apps": parse("apps", args.apps),
        "meta": parse("meta", args.meta),
    }
    gen = Generator(packages)
    gen.run(ROOTS)
    keys = sorted(gen.structs)
    out = []
    out.append("// @generated by crates/apimachinery/tools/gen_semantic_types.py; do not edit.")
    out.append(f"// Source: {args.source}.")
    out.append("// Regenerate with the command in that script's header, then `cargo fmt --all`.")
    out.append("")
    out.append("//! The JSON shape of each Go struct reachable from the workload kinds, as")
    out.append("//! `apiequality.Semantic` and Go's JSON encoder see it.")
    out.append("")
    out.append("use super::shape::{Field, Shape, Zero};")
    out.append("")
    for root, pkg, name in ROOTS:
        key = f"{GO_PACKAGE[pkg]}.{name}"
        out.append(f"/// Go's `{key}`.")
        out.append(f'pub const {root}: Shape = Shape::Struct("{key}");')
    out.append("")
    out.append("/// The fields of the Go struct `go_type` (such as `core/v1.Container`), by JSON name;")
    out.append("/// embedded (`json:\",inline\"`) structs contribute their fields.")
    out.append("pub(super) fn fields(go_type: &str) -> Option<&'static [Field]> {")
    out.append("    Some(match go_type {")
    for key in keys:
        out.append(f'        "{key}" => {const_name(key)},')
    out.append("        _ => return None,")
    out.append("    })")
    out.append("}")
    for key in keys:
        out.append("")
        out.append(f"const {const_name(key)}: &[Field] = &[")
        for json_name, shape in gen.structs[key]:
            out.append(f'    Field {{ json: "{json_name}", shape: {shape} }},')
        out.append("];")
    print("\n".join(out))


if __name__ == "__main__":
    main()
