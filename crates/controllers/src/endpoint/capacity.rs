//! The 1000-address cap of an Endpoints object (`truncateEndpoints`,
//! `capacityAnnotationSetCorrectly`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EndpointAddress, EndpointSubset};

/// Most addresses (ready and not) an Endpoints object holds (`maxCapacity`).
pub const MAX_CAPACITY: usize = 1000;
/// Annotation telling that an Endpoints object was cut down (`v1.EndpointsOverCapacity`).
pub const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";
/// Value of [`OVER_CAPACITY_ANNOTATION`] (`truncated`).
pub const TRUNCATED: &str = "truncated";

fn len(list: &Option<Vec<EndpointAddress>>) -> usize {
    list.as_ref().map_or(0, Vec::len)
}

fn total(subsets: &[EndpointSubset]) -> (usize, usize) {
    subsets.iter().fold((0, 0), |(r, n), s| {
        (r + len(&s.addresses), n + len(&s.not_ready_addresses))
    })
}

/// Whether the annotation agrees with `subsets`: they fit and the annotation is absent. Subsets
/// over capacity must be truncated, so the annotation is then never right.
pub fn capacity_annotation_set_correctly(
    annotations: Option<&BTreeMap<String, String>>,
    subsets: &[EndpointSubset],
) -> bool {
    let (ready, not_ready) = total(subsets);
    if ready + not_ready > MAX_CAPACITY {
        return false;
    }
    !annotations.is_some_and(|a| a.contains_key(OVER_CAPACITY_ANNOTATION))
}

/// Cuts `subsets` down to [`MAX_CAPACITY`] addresses, ready ones first: when the ready addresses
/// alone are too many, every not-ready address goes and the ready ones are cut; otherwise only
/// not-ready addresses are. Each subset keeps its share (rounded up, the last ones getting what is
/// left). Returns whether anything was cut.
pub fn truncate_endpoints(subsets: &mut [EndpointSubset]) -> bool {
    let (total_ready, total_not_ready) = total(subsets);
    if total_ready + total_not_ready <= MAX_CAPACITY {
        return false;
    }
    let truncate_ready = total_ready > MAX_CAPACITY;
    let (max, num_total) = if truncate_ready {
        (MAX_CAPACITY, total_ready)
    } else {
        (MAX_CAPACITY - total_ready, total_not_ready)
    };
    let mut can_be_added = max;
    for subset in subsets.iter_mut() {
        let in_subset = if truncate_ready {
            len(&subset.addresses)
        } else {
            len(&subset.not_ready_addresses)
        };
        // In floating point as kube computes it, so that rounding agrees.
        let share = ((in_subset as f64 / num_total as f64) * max as f64).ceil() as usize;
        let to_be_added = share.min(can_be_added);
        if truncate_ready {
            if let Some(list) = subset.addresses.as_mut() {
                list.truncate(to_be_added);
            }
            subset.not_ready_addresses = None;
            can_be_added -= len(&subset.addresses);
        } else {
            if let Some(list) = subset.not_ready_addresses.as_mut() {
                list.truncate(to_be_added);
            }
            can_be_added -= len(&subset.not_ready_addresses);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addresses(n: usize) -> Option<Vec<EndpointAddress>> {
        (n > 0).then(|| {
            (0..n)
                .map(|i| EndpointAddress {
                    ip: format!("10.0.{}.{}", i / 250, i % 250),
                    ..EndpointAddress::default()
                })
                .collect()
        })
    }

    fn subsets(shape: &[(usize, usize)]) -> Vec<EndpointSubset> {
        shape
            .iter()
            .map(|&(r, n)| EndpointSubset {
                addresses: addresses(r),
                not_ready_addresses: addresses(n),
                ports: None,
            })
            .collect()
    }

    fn shape(subsets: &[EndpointSubset]) -> Vec<(usize, usize)> {
        subsets
            .iter()
            .map(|s| (len(&s.addresses), len(&s.not_ready_addresses)))
            .collect()
    }

    /// Ported from endpoints_controller_test.go `TestTruncateEndpoints`.
    #[test]
    fn truncation_keeps_ready_addresses_first_and_each_subsets_share() {
        type Shape<'a> = &'a [(usize, usize)];
        let cases: &[(Shape, Shape)] = &[
            // Fits: untouched.
            (
                &[(50, 50), (100, 100), (100, 100)],
                &[(50, 50), (100, 100), (100, 100)],
            ),
            // Only not-ready addresses are cut.
            (
                &[(200, 300), (100, 200), (150, 250)],
                &[(200, 220), (100, 147), (150, 183)],
            ),
            (
                &[(0, 600), (0, 600), (0, 100)],
                &[(0, 462), (0, 462), (0, 76)],
            ),
            // Too many ready addresses: every not-ready one goes.
            (
                &[(600, 100), (500, 100), (50, 50)],
                &[(522, 0), (435, 0), (43, 0)],
            ),
        ];
        for (input, want) in cases {
            let mut s = subsets(input);
            let cut = truncate_endpoints(&mut s);
            assert_eq!(shape(&s), *want, "{input:?}");
            assert_eq!(cut, input != want, "{input:?}");
            let (r, n) = total(&s);
            assert!(r + n <= MAX_CAPACITY);
        }
    }

    /// Ported from endpoints_controller_test.go `TestCapacityAnnotationSetCorrectly`.
    #[test]
    fn the_annotation_is_right_only_when_absent_under_capacity() {
        let annotated: BTreeMap<String, String> =
            [(OVER_CAPACITY_ANNOTATION.to_string(), TRUNCATED.to_string())].into();
        let under = subsets(&[(50, 50)]);
        let over = subsets(&[(600, 600)]);
        assert!(capacity_annotation_set_correctly(None, &under));
        assert!(!capacity_annotation_set_correctly(Some(&annotated), &under));
        assert!(!capacity_annotation_set_correctly(None, &over));
        assert!(!capacity_annotation_set_correctly(Some(&annotated), &over));
        let other: BTreeMap<String, String> = [("a".to_string(), "b".to_string())].into();
        assert!(capacity_annotation_set_correctly(Some(&other), &under));
    }
}
