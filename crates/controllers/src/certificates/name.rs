//! An X.509 distinguished name as Go's `pkix.Name` holds it: read from a subject
//! (`FillFromRDNSequence`) and written back (`ToRDNSequence`).
//!
//! kube's signer copies the request's parsed subject into the certificate
//! (`pkg/controller/certificates/authority/authority.go`), so a certificate's subject is what
//! Go writes from this struct: every country, province, locality, street, postal code,
//! organization and organizational unit of the request, each type in one multi-valued RDN, then
//! the last common name and serial number. Attributes of other types are not written.

use x509_parser::der_parser::asn1_rs::Tag;
use x509_parser::x509::{AttributeTypeAndValue, X509Name};
use yasna::models::ObjectIdentifier;

/// The attributes of a distinguished name that Go's `pkix.Name` keeps.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Name {
    /// `C` values, in order.
    pub country: Vec<String>,
    /// `O` values, in order.
    pub organization: Vec<String>,
    /// `OU` values, in order.
    pub organizational_unit: Vec<String>,
    /// `L` values, in order.
    pub locality: Vec<String>,
    /// `ST` values, in order.
    pub province: Vec<String>,
    /// `STREET` values, in order.
    pub street_address: Vec<String>,
    /// `POSTALCODE` values, in order.
    pub postal_code: Vec<String>,
    /// The last `SERIALNUMBER`.
    pub serial_number: String,
    /// The last `CN`.
    pub common_name: String,
}

/// The arc of `id-at` (2.5.4) attribute types.
const ID_AT: [u64; 3] = [2, 5, 4];

impl Name {
    /// The name `FillFromRDNSequence` reads from `name`: values that are not strings are skipped.
    pub fn from_x509(name: &X509Name<'_>) -> Self {
        let mut out = Self::default();
        for attr in name.iter().flat_map(|rdn| rdn.iter()) {
            let Some(value) = string_value(attr) else {
                continue;
            };
            let Some(oid) = attr.attr_type().iter().map(Iterator::collect::<Vec<u64>>) else {
                continue;
            };
            let [2, 5, 4, kind] = oid[..] else {
                continue;
            };
            match kind {
                3 => out.common_name = value,
                5 => out.serial_number = value,
                6 => out.country.push(value),
                7 => out.locality.push(value),
                8 => out.province.push(value),
                9 => out.street_address.push(value),
                10 => out.organization.push(value),
                11 => out.organizational_unit.push(value),
                17 => out.postal_code.push(value),
                _ => {}
            }
        }
        out
    }

    /// The RDNs `ToRDNSequence` makes: one per attribute type present, holding all its values.
    fn rdns(&self) -> Vec<(u64, Vec<&str>)> {
        let lists = [
            (6, &self.country),
            (8, &self.province),
            (7, &self.locality),
            (9, &self.street_address),
            (17, &self.postal_code),
            (10, &self.organization),
            (11, &self.organizational_unit),
        ];
        let mut rdns: Vec<(u64, Vec<&str>)> = lists
            .into_iter()
            .filter(|(_, values)| !values.is_empty())
            .map(|(kind, values)| (kind, values.iter().map(String::as_str).collect()))
            .collect();
        for (kind, value) in [(3, &self.common_name), (5, &self.serial_number)] {
            if !value.is_empty() {
                rdns.push((kind, vec![value.as_str()]));
            }
        }
        rdns
    }

    /// Whether Go writes this name as an empty sequence (a certificate's SAN extension is then
    /// critical).
    pub fn is_empty(&self) -> bool {
        self.rdns().is_empty()
    }

    /// The DER `Name` Go writes (`asn1.Marshal(n.ToRDNSequence())`): each value a
    /// PrintableString when its characters allow, else a UTF8String; each RDN's values in DER
    /// set order.
    pub fn to_der(&self) -> Vec<u8> {
        yasna::construct_der(|w| {
            w.write_sequence_of(|w| {
                for (kind, values) in self.rdns() {
                    let oid = ObjectIdentifier::from_slice(&[ID_AT[0], ID_AT[1], ID_AT[2], kind]);
                    w.next().write_set_of(|w| {
                        for value in values {
                            w.next().write_sequence(|w| {
                                w.next().write_oid(&oid);
                                if value.bytes().all(is_printable) {
                                    w.next().write_printable_string(value);
                                } else {
                                    w.next().write_utf8_string(value);
                                }
                            });
                        }
                    });
                }
            })
        })
    }
}

