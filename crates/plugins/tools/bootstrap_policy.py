#!/usr/bin/env python3
"""Converts kube's bootstrap RBAC policy to the JSON the API server embeds.

Usage: bootstrap_policy.py KUBE_TESTDATA_DIR > crates/plugins/src/auth/bootstrap_policy/policy.json

KUBE_TESTDATA_DIR is `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata` of a
kubernetes/kubernetes checkout (the release the server follows). The files read, in the order
`pkg/registry/rbac/rest/storage_rbac.go` reconciles them: cluster-roles.yaml and
controller-roles.yaml, cluster-role-bindings.yaml and controller-role-bindings.yaml,
namespace-roles.yaml, namespace-role-bindings.yaml. Needs PyYAML; run once per kube release.
"""

import json
import os
import sys

import yaml

FILES = {
    "clusterRoles": ["cluster-roles.yaml", "controller-roles.yaml"],
    "clusterRoleBindings": ["cluster-role-bindings.yaml", "controller-role-bindings.yaml"],
    "roles": ["namespace-roles.yaml"],
    "roleBindings": ["namespace-role-bindings.yaml"],
}


def clean(obj):
    """Drops what the testdata prints but an object to create does not carry."""
    obj["metadata"].pop("creationTimestamp", None)
    if obj.get("rules", []) is None:
        obj["rules"] = []
    return obj


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = {}
    for key, names in FILES.items():
        out[key] = []
        for name in names:
            with open(os.path.join(sys.argv[1], name)) as f:
                doc = yaml.safe_load(f)
            out[key].extend(clean(o) for o in doc["items"] or [])
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
