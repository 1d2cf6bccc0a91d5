//! CustomResourceDefinitions and the custom resources they define: status kept by the naming and
//! establishing steps, discovery, OpenAPI, schema pruning, defaulting and validation,
//! subresources, tables, selectors and deletion of a CRD with its objects.

use std::time::{Duration, Instant};

use rkcm_apiserver::testing::TestServer;
use serde_json::{json, Value};

struct Answer {
    status: u16,
    body: Value,
    warnings: Vec<String>,
}

async fn call(
    server: &TestServer,
    method: &str,
    path: &str,
    content_type: &str,
    accept: &str,
    body: Option<Value>,
) -> Answer {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", content_type)
        .header("Accept", accept)
        .body(
            body.map(|b| serde_json::to_vec(&b).expect("json"))
                .unwrap_or_default(),
        )
        .expect("request");
    let resp = server
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .expect("request sent");
    let status = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    Answer {
        status,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        warnings,
    }
}

async fn json(server: &TestServer, method: &str, path: &str, body: Option<Value>) -> Answer {
    call(
        server,
        method,
        path,
        "application/json",
        "application/json",
        body,
    )
    .await
}

async fn merge(server: &TestServer, path: &str, body: Value) -> Answer {
    call(
        server,
        "PATCH",
        path,
        "application/merge-patch+json",
        "application/json",
        Some(body),
    )
    .await
}

