//! apimachinery's DNS-1123 name formats (`IsDNS1123Label`,
//! `IsDNS1123Subdomain`), the format alone: the length limits (63 and 253)
//! are checked by the callers, which word their errors apart.

/// A lowercase RFC 1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
pub fn is_label_format(l: &str) -> bool {
    let b = l.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty() && edge(&b[0]) && edge(&b[b.len() - 1]) && b.iter().all(|c| edge(c) || *c == b'-')
}

/// A lowercase RFC 1123 subdomain: labels joined by dots.
pub fn is_subdomain_format(v: &str) -> bool {
    v.split('.').all(is_label_format)
}

/// `IsDNS1123Label` as a yes or no.
pub fn is_dns1123_label(v: &str) -> bool {
    v.len() <= 63 && is_label_format(v)
}

/// `IsDNS1123Subdomain` as a yes or no.
pub fn is_dns1123_subdomain(v: &str) -> bool {
    v.len() <= 253 && is_subdomain_format(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_limits_are_apimachinerys() {
        for ok in ["a", "a-b", "0x", "example.com", "a.b-c.d"] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        for bad in ["", "A", "-a", "a-", "a..b", ".a", "a_b", "a.B"] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
        assert!(is_dns1123_label(&"a".repeat(63)) && !is_dns1123_label(&"a".repeat(64)));
        assert!(!is_dns1123_label("a.b"));
        let long = vec!["a".repeat(63); 4].join(".");
        assert_eq!(long.len(), 255);
        assert!(is_subdomain_format(&long) && !is_dns1123_subdomain(&long));
    }
}
