//! The JSON shape of a Go type: what an absent field decodes to, and how two values compare.

/// The zero value of a Go scalar, which is what an absent or null field decodes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zero {
    /// `""`.
    String,
    /// `0`.
    Number,
    /// `false`.
    Bool,
}

/// How a Go type is held and compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A string, number or boolean held by value: absent and null are its zero value.
    Scalar(Zero),
    /// A struct held by value, named `package/version.Name`: absent, null and `{}` are its zero
    /// value, and its fields follow their own shapes.
    Struct(&'static str),
    /// A pointer: absent and null are nil, which differs from a pointer to any value.
    Pointer(&'static Shape),
    /// A slice: absent, null and `[]` are equal.
    Slice(&'static Shape),
    /// A map with string keys: absent, null and `{}` are equal.
    Map(&'static Shape),
    /// `resource.Quantity` held by value: compared by numeric value (`Cmp`), absent is zero.
    Quantity,
    /// `metav1.Time` or `metav1.MicroTime` held by value: compared by instant, absent and null
    /// are the zero time.
    Time,
    /// `intstr.IntOrString` held by value: an integer and a string never compare equal, absent
    /// is the integer 0.
    IntOrString,
    /// Opaque JSON (`runtime.RawExtension`, `metav1.FieldsV1`): compared as JSON, absent is null.
    Json,
}

/// One field of a Go struct, by its JSON name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The name in the `json` tag.
    pub json: &'static str,
    /// The field's Go type.
    pub shape: Shape,
}

impl Shape {
    /// The fields of a [`Shape::Struct`], or `None` for any other shape or an unknown struct.
    pub fn fields(&self) -> Option<&'static [Field]> {
        match self {
            Shape::Struct(name) => super::types::fields(name),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::types;

    #[test]
    fn every_struct_named_in_the_table_is_in_the_table() {
        fn check(shape: &Shape, seen: &mut Vec<&'static str>) {
            match shape {
                Shape::Struct(name) => {
                    if seen.contains(name) {
                        return;
                    }
                    seen.push(name);
                    let fields = shape
                        .fields()
                        .unwrap_or_else(|| panic!("{name} is not in the table"));
                    for f in fields {
                        check(&f.shape, seen);
                    }
                }
                Shape::Pointer(inner) | Shape::Slice(inner) | Shape::Map(inner) => {
                    check(inner, seen)
                }
                _ => {}
            }
        }
        let mut seen = Vec::new();
        for root in [
            types::POD_TEMPLATE_SPEC,
            types::POD,
            types::DEPLOYMENT,
            types::DAEMON_SET,
            types::STATEFUL_SET,
            types::CONTROLLER_REVISION,
        ] {
            check(&root, &mut seen);
        }
        assert!(seen.contains(&"core/v1.ResourceRequirements"));
    }

    #[test]
    fn the_table_follows_go_types_for_the_fields_kubectl_round_trips() {
        let field = |shape: Shape, name: &str| {
            shape
                .fields()
                .and_then(|f| f.iter().find(|f| f.json == name))
                .map(|f| f.shape)
        };
        let container = Shape::Struct("core/v1.Container");
        assert_eq!(
            field(container, "resources"),
            Some(Shape::Struct("core/v1.ResourceRequirements"))
        );
        assert_eq!(
            field(container, "securityContext"),
            Some(Shape::Pointer(&Shape::Struct("core/v1.SecurityContext")))
        );
        assert_eq!(
            field(Shape::Struct("meta/v1.ObjectMeta"), "creationTimestamp"),
            Some(Shape::Time)
        );
        // VolumeSource is embedded inline in Volume.
        assert_eq!(
            field(Shape::Struct("core/v1.Volume"), "emptyDir"),
            Some(Shape::Pointer(&Shape::Struct(
                "core/v1.EmptyDirVolumeSource"
            )))
        );
        assert_eq!(
            field(Shape::Struct("core/v1.ResourceRequirements"), "limits"),
            Some(Shape::Map(&Shape::Quantity))
        );
        // TypeMeta is embedded inline in Pod.
        assert_eq!(field(types::POD, "kind"), Some(Shape::Scalar(Zero::String)));
    }
}