/// Polls `check` until it holds, or fails naming `what`.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn widgets_crd(group: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "shortNames": ["wd"], "categories": ["all"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                     "spec": {"type": "object", "properties": {
                         "size": {"type": "integer", "minimum": 1},
                         "color": {"type": "string", "default": "blue"},
                         "replicas": {"type": "integer"}}},
                     "status": {"type": "object", "properties": {
                         "replicas": {"type": "integer"},
                         "selector": {"type": "string"}}}}}},
                 "subresources": {"status": {}, "scale": {
                     "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                     "labelSelectorPath": ".status.selector"}},
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                 "selectableFields": [{"jsonPath": ".spec.color"}]},
                {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                 "schema": {"openAPIV3Schema": {"type": "object",
                     "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    })
}

async fn established(server: &TestServer, name: &str) -> bool {
    let a = json(server, "GET", &format!("{CRDS}/{name}"), None).await;
    a.body["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
}

#[tokio::test]
async fn a_crd_is_established_and_its_custom_resources_are_served() {
    let server = rkcm_apiserver::testing::start().await;
    let group = "serve.example.com";
    let created = json(&server, "POST", CRDS, Some(widgets_crd(group))).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(created.body["spec"]["names"]["listKind"], "WidgetList");
    let name = format!("widgets.{group}");
    eventually("the CRD is established", || established(&server, &name)).await;
    let crd = json(&server, "GET", &format!("{CRDS}/{name}"), None).await;
    assert_eq!(crd.body["status"]["acceptedNames"]["kind"], "Widget");
    assert_eq!(
        crd.body["status"]["acceptedNames"]["shortNames"],
        json!(["wd"])
    );

    // CRD table: the default columns.
    let table = call(
        &server,
        "GET",
        CRDS,
        "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        None,
    )
    .await;
    let cols: Vec<&str> = table.body["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(cols, ["Name", "Created At"]);

    // Discovery, legacy and aggregated.
    let apis = json(&server, "GET", "/apis", None).await;
    let group_entry = apis.body["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["name"] == group)
        .cloned()
        .expect("group listed");
    assert_eq!(group_entry["preferredVersion"]["version"], "v1");
    let v1 = json(&server, "GET", &format!("/apis/{group}/v1"), None).await;
    let resources = v1.body["resources"].as_array().expect("resources");
    let widgets = resources
        .iter()
        .find(|r| r["name"] == "widgets")
        .expect("widgets");
    assert_eq!(widgets["shortNames"], json!(["wd"]));
    assert_eq!(widgets["categories"], json!(["all"]));
    assert_eq!(widgets["namespaced"], true);
    assert!(resources
        .iter()
        .any(|r| r["name"] == "widgets/scale" && r["kind"] == "Scale"));
    assert!(resources.iter().any(|r| r["name"] == "widgets/status"));
    let aggregated = call(
        &server,
        "GET",
        "/apis",
        "application/json",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        None,
    )
    .await;
    assert!(aggregated.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .any(|g| g["metadata"]["name"] == group));

    // OpenAPI v3: the index lists the group version, whose document has the kind.
    let index = json(&server, "GET", "/openapi/v3", None).await;
    let url = index.body["paths"][format!("apis/{group}/v1")]["serverRelativeURL"]
        .as_str()
        .expect("listed in the index")
        .to_string();
    let doc = json(&server, "GET", &url, None).await;
    assert_eq!(doc.status, 200);
    let schema = &doc.body["components"]["schemas"]["com.example.serve.v1.Widget"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    assert!(
        doc.body["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
            .is_object()
    );
    let patch_params = doc.body["paths"]
        [format!("/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}")]["patch"]
        ["parameters"]
        .as_array()
        .expect("patch operation")
        .clone();
    assert!(patch_params.iter().any(|p| p["name"] == "fieldValidation"));

    // OpenAPI v2: the same definition and a PATCH operation taking fieldValidation.
    let v2 = json(&server, "GET", "/openapi/v2", None).await;
    assert_eq!(
        v2.body["definitions"]["com.example.serve.v1.Widget"]["x-kubernetes-group-version-kind"][0]
            ["kind"],
        "Widget"
    );
    let v2_patch = &v2.body["paths"]
        [format!("/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}")]["patch"];
    assert!(
        v2_patch["parameters"]
            .as_array()
            .expect("v2 patch operation")
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["type"] == "string"),
        "{v2_patch}"
    );
    assert!(
        v2_patch["parameters"]
            .as_array()
            .expect("v2 patch operation")
            .iter()
            .any(|p| p["in"] == "body"),
        "{v2_patch}"
    );

    // Create: unknown fields pruned with a warning, defaults applied.
    let widgets = "/apis/serve.example.com/v1/namespaces/default/widgets";
    let w = json(
        &server,
        "POST",
        widgets,
        Some(json!({
            "apiVersion": format!("{group}/v1"), "kind": "Widget",
            "metadata": {"name": "w1", "labels": {"tier": "front"}},
            "spec": {"size": 2, "extra": true, "replicas": 1},
            "status": {"replicas": 9}
        })),
    )
    .await;
    assert_eq!(w.status, 201, "{}", w.body);
    assert!(
        w.warnings
            .iter()
            .any(|x| x.contains("unknown field") && x.contains("spec.extra")),
        "{:?}",
        w.warnings
    );
    assert_eq!(
        w.body["spec"],
        json!({"size": 2, "color": "blue", "replicas": 1})
    );
    assert_eq!(w.body["metadata"]["generation"], 1);
    assert_eq!(
        w.body.get("status"),
        None,
        "a create drops the status: it is set through /status only"
    );

    // Strict field validation refuses unknown fields.
    let strict = json(
        &server,
        "POST",
        &format!("{widgets}?fieldValidation=Strict"),
        Some(json!({
            "apiVersion": format!("{group}/v1"), "kind": "Widget",
            "metadata": {"name": "w2"}, "spec": {"size": 2, "extra": true}
        })),
    )
    .await;
    assert_eq!(strict.status, 400, "{}", strict.body);
    assert!(strict.body["message"]
        .as_str()
        .unwrap_or("")
        .contains("unknown field \"spec.extra\""));

    // Duplicate keys are refused under Strict too.
    let duplicate = call(
        &server,
        "POST",
        &format!("{widgets}?fieldValidation=Strict"),
        "application/json",
        "application/json",
        None,
    )
    .await;
    assert_eq!(duplicate.status, 400, "an empty body is refused");
    let req = http::Request::post(format!("{widgets}?fieldValidation=Strict"))
        .header("Content-Type", "application/json")
        .body(format!(r#"{{"apiVersion":"{group}/v1","kind":"Widget","metadata":{{"name":"w2"}},"spec":{{"size":2,"size":3}}}}"#).into_bytes())
        .expect("request");
    let resp = server
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .expect("sent");
    assert_eq!(resp.status().as_u16(), 400);
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    assert!(
        String::from_utf8_lossy(&body).contains(r#"duplicate field \"spec.size\""#),
        "{}",
        String::from_utf8_lossy(&body)
    );

    // Invalid objects: 422 naming the field.
    let invalid = json(
        &server,
        "POST",
        widgets,
        Some(json!({
            "apiVersion": format!("{group}/v1"), "kind": "Widget",
            "metadata": {"name": "w3"}, "spec": {"size": 0}
        })),
    )
    .await;
    assert_eq!(invalid.status, 422, "{}", invalid.body);
    assert_eq!(invalid.body["reason"], "Invalid");
    assert_eq!(invalid.body["details"]["causes"][0]["field"], "spec.size");
    let wrong_type = json(
        &server,
        "POST",
        widgets,
        Some(json!({
            "apiVersion": format!("{group}/v1"), "kind": "Widget",
            "metadata": {"name": "w3"}, "spec": {"size": "big"}
        })),
    )
    .await;
    assert_eq!(wrong_type.status, 422, "{}", wrong_type.body);
    assert_eq!(
        wrong_type.body["details"]["causes"][0]["reason"],
        "FieldValueTypeInvalid"
    );

    // A second object in another color, and the v1beta1 version (no schema of its own).
    let other = json(
        &server,
        "POST",
        widgets,
        Some(json!({
            "apiVersion": format!("{group}/v1"), "kind": "Widget",
            "metadata": {"name": "w4"}, "spec": {"size": 5, "color": "red"}
        })),
    )
    .await;
    assert_eq!(other.status, 201, "{}", other.body);

    // Selectors: labels, metadata.name, selectable fields; unknown fields refused.
    let names = |a: &Answer| -> Vec<String> {
        a.body["items"]
            .as_array()
            .map(|i| {
                i.iter()
                    .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let by_color = json(
        &server,
        "GET",
        &format!("{widgets}?fieldSelector=spec.color%3Dred"),
        None,
    )
    .await;
    assert_eq!(names(&by_color), ["w4"], "{}", by_color.body);
    let by_name = json(
        &server,
        "GET",
        &format!("{widgets}?fieldSelector=metadata.name%3Dw1"),
        None,
    )
    .await;
    assert_eq!(names(&by_name), ["w1"]);
    let by_label = json(
        &server,
        "GET",
        &format!("{widgets}?labelSelector=tier%3Dfront"),
        None,
    )
    .await;
    assert_eq!(names(&by_label), ["w1"]);
    let bad_field = json(
        &server,
        "GET",
        &format!("{widgets}?fieldSelector=spec.size%3D2"),
        None,
    )
    .await;
    assert_eq!(bad_field.status, 400, "{}", bad_field.body);

    // Table with the printer columns.
    let table = call(
        &server,
        "GET",
        widgets,
        "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        None,
    )
    .await;
    let cols: Vec<&str> = table.body["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(cols, ["Name", "Size", "Age"]);
    assert_eq!(table.body["rows"][0]["cells"][1], 2);
    assert_eq!(
        table.body["rows"][0]["object"]["kind"],
        "PartialObjectMetadata"
    );

    // Patches: merge and JSON patch apply; strategic merge is refused as kube refuses it.
    let item = format!("{widgets}/w1");
    let merged = merge(&server, &item, json!({"spec": {"size": 3}})).await;
    assert_eq!(merged.status, 200, "{}", merged.body);
    assert_eq!(merged.body["spec"]["size"], 3);
    assert_eq!(merged.body["metadata"]["generation"], 2);
    let json_patch = call(
        &server,
        "PATCH",
        &item,
        "application/json-patch+json",
        "application/json",
        Some(json!([{"op": "replace", "path": "/spec/color", "value": "green"}])),
    )
    .await;
    assert_eq!(json_patch.status, 200, "{}", json_patch.body);
    assert_eq!(json_patch.body["spec"]["color"], "green");
    let smp = call(
        &server,
        "PATCH",
        &item,
        "application/strategic-merge-patch+json",
        "application/json",
        Some(json!({"spec": {"size": 4}})),
    )
    .await;
    assert_eq!(smp.status, 415, "{}", smp.body);
    let bad_update = merge(&server, &item, json!({"spec": {"size": -1}})).await;
    assert_eq!(bad_update.status, 422, "{}", bad_update.body);

    // Status subresource: status writes through /status; the spec is kept.
    let status = merge(
        &server,
        &format!("{item}/status"),
        json!({"spec": {"size": 100}, "status": {"replicas": 1, "selector": "tier=front"}}),
    )
    .await;
    assert_eq!(status.status, 200, "{}", status.body);
    assert_eq!(status.body["status"]["replicas"], 1);
    assert_eq!(status.body["spec"]["size"], 3);
    assert_eq!(
        status.body["metadata"]["generation"], 3,
        "status writes keep the generation"
    );

    // Scale subresource.
    let scale = json(&server, "GET", &format!("{item}/scale"), None).await;
    assert_eq!(scale.status, 200, "{}", scale.body);
    assert_eq!(scale.body["kind"], "Scale");
    assert_eq!(scale.body["spec"]["replicas"], 1);
    assert_eq!(scale.body["status"]["selector"], "tier=front");
    let scaled = merge(
        &server,
        &format!("{item}/scale"),
        json!({"spec": {"replicas": 4}}),
    )
    .await;
    assert_eq!(scaled.status, 200, "{}", scaled.body);
    let after = json(&server, "GET", &item, None).await;
    assert_eq!(after.body["spec"]["replicas"], 4);

    // Another served version of the same objects.
    let beta = json(
        &server,
        "GET",
        &format!("/apis/{group}/v1beta1/namespaces/default/widgets"),
        None,
    )
    .await;
    assert_eq!(beta.status, 200, "{}", beta.body);
    assert_eq!(names(&beta).len(), 2);
    assert!(
        beta.warnings
            .iter()
            .any(|w| w.contains(&format!("{group}/v1beta1 Widget is deprecated"))),
        "{:?}",
        beta.warnings
    );
    let beta_item = json(
        &server,
        "GET",
        &format!("/apis/{group}/v1beta1/namespaces/default/widgets/w1"),
        None,
    )
    .await;
    assert_eq!(
        beta_item.body["apiVersion"],
        format!("{group}/v1beta1"),
        "None conversion rewrites apiVersion"
    );
    let beta_created = json(&server, "POST", &format!("/apis/{group}/v1beta1/namespaces/default/widgets"), Some(json!({
        "apiVersion": format!("{group}/v1beta1"), "kind": "Widget", "metadata": {"name": "w5"}, "spec": {"size": 1}
    }))).await;
    assert_eq!(beta_created.status, 201, "{}", beta_created.body);
    assert_eq!(beta_created.body["apiVersion"], format!("{group}/v1beta1"));
    let stored = json(&server, "GET", &format!("{widgets}/w5"), None).await;
    assert_eq!(stored.body["apiVersion"], format!("{group}/v1"));

    // Deleting the CRD deletes its objects, then the CRD, and the kind leaves discovery.
    let deleted = json(&server, "DELETE", &format!("{CRDS}/{name}"), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    eventually("the CRD and its objects are gone", || async {
        json(&server, "GET", &format!("{CRDS}/{name}"), None)
            .await
            .status
            == 404
    })
    .await;
    let gone = json(&server, "GET", &format!("/apis/{group}/v1"), None).await;
    assert_eq!(gone.status, 404);
    let index = json(&server, "GET", "/openapi/v3", None).await;
    assert!(index.body["paths"]
        .get(format!("apis/{group}/v1"))
        .is_none());
    let listed = json(&server, "GET", "/apis", None).await;
    assert!(!listed.body["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .any(|g| g["name"] == group));
    let recreated = json(&server, "POST", CRDS, Some(widgets_crd(group))).await;
    assert_eq!(recreated.status, 201);
    eventually("the CRD is established again", || {
        established(&server, &name)
    })
    .await;
    let empty = json(&server, "GET", widgets, None).await;
    assert_eq!(
        names(&empty),
        Vec::<String>::new(),
        "the old objects were deleted"
    );
    server.stop().await;
}

#[tokio::test]
async fn invalid_crds_are_refused_with_kubes_causes_and_name_conflicts_are_reported() {
    let server = rkcm_apiserver::testing::start().await;
    let mut bad = widgets_crd("invalid.example.com");
    bad["metadata"]["name"] = json!("gadgets.invalid.example.com");
    bad["spec"]["versions"][0]["storage"] = json!(false);
    let refused = json(&server, "POST", CRDS, Some(bad)).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    let fields: Vec<&str> = refused.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert!(fields.contains(&"metadata.name"), "{fields:?}");
    assert!(fields.contains(&"spec.versions"), "{fields:?}");

    // A cluster-scoped CRD whose short name another CRD of the group has taken.
    let group = "conflict.example.com";
    let first = json(&server, "POST", CRDS, Some(widgets_crd(group))).await;
    assert_eq!(first.status, 201);
    let first_name = format!("widgets.{group}");
    eventually("the first CRD is established", || {
        established(&server, &first_name)
    })
    .await;
    let mut second = widgets_crd(group);
    second["metadata"]["name"] = json!(format!("gizmos.{group}"));
    second["spec"]["scope"] = json!("Cluster");
    second["spec"]["names"] =
        json!({"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "shortNames": ["wd"]});
    let second = json(&server, "POST", CRDS, Some(second)).await;
    assert_eq!(second.status, 201, "{}", second.body);
    eventually("the conflict is reported", || async {
        let a = json(&server, "GET", &format!("{CRDS}/gizmos.{group}"), None).await;
        a.body["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter().any(|c| {
                c["type"] == "NamesAccepted"
                    && c["status"] == "False"
                    && c["reason"] == "ShortNamesConflict"
            })
        })
    })
    .await;
    assert!(!established(&server, &format!("gizmos.{group}")).await);
    let not_served = json(&server, "GET", &format!("/apis/{group}/v1/gizmos"), None).await;
    assert_eq!(not_served.status, 404);

    // Fixing the names establishes it; cluster-scoped objects are served.
    let fixed = merge(
        &server,
        &format!("{CRDS}/gizmos.{group}"),
        json!({"spec": {"names": {"shortNames": ["gz"]}}}),
    )
    .await;
    assert_eq!(fixed.status, 200, "{}", fixed.body);
    let second_name = format!("gizmos.{group}");
    eventually("the second CRD is established", || {
        established(&server, &second_name)
    })
    .await;
    let g = json(&server, "POST", &format!("/apis/{group}/v1/gizmos"), Some(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Gizmo", "metadata": {"name": "g1"}, "spec": {"size": 1}
    }))).await;
    assert_eq!(g.status, 201, "{}", g.body);
    assert!(g.body["metadata"].get("namespace").is_none());
    server.stop().await;
}

async fn apply(server: &TestServer, path: &str, manager: &str, force: bool, body: &str) -> Answer {
    let req = http::Request::builder()
        .method("PATCH")
        .uri(format!("{path}?fieldManager={manager}&force={force}"))
        .header("Content-Type", "application/apply-patch+yaml")
        .header("Accept", "application/json")
        .body(body.as_bytes().to_vec())
        .expect("request");
    let resp = server
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .expect("request sent");
    let status = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    Answer {
        status,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        warnings: Vec::new(),
    }
}

/// kube's `TestApplyCRDStructuralSchema` (`test/integration/apiserver/apply/apply_crd_test.go`):
/// the CRD's schema types the apply (finalizers a set, `ports` a map list keyed by
/// `containerPort` and `protocol`, the rest of `spec` preserved and merged untyped).
#[tokio::test]
async fn apply_to_a_custom_resource_is_typed_by_its_crd_schema() {
    let server = rkcm_apiserver::testing::start().await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "noxus.mygroup.example.com"},
        "spec": {"group": "mygroup.example.com", "scope": "Cluster",
            "names": {"plural": "noxus", "singular": "nonenglishnoxu", "kind": "WishIHadChosenNoxu"},
            "versions": [{"name": "v1beta1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                        "cronSpec": {"type": "string"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                            "items": {"type": "object", "required": ["containerPort", "protocol"],
                                "properties": {"containerPort": {"type": "integer", "format": "int32"},
                                    "hostIP": {"type": "string"}, "hostPort": {"type": "integer", "format": "int32"},
                                    "name": {"type": "string"}, "protocol": {"type": "string"}}}}}}}}}}]}
    });
    assert_eq!(json(&server, "POST", CRDS, Some(crd)).await.status, 201);
    eventually("the CRD is established", || {
        established(&server, "noxus.mygroup.example.com")
    })
    .await;
    let path = "/apis/mygroup.example.com/v1beta1/noxus/mytest";
    let config = "apiVersion: mygroup.example.com/v1beta1\nkind: WishIHadChosenNoxu\nmetadata:\n  name: mytest\n  finalizers:\n  - test-finalizer\nspec:\n  cronSpec: \"* * * * */5\"\n  replicas: 1\n  ports:\n  - name: x\n    containerPort: 80\n    protocol: TCP\n";
    // Established a moment before its resources are served: retried while 404, until a deadline.
    let deadline = Instant::now() + Duration::from_secs(20);
    let created = loop {
        let a = apply(&server, path, "apply_test", false, config).await;
        if a.status != 404 || Instant::now() > deadline {
            break a;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(created.status, 201, "{}", created.body);

    // Finalizers are a set: another finalizer added by a merge patch survives a re-apply.
    let patched = merge(
        &server,
        path,
        json!({"metadata": {"finalizers": ["test-finalizer", "another-one"]}}),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let again = apply(&server, path, "apply_test", false, config).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(
        again.body["metadata"]["finalizers"],
        json!(["test-finalizer", "another-one"])
    );

    // Replicas changed by someone else: one conflict, then force.
    assert_eq!(
        merge(&server, path, json!({"spec": {"replicas": 5}}))
            .await
            .status,
        200
    );
    let conflict = apply(&server, path, "apply_test", false, config).await;
    assert_eq!(conflict.status, 409, "{}", conflict.body);
    assert_eq!(
        conflict.body["details"]["causes"].as_array().map(Vec::len),
        Some(1),
        "{}",
        conflict.body
    );
    let forced = apply(&server, path, "apply_test", true, config).await;
    assert_eq!(forced.status, 200, "{}", forced.body);
    assert_eq!(forced.body["spec"]["replicas"], 1);

    // A second applier editing the first's item conflicts on that item's field only…
    let edit = "apiVersion: mygroup.example.com/v1beta1\nkind: WishIHadChosenNoxu\nmetadata:\n  name: mytest\nspec:\n  ports:\n  - name: \"y\"\n    containerPort: 80\n    protocol: TCP\n";
    let conflict = apply(&server, path, "apply_test_2", false, edit).await;
    assert_eq!(conflict.status, 409, "{}", conflict.body);
    assert_eq!(
        conflict.body["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"apply_test\"",
            "field": ".spec.ports[containerPort=80,protocol=\"TCP\"].name"}])
    );
    // …and adding an item of its own merges next to it.
    let add = edit.replace("containerPort: 80", "containerPort: 8080");
    let added = apply(&server, path, "apply_test_2", false, &add).await;
    assert_eq!(added.status, 200, "{}", added.body);
    assert_eq!(
        added.body["spec"]["ports"].as_array().map(Vec::len),
        Some(2)
    );
    server.stop().await;
}
