#!/usr/bin/env python3
"""Resident memory of `rkcm up --nodes 0` holding N pods, under several allocators side by side.

Usage:
  scripts/pod_memory.py BINARY [--pods 10000] [--variant NAME=ENV ...]

Each variant starts BINARY as `up --nodes 0` in a fresh data directory with ENV added to its
environment (`KEY=VALUE[,KEY=VALUE]`, or `-` for none), creates the pods through the API with 16
concurrent connections, waits until the process's RSS has been steady for 5 s (the in-process
controllers have seen every pod), and prints VmRSS before and after. Without --variant it runs
glibc's default, MALLOC_ARENA_MAX=2, and mimalloc and jemalloc through LD_PRELOAD when their
Debian libraries (libmimalloc2.0, libjemalloc2) are installed.

Only the Python standard library is used.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time

PORT = 16443
LIBS = "/usr/lib/x86_64-linux-gnu"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def connection(token):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", PORT, context=ctx, timeout=30)
    return conn, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def wait_ready(token, proc, deadline):
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("rkcm up exited")
        try:
            conn, headers = connection(token)
            conn.request("GET", "/version", headers=headers)
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("rkcm up did not become ready")


def create_pods(token, count, workers=16):
    errors = []

    def work(first):
        conn, headers = connection(token)
        for i in range(first, count, workers):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p-{i:06}", "labels": {"app": "memory", "shard": f"s{i % 16}"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            }
            conn.request("POST", "/api/v1/namespaces/default/pods", body=json.dumps(pod), headers=headers)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 201:
                errors.append(resp.status)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} creates failed, e.g. {errors[0]}")


def steady_rss(pid, deadline, window=5.0):
    samples = []
    while time.time() < deadline:
        samples.append((time.time(), rss_kib(pid)))
        recent = [r for t, r in samples if t >= samples[-1][0] - window]
        if samples[-1][0] - samples[0][0] >= window and max(recent) - min(recent) <= max(recent) // 100:
            return samples[-1][1]
        time.sleep(0.5)
    return samples[-1][1]


def run(binary, pods, name, env):
    data = tempfile.mkdtemp(prefix="rkcm-memory-")
    try:
        full_env = dict(os.environ, **env)
        proc = subprocess.Popen(
            [binary, "up", "--nodes", "0", "--port", str(PORT), "--data-dir", data],
            env=full_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.time() + 60
            kubeconfig = os.path.join(data, "kubeconfig")
            token = None
            while token is None and time.time() < deadline:
                if os.path.exists(kubeconfig):
                    with open(kubeconfig) as f:
                        found = re.search(r'"?token"?:\s*"?([^"\s,]+)', f.read())
                    token = found and found.group(1)
                time.sleep(0.1)
            if token is None:
                raise RuntimeError("no token in the kubeconfig")
            wait_ready(token, proc, deadline)
            idle = steady_rss(proc.pid, time.time() + 30)
            started = time.time()
            create_pods(token, pods)
            took = time.time() - started
            held = steady_rss(proc.pid, time.time() + 120)
            print(
                f"| {name} | {idle / 1024:.1f} MiB | {held / 1024:.1f} MiB | "
                f"{(held - idle) * 1024 / pods:,.0f} B | {pods / took:,.0f} pods/s |",
                flush=True,
            )
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        shutil.rmtree(data, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--variant", action="append", default=[])
    args = parser.parse_args()
    variants = []
    for v in args.variant:
        name, _, env = v.partition("=")
        pairs = [] if env in ("", "-") else [p.split("=", 1) for p in env.split(",")]
        variants.append((name, dict(pairs)))
    if not variants:
        variants = [("glibc", {}), ("glibc, MALLOC_ARENA_MAX=2", {"MALLOC_ARENA_MAX": "2"})]
        for name, lib in [("mimalloc (LD_PRELOAD)", "libmimalloc.so.2"), ("jemalloc (LD_PRELOAD)", "libjemalloc.so.2")]:
            if os.path.exists(os.path.join(LIBS, lib)):
                variants.append((name, {"LD_PRELOAD": os.path.join(LIBS, lib)}))
    print(f"| allocator | RSS idle | RSS with {args.pods:,} pods | per pod | creates |")
    print("|---|---|---|---|---|")
    for name, env in variants:
        run(args.binary, args.pods, name, env)


if __name__ == "__main__":
    sys.exit(main())
