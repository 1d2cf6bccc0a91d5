//! Apply and update sequences ported from structured-merge-diff's `merge/*_test.go`
//! (leaf_test, set_test, multiple_appliers_test, conflict cases), in one API version.

use rkcm_structured_merge::update::UpdateError;
use rkcm_structured_merge::{
    Atom, Conflict, Conflicts, ListType, ManagedFields, Path, PathElement, Schema, Set, TypeRef,
    Updater,
};
use serde_json::{json, Value};

fn schema() -> (Schema, TypeRef) {
    let mut s = Schema::new();
    let strings = || TypeRef::inline(Atom::list(TypeRef::scalar(), ListType::Set));
    s.insert(
        "namedList",
        Atom::structure([("name", TypeRef::scalar()), ("value", strings())]),
    );
    s.insert(
        "struct",
        Atom::structure([
            ("name", TypeRef::scalar()),
            ("scalarField", TypeRef::scalar()),
        ]),
    );
    s.insert(
        "root",
        Atom::structure([
            ("numeric", TypeRef::scalar()),
            ("string", TypeRef::scalar()),
            ("bool", TypeRef::scalar()),
            ("list", strings()),
            (
                "listOfLists",
                TypeRef::inline(Atom::list(
                    TypeRef::named("namedList"),
                    ListType::Map(vec!["name".into()]),
                )),
            ),
            ("struct", TypeRef::named("struct")),
            ("labels", TypeRef::inline(Atom::map_of(TypeRef::scalar()))),
        ]),
    );
    (s, TypeRef::named("root"))
}

/// The live object and its managers, changed by a sequence of operations
/// (`internal/fixture.State`).
struct State {
    schema: Schema,
    root: TypeRef,
    live: Value,
    managers: ManagedFields,
}

impl State {
    fn new() -> State {
        let (schema, root) = schema();
        State {
            schema,
            root,
            live: json!({}),
            managers: ManagedFields::new(),
        }
    }

    fn try_apply(&mut self, manager: &str, config: Value, force: bool) -> Result<(), UpdateError> {
        let updater = Updater::new(&self.schema, self.root.clone());
        if let Some(new) = updater.apply(
            &self.live,
            &config,
            "v1",
            &mut self.managers,
            manager,
            force,
        )? {
            self.live = new;
        }
        Ok(())
    }

    fn apply(&mut self, manager: &str, config: Value) -> &mut Self {
        self.try_apply(manager, config, false)
            .expect("apply succeeds");
        self
    }

    fn force_apply(&mut self, manager: &str, config: Value) -> &mut Self {
        self.try_apply(manager, config, true)
            .expect("forced apply succeeds");
        self
    }

    fn update(&mut self, manager: &str, new: Value) -> &mut Self {
        let updater = Updater::new(&self.schema, self.root.clone());
        updater
            .update_managers(&self.live, &new, "v1", &mut self.managers, manager)
            .expect("update succeeds");
        self.live = new;
        self
    }

    fn conflicts(&mut self, manager: &str, config: Value) -> Conflicts {
        match self.try_apply(manager, config, false) {
            Err(UpdateError::Conflicts(c)) => c,
            other => panic!("expected conflicts, got {other:?}"),
        }
    }

    fn owned(&self, manager: &str) -> Vec<String> {
        self.managers
            .get(manager)
            .map(|vs| vs.set.paths().iter().map(ToString::to_string).collect())
            .unwrap_or_default()
    }

    fn applied(&self, manager: &str) -> bool {
        self.managers.get(manager).is_some_and(|vs| vs.applied)
    }
}

fn p(s: &[&str]) -> Path {
    Path::fields(s.iter().copied())
}

#[test]
fn leaf_apply_twice_owns_the_union_of_the_last_config() {
    let mut st = State::new();
    st.apply("default", json!({"numeric": 1, "string": "string"}))
        .apply(
            "default",
            json!({"numeric": 2, "string": "string", "bool": false}),
        );
    assert_eq!(
        st.live,
        json!({"numeric": 2, "string": "string", "bool": false})
    );
    assert_eq!(st.owned("default"), [".bool", ".numeric", ".string"]);
    assert!(st.applied("default"));
}

#[test]
fn leaf_apply_update_apply_without_conflict_keeps_the_updaters_field() {
    let mut st = State::new();
    st.apply("default", json!({"numeric": 1, "string": "string"}))
        .update(
            "controller",
            json!({"numeric": 1, "string": "string", "bool": true}),
        )
        .apply("default", json!({"numeric": 2, "string": "string"}));
    assert_eq!(
        st.live,
        json!({"numeric": 2, "string": "string", "bool": true})
    );
    assert_eq!(st.owned("default"), [".numeric", ".string"]);
    assert_eq!(st.owned("controller"), [".bool"]);
    assert!(!st.applied("controller"));
}

