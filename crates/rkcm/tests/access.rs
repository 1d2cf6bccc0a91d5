//! End to end: who may do what on the API server of `rkcm up` — RBAC with kube's bootstrap
//! roles, `kubectl auth can-i`, impersonation with `--as`, escalation prevention and
//! service-account tokens — driven by the real kubectl, in one cluster.

mod common;

use std::path::Path;
use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("file written");
    path.to_str().expect("utf-8 path").to_string()
}

/// kubectl `args`: whether it succeeded, its stdout and its stderr.
fn run(cluster: &Cluster, args: &[&str]) -> (bool, String, String) {
    let out = cluster.kubectl_output(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kubectl auth can-i` with `args`: kubectl's yes or no.
fn can_i(cluster: &Cluster, args: &[&str]) -> String {
    let mut all = vec!["auth", "can-i"];
    all.extend(args);
    let (_, out, err) = run(cluster, &all);
    let answer = out.trim().to_string();
    assert!(
        answer == "yes" || answer == "no",
        "can-i {args:?}: {out} {err}"
    );
    answer
}

const JANE: &[&str] = &["--token", "jane-token"];

fn as_jane<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all: Vec<&str> = JANE.to_vec();
    all.extend(args);
    all
}

#[test]
fn rbac_can_i_impersonation_and_escalation() {
    let files = tempfile::tempdir().expect("temp dir");
    let tokens = write(files.path(), "tokens.csv", "jane-token,jane,1001\n");
    let cluster = Cluster::start(&["--nodes", "1", "--token-auth-file", &tokens]);

    // kube's bootstrap roles are there.
    let roles = cluster.kubectl(&["get", "clusterroles", "-o", "name"]);
    for want in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:basic-user",
        "system:controller:job-controller",
        "system:controller:replicaset-controller",
    ] {
        assert!(
            roles.contains(&format!("clusterrole.rbac.authorization.k8s.io/{want}\n")),
            "{want} missing from:\n{roles}"
        );
    }

    // jane is authenticated but may not list pods, with kube's message.
    let (ok, _, err) = run(&cluster, &as_jane(&["get", "pods"]));
    assert!(!ok);
    assert!(
        err.contains("pods is forbidden: User \"jane\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""),
        "{err}"
    );
    assert_eq!(can_i(&cluster, &as_jane(&["list", "pods"])), "no");
    assert_eq!(can_i(&cluster, &["list", "pods"]), "yes");
    assert_eq!(can_i(&cluster, &["get", "pods", "--as=jane"]), "no");

    // A RoleBinding to `view` (filled by the aggregation controller) lets her read.
    cluster.kubectl(&[
        "create",
        "rolebinding",
        "jane-view",
        "--clusterrole=view",
        "--user=jane",
    ]);
    cluster.eventually("jane lists pods", MINUTE, || {
        run(&cluster, &as_jane(&["get", "pods"])).0.then_some(())
    });
    assert_eq!(can_i(&cluster, &as_jane(&["list", "pods"])), "yes");
    assert_eq!(can_i(&cluster, &as_jane(&["create", "pods"])), "no");
    assert_eq!(
        can_i(&cluster, &as_jane(&["list", "pods", "-n", "kube-system"])),
        "no"
    );
    let (_, list, err) = run(&cluster, &as_jane(&["auth", "can-i", "--list"]));
    assert!(
        list.contains("pods") && list.contains("selfsubjectaccessreviews"),
        "{list}{err}"
    );

    // Impersonation: the admin acts as jane; jane may not act as anyone.
    assert_eq!(can_i(&cluster, &["get", "pods", "--as=jane"]), "yes");
    assert_eq!(can_i(&cluster, &["delete", "pods", "--as=jane"]), "no");
    let (ok, _, err) = run(&cluster, &["get", "secrets", "--as=jane"]);
    assert!(!ok);
    assert!(
        err.contains("User \"jane\" cannot list resource \"secrets\""),
        "{err}"
    );
    let who = cluster.kubectl(&[
        "auth",
        "whoami",
        "--as=jane",
        "--as-group=devs",
        "-o",
        "jsonpath={.status.userInfo.groups}",
    ]);
    assert_eq!(who, "[\"devs\",\"system:authenticated\"]");
    let (ok, _, err) = run(&cluster, &as_jane(&["get", "pods", "--as=bob"]));
    assert!(!ok);
    assert!(
        err.contains("users \"bob\" is forbidden: User \"jane\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"),
        "{err}"
    );

    // Escalation: with `edit` she may not touch roles at all; with `admin` she may write roles
    // granting what she holds, and nothing more.
    cluster.kubectl(&[
        "create",
        "rolebinding",
        "jane-edit",
        "--clusterrole=edit",
        "--user=jane",
    ]);
    cluster.eventually("jane may create deployments", MINUTE, || {
        (can_i(&cluster, &as_jane(&["create", "deployments"])) == "yes").then_some(())
    });
    let (ok, _, err) = run(
        &cluster,
        &as_jane(&[
            "create",
            "role",
            "secrets-all",
            "--verb=*",
            "--resource=secrets",
        ]),
    );
    assert!(!ok);
    assert!(err.contains("cannot create resource \"roles\""), "{err}");
    cluster.kubectl(&[
        "create",
        "rolebinding",
        "jane-admin",
        "--clusterrole=admin",
        "--user=jane",
    ]);
    cluster.eventually("jane may create roles", MINUTE, || {
        (can_i(&cluster, &as_jane(&["create", "roles"])) == "yes").then_some(())
    });
    let (ok, _, err) = run(
        &cluster,
        &as_jane(&[
            "create",
            "role",
            "secrets-all",
            "--verb=*",
            "--resource=secrets",
        ]),
    );
    assert!(!ok);
    assert!(
        err.contains("roles.rbac.authorization.k8s.io \"secrets-all\" is forbidden: user \"jane\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:"),
        "{err}"
    );
    assert!(
        err.contains("{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"*\"]}"),
        "{err}"
    );
    cluster.kubectl(&as_jane(&[
        "create",
        "role",
        "secrets-read",
        "--verb=get,list",
        "--resource=secrets",
    ]));

    // A service account's token is authorized by a RoleBinding to the account.
    cluster.kubectl(&["create", "serviceaccount", "bot"]);
    let token = cluster
        .kubectl(&["create", "token", "bot"])
        .trim()
        .to_string();
    let bot = ["--token", token.as_str()];
    let with_bot = |args: &[&'static str]| -> Vec<String> {
        bot.iter()
            .map(|s| s.to_string())
            .chain(args.iter().map(|s| s.to_string()))
            .collect()
    };
    let args = with_bot(&["get", "configmaps"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, _, err) = run(&cluster, &args);
    assert!(!ok);
    assert!(
        err.contains(
            "User \"system:serviceaccount:default:bot\" cannot list resource \"configmaps\""
        ),
        "{err}"
    );
    cluster.kubectl(&[
        "create",
        "rolebinding",
        "bot-view",
        "--clusterrole=view",
        "--serviceaccount=default:bot",
    ]);
    cluster.eventually("the bot lists configmaps", MINUTE, || {
        run(&cluster, &args).0.then_some(())
    });
}
