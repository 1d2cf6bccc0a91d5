//! Server-side apply and `managedFields` tracking, driven with kube's client and raw requests.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{json, Value};

fn deployment(name: &str, replicas: i32, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]}}
        }
    })
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn managers(obj: &impl serde::Serialize) -> Vec<(String, String, String)> {
    let v = serde_json::to_value(obj).expect("object encodes");
    v.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (s("manager"), s("operation"), s("subresource"))
        })
        .collect()
}

fn entry<'a>(obj: &'a Value, manager: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|es| es.iter().find(|e| e["manager"] == manager))
        .unwrap_or_else(|| panic!("{manager} has an entry in {obj}"))
}

/// Sends a raw request with the server's credentials; status and JSON body.
async fn raw(client: &kube::Client, req: http::Request<Vec<u8>>) -> (u16, Value) {
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("request is sent");
    let status = resp.status().as_u16();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body is read")
        .to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn apply_creates_then_conflicts_with_the_creator_until_forced() {
    let server = rkcm_apiserver::testing::start().await;
    let client = server.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");

    // A create records its fields for the creator.
    let created = deployments
        .create(
            &PostParams {
                field_manager: Some("kubectl-client-side-apply".into()),
                ..PostParams::default()
            },
            &serde_json::from_value(deployment("web", 1, "nginx")).expect("deployment"),
        )
        .await
        .expect("create");
    assert_eq!(
        managers(&created),
        [(
            "kubectl-client-side-apply".into(),
            "Update".into(),
            String::new()
        )]
    );

    let err = deployments
        .patch(
            "web",
            &PatchParams::apply("mgr"),
            &Patch::Apply(deployment("web", 3, "nginx")),
        )
        .await
        .expect_err("the creator owns spec.replicas");
    let status = api_err(err);
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
    );
    let causes = status.details.expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".spec.replicas");

    let forced = deployments
        .patch(
            "web",
            &PatchParams::apply("mgr").force(),
            &Patch::Apply(deployment("web", 3, "nginx")),
        )
        .await
        .expect("a forced apply takes the field");
    assert_eq!(forced.spec.as_ref().and_then(|s| s.replicas), Some(3));
    let v = serde_json::to_value(&forced).expect("encodes");
    assert_eq!(entry(&v, "mgr")["operation"], "Apply");
    assert!(entry(&v, "kubectl-client-side-apply")["fieldsV1"]["f:spec"]
        .get("f:replicas")
        .is_none());
}

#[tokio::test]
async fn apply_of_a_missing_object_creates_it_and_reapplying_less_removes_fields() {
    let server = rkcm_apiserver::testing::start().await;
    let client = server.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = |data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "labels": {"team": "a"}}, "data": data})
    };
    let created = cms
        .patch(
            "cfg",
            &PatchParams::apply("tool"),
            &Patch::Apply(cm(json!({"a": "1", "b": "2"}))),
        )
        .await
        .expect("apply creates");
    assert!(created.metadata.uid.is_some());
    let v = serde_json::to_value(&created).expect("encodes");
    let e = entry(&v, "tool");
    assert_eq!(e["operation"], "Apply");
    assert_eq!(e["apiVersion"], "v1");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert!(e["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(e["fieldsV1"]["f:data"]["f:a"], json!({}));
    assert_eq!(e["fieldsV1"]["f:metadata"]["f:labels"]["f:team"], json!({}));

    // Another writer adds a key with an update; the applier drops one of its own.
    let mut other = cms.get("cfg").await.expect("get");
    other
        .data
        .get_or_insert_with(Default::default)
        .insert("c".into(), "3".into());
    cms.replace(
        "cfg",
        &PostParams {
            field_manager: Some("editor".into()),
            ..PostParams::default()
        },
        &other,
    )
    .await
    .expect("update");
    let after = cms
        .patch(
            "cfg",
            &PatchParams::apply("tool"),
            &Patch::Apply(cm(json!({"a": "1"}))),
        )
        .await
        .expect("apply less");
    let data = after.data.clone().unwrap_or_default();
    assert_eq!(data.keys().cloned().collect::<Vec<_>>(), ["a", "c"]);
    let v = serde_json::to_value(&after).expect("encodes");
    assert_eq!(
        entry(&v, "editor")["fieldsV1"],
        json!({"f:data": {"f:c": {}}})
    );
}

#[tokio::test]
async fn apply_needs_a_field_manager_and_accepts_yaml() {
    let server = rkcm_apiserver::testing::start().await;
    let client = server.client();
    let url = "/api/v1/namespaces/default/configmaps/y";
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: v\n".to_vec();
    let req = |query: &str| {
        http::Request::patch(format!("{url}{query}"))
            .header("content-type", "application/apply-patch+yaml")
            .body(yaml.clone())
            .expect("request")
    };
    let (code, body) = raw(&client, req("")).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    assert_eq!(body["details"]["causes"][0]["field"], "fieldManager");

    let (code, body) = raw(&client, req("?fieldManager=curl")).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["data"]["k"], "v");
    let (code, body) = raw(&client, req("?fieldManager=curl")).await;
    assert_eq!(code, 200, "{body}");

    // force is for applies only.
    let merge = http::Request::patch(format!("{url}?force=true"))
        .header("content-type", "application/merge-patch+json")
        .body(br#"{"data":{"k":"w"}}"#.to_vec())
        .expect("request");
    let (code, body) = raw(&client, merge).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "force");

    // The wrong version is refused.
    let bad = http::Request::patch(format!("{url}?fieldManager=curl"))
        .header("content-type", "application/apply-patch+yaml")
        .body(br#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"y"}}"#.to_vec())
        .expect("request");
    let (code, body) = raw(&client, bad).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"
    );
}

