//! End to end: `rkcm up` driven by the real kubectl through ServiceCIDRs and IPAddresses, in one
//! cluster: Services' cluster IPs are IPAddress objects, a second ServiceCIDR adds range, and a
//! ServiceCIDR that still holds a Service's address stays Terminating until the Service goes.

mod common;

use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

/// `status,reason` of the ServiceCIDR's Ready condition, and its finalizers.
fn ready(cluster: &Cluster, name: &str) -> (String, String) {
    let cond = cluster.jsonpath(
        &["get", "servicecidr", name],
        r#"{.status.conditions[?(@.type=="Ready")].status},{.status.conditions[?(@.type=="Ready")].reason}"#,
    );
    let finalizers = cluster.jsonpath(&["get", "servicecidr", name], "{.metadata.finalizers}");
    (cond, finalizers)
}

#[test]
fn service_cidrs_and_ip_addresses() {
    let cluster = Cluster::start(&["--nodes", "0"]);

    // The default ServiceCIDR is Ready, with the controller's finalizer.
    cluster.eventually(
        "the default ServiceCIDR Ready with its finalizer",
        MINUTE,
        || {
            let (cond, finalizers) = ready(&cluster, "kubernetes");
            (cond == "True," && finalizers.contains("networking.k8s.io/service-cidr-finalizer"))
                .then_some(())
        },
    );
    let table = cluster.kubectl(&["get", "servicecidrs"]);
    assert!(
        table.contains("kubernetes") && table.contains("10.96.0.0/12"),
        "{table}"
    );

    // A Service's cluster IP is an IPAddress naming it.
    cluster.kubectl(&["create", "service", "clusterip", "web", "--tcp=80:80"]);
    let ip = cluster.jsonpath(&["get", "service", "web"], "{.spec.clusterIP}");
    assert!(ip.starts_with("10."), "{ip}");
    let ips = cluster.kubectl(&["get", "ipaddresses"]);
    let row = ips
        .lines()
        .find(|l| l.split_whitespace().next() == Some(ip.as_str()))
        .unwrap_or_else(|| panic!("{ip} listed:\n{ips}"));
    assert!(row.contains("services/default/web"), "{row}");
    assert_eq!(
        cluster.jsonpath(
            &["get", "ipaddress", &ip],
            "{.metadata.labels.ipaddress\\.kubernetes\\.io/managed-by}"
        ),
        "ipallocator.k8s.io"
    );

    // An address outside every ServiceCIDR is refused; a second ServiceCIDR gets Ready and adds
    // its range.
    let refused = cluster.kubectl_output(&[
        "create",
        "service",
        "clusterip",
        "held",
        "--tcp=80:80",
        "--clusterip=10.200.0.10",
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("failed to allocate IP 10.200.0.10: the provided network does not match the current range"),
        "{stderr}"
    );
    apply(
        &cluster,
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata:\n  name: extra\nspec:\n  cidrs: [10.200.0.0/24]\n",
    );
    cluster.eventually("extra Ready", MINUTE, || {
        (ready(&cluster, "extra").0 == "True,").then_some(())
    });
    cluster.kubectl(&[
        "create",
        "service",
        "clusterip",
        "held",
        "--tcp=80:80",
        "--clusterip=10.200.0.10",
    ]);
    assert!(cluster
        .kubectl(&["get", "ipaddress", "10.200.0.10"])
        .contains("services/default/held"));

    // Deleting the ServiceCIDR that holds the Service's address leaves it Terminating.
    cluster.kubectl(&["delete", "servicecidr", "extra", "--wait=false"]);
    cluster.eventually("extra Terminating", MINUTE, || {
        (ready(&cluster, "extra").0 == "False,Terminating").then_some(())
    });
    std::thread::sleep(Duration::from_secs(11));
    let (_, finalizers) = ready(&cluster, "extra");
    assert!(
        finalizers.contains("networking.k8s.io/service-cidr-finalizer"),
        "still held past the grace period: {finalizers}"
    );
    // It takes no new addresses meanwhile.
    let refused = cluster.kubectl_output(&[
        "create",
        "service",
        "clusterip",
        "late",
        "--tcp=80:80",
        "--clusterip=10.200.0.11",
    ]);
    assert!(!refused.status.success());

    // Once the Service goes, so do its IPAddress and, after the grace period, the ServiceCIDR.
    cluster.kubectl(&["delete", "service", "held"]);
    assert!(!cluster
        .kubectl_output(&["get", "ipaddress", "10.200.0.10"])
        .status
        .success());
    cluster.kubectl(&["wait", "--for=delete", "servicecidr/extra", "--timeout=60s"]);
}