/// The string of an attribute value, for the string types Go's `parseASN1String` reads.
fn string_value(attr: &AttributeTypeAndValue<'_>) -> Option<String> {
    let data = attr.as_slice();
    match attr.attr_value().tag() {
        Tag::PrintableString | Tag::Utf8String | Tag::Ia5String | Tag::NumericString => {
            std::str::from_utf8(data).ok().map(str::to_string)
        }
        // T61String is read as ISO 8859-1, as Go does.
        Tag::T61String => Some(data.iter().map(|&b| char::from(b)).collect()),
        Tag::BmpString => {
            let units: Vec<u16> = data
                .chunks_exact(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

/// Go's `isPrintable` as `asn1.Marshal` uses it (no `*`, no `&`).
fn is_printable(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || (b'\''..=b')').contains(&b)
        || (b'+'..=b'/').contains(&b)
        || matches!(b, b' ' | b':' | b'=' | b'?')
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_parser::prelude::FromDer;

    fn parse(der: &[u8]) -> Name {
        let (rest, name) = X509Name::from_der(der).expect("a DER name");
        assert!(rest.is_empty());
        Name::from_x509(&name)
    }

    #[test]
    fn repeated_attributes_are_all_kept_in_one_rdn_per_type_in_go_order() {
        let name = Name {
            common_name: "u".into(),
            organization: vec!["g2".into(), "g1".into()],
            country: vec!["DE".into()],
            ..Name::default()
        };
        let der = name.to_der();
        let (_, x509) = X509Name::from_der(&der).expect("a DER name");
        assert_eq!(x509.to_string(), "C=DE, O=g1 + O=g2, CN=u");
        assert_eq!(parse(&der).organization, ["g1", "g2"]);
    }

    #[test]
    fn values_are_printable_strings_unless_their_characters_need_utf8() {
        let name = Name {
            organization: vec!["system:nodes".into(), "a_b".into()],
            ..Name::default()
        };
        let der = name.to_der();
        let (_, x509) = X509Name::from_der(&der).expect("a DER name");
        let tags: Vec<(String, Tag)> = x509
            .iter_organization()
            .map(|a| {
                (
                    a.as_str().expect("string").to_string(),
                    a.attr_value().tag(),
                )
            })
            .collect();
        // One RDN, its values in DER set order: a UTF8String's tag sorts first.
        assert_eq!(
            tags,
            [
                ("a_b".to_string(), Tag::Utf8String),
                ("system:nodes".to_string(), Tag::PrintableString)
            ]
        );
    }

    #[test]
    fn the_last_common_name_wins_and_unknown_attributes_are_dropped() {
        // CN=a, CN=b, emailAddress=x@y, O=o
        let der = yasna::construct_der(|w| {
            w.write_sequence_of(|w| {
                let attr = |w: yasna::DERWriter<'_>, oid: &[u64], v: &str| {
                    w.write_set(|w| {
                        w.next().write_sequence(|w| {
                            w.next().write_oid(&ObjectIdentifier::from_slice(oid));
                            w.next().write_utf8_string(v);
                        })
                    })
                };
                attr(w.next(), &[2, 5, 4, 3], "a");
                attr(w.next(), &[2, 5, 4, 3], "b");
                attr(w.next(), &[1, 2, 840, 113549, 1, 9, 1], "x@y");
                attr(w.next(), &[2, 5, 4, 10], "o");
            })
        });
        let name = parse(&der);
        assert_eq!(
            name,
            Name {
                common_name: "b".into(),
                organization: vec!["o".into()],
                ..Name::default()
            }
        );
        let der = name.to_der();
        let (_, x509) = X509Name::from_der(&der).expect("a DER name");
        assert_eq!(x509.to_string(), "O=o, CN=b");
        assert!(Name::default().is_empty());
        assert_eq!(Name::default().to_der(), [0x30, 0x00]);
    }
}