#[test]
fn leaf_apply_update_apply_conflicts_until_forced() {
    let mut st = State::new();
    st.apply("default", json!({"numeric": 1, "string": "string"}))
        .update(
            "controller",
            json!({"numeric": 1, "string": "controller string", "bool": true}),
        );
    // The update took .string from the applier.
    assert_eq!(st.owned("default"), [".numeric"]);
    let c = st.conflicts("default", json!({"numeric": 2, "string": "user string"}));
    assert_eq!(
        c,
        Conflicts(vec![Conflict {
            manager: "controller".into(),
            path: p(&["string"])
        }])
    );
    // Nothing was written by the refused apply.
    assert_eq!(st.live["string"], "controller string");
    st.force_apply("default", json!({"numeric": 2, "string": "user string"}));
    assert_eq!(
        st.live,
        json!({"numeric": 2, "string": "user string", "bool": true})
    );
    assert_eq!(st.owned("default"), [".numeric", ".string"]);
    assert_eq!(st.owned("controller"), [".bool"]);
}

#[test]
fn leaf_applying_the_same_value_as_another_owner_shares_it() {
    let mut st = State::new();
    st.apply("a", json!({"string": "x"}))
        .apply("b", json!({"string": "x"}));
    assert_eq!(st.owned("a"), [".string"]);
    assert_eq!(st.owned("b"), [".string"]);
    // a no longer applies it: b still owns it, so it stays.
    st.apply("a", json!({"numeric": 1}));
    assert_eq!(st.live, json!({"string": "x", "numeric": 1}));
}

#[test]
fn set_apply_update_apply_without_overlap_interleaves_items() {
    let mut st = State::new();
    st.apply("default", json!({"list": ["a", "c"]}))
        .update("controller", json!({"list": ["a", "b", "c", "d"]}))
        .apply("default", json!({"list": ["a", "aprime", "c", "cprime"]}));
    assert_eq!(
        st.live,
        json!({"list": ["a", "b", "aprime", "c", "d", "cprime"]})
    );
    assert_eq!(
        st.owned("default"),
        [
            ".list[=\"a\"]",
            ".list[=\"aprime\"]",
            ".list[=\"c\"]",
            ".list[=\"cprime\"]"
        ]
    );
    assert_eq!(st.owned("controller"), [".list[=\"b\"]", ".list[=\"d\"]"]);
}

#[test]
fn set_items_a_manager_stops_applying_are_removed() {
    let mut st = State::new();
    st.apply("default", json!({"list": ["a", "b", "c"]}))
        .apply("default", json!({"list": ["a", "c"]}));
    assert_eq!(st.live, json!({"list": ["a", "c"]}));
    st.apply("default", json!({}));
    assert_eq!(st.live, json!({}));
    assert!(st.managers.is_empty());
}

#[test]
fn multiple_appliers_remove_one_keeps_the_others_item() {
    let mut st = State::new();
    st.apply(
        "apply-one",
        json!({"listOfLists": [{"name": "a"}, {"name": "b"}]}),
    )
    .apply("apply-two", json!({"listOfLists": [{"name": "c"}]}))
    .apply("apply-one", json!({"listOfLists": [{"name": "a"}]}));
    assert_eq!(
        st.live,
        json!({"listOfLists": [{"name": "a"}, {"name": "c"}]})
    );
    assert_eq!(
        st.owned("apply-one"),
        [".listOfLists[name=\"a\"]", ".listOfLists[name=\"a\"].name"]
    );
    assert_eq!(
        st.owned("apply-two"),
        [".listOfLists[name=\"c\"]", ".listOfLists[name=\"c\"].name"]
    );
}

#[test]
fn multiple_appliers_changing_a_shared_items_value_conflicts() {
    let mut st = State::new();
    st.apply(
        "apply-one",
        json!({"listOfLists": [{"name": "a", "value": ["x"]}]}),
    )
    .update(
        "controller",
        json!({"listOfLists": [{"name": "a", "value": ["x", "y"]}], "string": "s"}),
    );
    let c = st.conflicts("apply-two", json!({"string": "t"}));
    assert_eq!(c.0.len(), 1);
    assert_eq!(c.0[0].manager, "controller");
    assert_eq!(c.0[0].path.to_string(), ".string");
    // Applying the value the controller set is no conflict.
    st.apply("apply-two", json!({"string": "s"}));
    assert_eq!(st.owned("apply-two"), [".string"]);
    assert_eq!(
        st.owned("controller"),
        [".listOfLists[name=\"a\"].value[=\"y\"]", ".string"]
    );
}

#[test]
fn unset_scalar_sole_owner_removes_it() {
    let mut st = State::new();
    st.apply(
        "apply-one",
        json!({"struct": {"name": "a", "scalarField": "a"}}),
    )
    .apply("apply-one", json!({"struct": {"name": "a"}}));
    assert_eq!(st.live, json!({"struct": {"name": "a"}}));
    assert_eq!(st.owned("apply-one"), [".struct.name"]);
}