#[tokio::test]
async fn updates_and_patches_are_tracked_for_their_manager_and_status_apart() {
    let server = rkcm_apiserver::testing::start().await;
    let client = server.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .patch(
            "d",
            &PatchParams::apply("owner"),
            &Patch::Apply(deployment("d", 1, "nginx")),
        )
        .await
        .expect("apply creates");
    let patched = deployments
        .patch(
            "d",
            &PatchParams {
                field_manager: Some("labeler".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect("merge patch");
    let v = serde_json::to_value(&patched).expect("encodes");
    assert_eq!(entry(&v, "labeler")["operation"], "Update");
    assert_eq!(entry(&v, "labeler")["apiVersion"], "apps/v1");
    assert_eq!(
        entry(&v, "labeler")["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
    );

    let status = deployments
        .patch_status(
            "d",
            &PatchParams::apply("status-writer"),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d"}, "status": {"observedGeneration": 1}})),
        )
        .await
        .expect("status apply");
    assert_eq!(
        status.status.as_ref().and_then(|s| s.observed_generation),
        Some(1)
    );
    let v = serde_json::to_value(&status).expect("encodes");
    let e = entry(&v, "status-writer");
    assert_eq!(e["subresource"], "status");
    assert_eq!(e["fieldsV1"]["f:status"]["f:observedGeneration"], json!({}));
    // The spec is still the owner's; nobody lost it to the status write.
    assert_eq!(
        entry(&v, "owner")["fieldsV1"]["f:spec"]["f:replicas"],
        json!({})
    );

    // Clearing managedFields with an empty list stops tracking.
    let cleared = deployments
        .patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"managedFields": []}})),
        )
        .await
        .expect("clear");
    assert!(cleared.metadata.managed_fields.is_none());
}

#[tokio::test]
async fn several_conflicts_are_listed_by_manager() {
    let server = rkcm_apiserver::testing::start().await;
    let client = server.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams {
                field_manager: Some("creator".into()),
                ..PostParams::default()
            },
            &serde_json::from_value(deployment("m", 1, "nginx")).expect("deployment"),
        )
        .await
        .expect("create");
    let status = api_err(
        deployments
            .patch(
                "m",
                &PatchParams::apply("mgr"),
                &Patch::Apply(deployment("m", 2, "nginx:2")),
            )
            .await
            .expect_err("two fields conflict"),
    );
    assert_eq!(status.code, 409);
    assert_eq!(
        status.message,
        "Apply failed with 2 conflicts: conflicts with \"creator\" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name=\"c\"].image"
    );
    let fields: Vec<String> = status
        .details
        .expect("details")
        .causes
        .into_iter()
        .map(|c| c.field)
        .collect();
    assert_eq!(
        fields,
        [
            ".spec.replicas",
            ".spec.template.spec.containers[name=\"c\"].image"
        ]
    );
    // Nothing was written.
    let live = deployments.get("m").await.expect("get");
    assert_eq!(live.spec.and_then(|s| s.replicas), Some(1));
}

#[tokio::test]
async fn services_and_namespaces_apply_and_keep_what_the_server_allocated() {
    use k8s_openapi::api::core::v1::{Namespace, Service};
    let server = rkcm_apiserver::testing::start().await;
    let client = server.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = namespaces
        .patch(
            "team",
            &PatchParams::apply("tool"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "team", "labels": {"env": "dev"}}})),
        )
        .await
        .expect("namespace applied");
    assert_eq!(ns.status.and_then(|s| s.phase).as_deref(), Some("Active"));

    let services: Api<Service> = Api::namespaced(client.clone(), "team");
    let svc = |ports: Value| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": ports}})
    };
    let first = services
        .patch(
            "web",
            &PatchParams::apply("tool"),
            &Patch::Apply(svc(
                json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]),
            )),
        )
        .await
        .expect("service applied");
    let ip = first.spec.as_ref().and_then(|s| s.cluster_ip.clone());
    assert!(ip
        .as_deref()
        .is_some_and(|ip| !ip.is_empty() && ip != "None"));
    let second = services
        .patch(
            "web",
            &PatchParams::apply("tool"),
            &Patch::Apply(svc(json!([{"name": "http", "port": 80}]))),
        )
        .await
        .expect("service re-applied");
    let spec = second.spec.expect("spec");
    assert_eq!(spec.cluster_ip, ip, "the allocated cluster IP is kept");
    let ports: Vec<i32> = spec
        .ports
        .unwrap_or_default()
        .iter()
        .map(|p| p.port)
        .collect();
    assert_eq!(ports, [80], "the port no longer applied is removed");
}