#[test]
fn unset_scalar_shared_with_applier_keeps_it() {
    let mut st = State::new();
    st.apply(
        "apply-one",
        json!({"struct": {"name": "a", "scalarField": "a"}}),
    )
    .apply("apply-two", json!({"struct": {"scalarField": "a"}}))
    .apply("apply-one", json!({"struct": {"name": "a"}}));
    assert_eq!(
        st.live,
        json!({"struct": {"name": "a", "scalarField": "a"}})
    );
    assert_eq!(st.owned("apply-one"), [".struct.name"]);
    assert_eq!(st.owned("apply-two"), [".struct.scalarField"]);
}

#[test]
fn unset_scalar_shared_with_updater_keeps_it() {
    let mut st = State::new();
    st.update(
        "updater",
        json!({"struct": {"name": "a", "scalarField": "a"}}),
    )
    .apply(
        "applier",
        json!({"struct": {"name": "a", "scalarField": "a"}}),
    )
    .apply("applier", json!({"struct": {"name": "a"}}));
    assert_eq!(
        st.live,
        json!({"struct": {"name": "a", "scalarField": "a"}})
    );
    assert_eq!(
        st.owned("updater"),
        [".struct", ".struct.name", ".struct.scalarField"]
    );
    assert_eq!(st.owned("applier"), [".struct.name"]);
}

#[test]
fn updater_claims_the_field_it_changes() {
    let mut st = State::new();
    st.apply(
        "applier",
        json!({"struct": {"name": "a", "scalarField": "a"}}),
    )
    .update(
        "updater",
        json!({"struct": {"name": "a", "scalarField": "b"}}),
    );
    assert_eq!(st.owned("updater"), [".struct.scalarField"]);
    assert_eq!(st.owned("applier"), [".struct.name"]);
}

#[test]
fn remove_one_keep_one_with_dangling_subitem() {
    let mut st = State::new();
    st.apply(
        "apply-one",
        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]}),
    )
    .apply(
        "apply-two",
        json!({"listOfLists": [{"name": "b", "value": ["d"]}]}),
    )
    .update(
        "controller",
        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c", "d", "e"]}]}),
    )
    .apply("apply-one", json!({"listOfLists": [{"name": "a"}]}));
    assert_eq!(
        st.live,
        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["d", "e"]}]})
    );
    assert_eq!(
        st.owned("apply-one"),
        [".listOfLists[name=\"a\"]", ".listOfLists[name=\"a\"].name"]
    );
    assert_eq!(
        st.owned("apply-two"),
        [
            ".listOfLists[name=\"b\"]",
            ".listOfLists[name=\"b\"].name",
            ".listOfLists[name=\"b\"].value[=\"d\"]"
        ]
    );
    assert_eq!(
        st.owned("controller"),
        [".listOfLists[name=\"b\"].value[=\"e\"]"]
    );
}

#[test]
fn map_entries_are_owned_per_key_and_pruned_per_key() {
    let mut st = State::new();
    st.apply("a", json!({"labels": {"x": "1", "y": "2"}}))
        .update("ctl", json!({"labels": {"x": "1", "y": "2", "z": "3"}}))
        .apply("a", json!({"labels": {"x": "1"}}));
    assert_eq!(st.live, json!({"labels": {"x": "1", "z": "3"}}));
    assert_eq!(st.owned("ctl"), [".labels.z"]);
}

#[test]
fn a_noop_apply_returns_no_new_object() {
    let (schema, root) = schema();
    let updater = Updater::new(&schema, root);
    let mut managers = ManagedFields::new();
    let live = json!({"numeric": 1});
    let out = updater
        .apply(
            &live,
            &json!({"numeric": 1}),
            "v1",
            &mut managers,
            "m",
            false,
        )
        .unwrap();
    assert!(out.is_none());
    assert_eq!(
        managers["m"].set,
        Set::from_paths([Path(vec![PathElement::field("numeric")])])
    );
}

/// A value that went through a float field comes back as `10.0`; applying `10` again is no
/// change, as structured-merge-diff compares numbers by value (`value.Equals`).
#[test]
fn applying_a_number_the_live_object_holds_as_a_whole_float_shares_it() {
    let mut st = State::new();
    let stored: Value =
        serde_json::from_str(r#"{"numeric": 10.0, "extra": {"schema": {"maximum": 10.0}}}"#)
            .expect("valid JSON");
    st.apply("first", stored);
    st.apply(
        "second",
        json!({"numeric": 10, "extra": {"schema": {"maximum": 10}}}),
    );
    let shared = [
        ".extra",
        ".extra.schema",
        ".extra.schema.maximum",
        ".numeric",
    ];
    assert_eq!(st.owned("first"), shared);
    assert_eq!(st.owned("second"), shared);
    let c = st.conflicts("second", json!({"numeric": 10.5}));
    assert_eq!(
        c,
        Conflicts(vec![Conflict {
            manager: "first".into(),
            path: p(&["numeric"])
        }])
    );
}
