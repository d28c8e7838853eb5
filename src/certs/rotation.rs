//! Self-managed certificates: what to do next with the CA and serving pair
//! kept in one Secret, given the time.
//!
//! The serving certificate is renewed under the same CA, which needs no
//! change to any webhook configuration. The CA itself is rotated in three
//! steps, each held for an overlap period so every apiserver and every
//! replica has caught up before the next:
//!
//! 1. `extended`: a new CA is made; the published bundle holds old and new.
//! 2. `switched`: the serving certificate is re-issued by the new CA; the
//!    bundle still holds both, so clients that have either CA accept it.
//! 3. steady again: the old CA leaves the bundle.
//!
//! [`next_step`] is pure; [`apply`] generates keys but does no I/O.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use super::{pem_info, sign_with_ca, CertError, CertOptions};

/// Secret data keys.
pub const CA_CRT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const TLS_CRT: &str = "tls.crt";
pub const TLS_KEY: &str = "tls.key";
pub const BUNDLE: &str = "ca-bundle.crt";
pub const NEXT_CA_CRT: &str = "ca-next.crt";
pub const NEXT_CA_KEY: &str = "ca-next.key";
pub const PHASE: &str = "rotation-phase";
pub const PHASE_SINCE: &str = "rotation-since";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub ca_validity_secs: i64,
    pub cert_validity_secs: i64,
    /// Start a CA rotation this long before the CA expires.
    pub ca_renew_before_secs: i64,
    /// Re-issue the serving certificate this long before it expires.
    pub cert_renew_before_secs: i64,
    /// How long each CA rotation step is held.
    pub overlap_secs: i64,
}

impl Default for Timing {
    fn default() -> Self {
        const DAY: i64 = 86_400;
        Timing {
            ca_validity_secs: 10 * 365 * DAY,
            cert_validity_secs: 365 * DAY,
            ca_renew_before_secs: 365 * DAY,
            cert_renew_before_secs: 90 * DAY,
            // Longer than kubelet's Secret volume propagation (about a minute).
            overlap_secs: 10 * 60,
        }
    }
}

impl Timing {
    pub fn validate(&self) -> Result<(), String> {
        if self.cert_renew_before_secs >= self.cert_validity_secs {
            return Err("certRenewBeforeSeconds must be shorter than certValiditySeconds".into());
        }
        if self.ca_renew_before_secs >= self.ca_validity_secs {
            return Err("caRenewBeforeSeconds must be shorter than caValiditySeconds".into());
        }
        if self.ca_renew_before_secs <= 2 * self.overlap_secs {
            return Err("caRenewBeforeSeconds must exceed two overlap periods, or the old CA expires mid-rotation".into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Steady,
    Extended,
    Switched,
}

/// The Secret's data, as strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stored(pub BTreeMap<String, String>);

impl Stored {
    fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str).filter(|s| !s.is_empty())
    }

    pub fn phase(&self) -> Phase {
        match self.get(PHASE) {
            Some("extended") => Phase::Extended,
            Some("switched") => Phase::Switched,
            _ => Phase::Steady,
        }
    }

    fn since(&self) -> i64 {
        self.get(PHASE_SINCE)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    pub fn serving_pair(&self) -> Option<(&str, &str)> {
        Some((self.get(TLS_CRT)?, self.get(TLS_KEY)?))
    }

    /// The caBundle to publish (PEM), falling back to the CA alone.
    pub fn bundle(&self) -> Option<&str> {
        self.get(BUNDLE).or_else(|| self.get(CA_CRT))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing usable stored: make a CA and a serving certificate.
    Create,
    RenewCert,
    StartCaRotation,
    SwitchCert,
    FinishCaRotation,
    /// Nothing to do until the given Unix time.
    Wait {
        until: i64,
    },
}

fn not_after(pem: Option<&str>) -> Option<i64> {
    pem_info(pem?).ok().map(|i| i.not_after)
}

/// What to do now.
pub fn next_step(s: &Stored, now: i64, t: &Timing) -> Step {
    let (Some(ca_end), Some(cert_end)) = (not_after(s.get(CA_CRT)), not_after(s.get(TLS_CRT)))
    else {
        return Step::Create;
    };
    if s.get(CA_KEY).is_none() || s.get(TLS_KEY).is_none() || ca_end <= now {
        return Step::Create;
    }
    let renew_cert_at = cert_end - t.cert_renew_before_secs;
    match s.phase() {
        Phase::Extended => {
            if s.get(NEXT_CA_CRT).is_none() || s.get(NEXT_CA_KEY).is_none() {
                return Step::Create;
            }
            let due = s.since() + t.overlap_secs;
            if now >= due {
                Step::SwitchCert
            } else if now >= renew_cert_at {
                Step::RenewCert
            } else {
                Step::Wait {
                    until: due.min(renew_cert_at),
                }
            }
        }
        Phase::Switched => {
            let due = s.since() + t.overlap_secs;
            if now >= due {
                Step::FinishCaRotation
            } else if now >= renew_cert_at {
                Step::RenewCert
            } else {
                Step::Wait {
                    until: due.min(renew_cert_at),
                }
            }
        }
        Phase::Steady => {
            let rotate_ca_at = ca_end - t.ca_renew_before_secs;
            if now >= rotate_ca_at {
                Step::StartCaRotation
            } else if now >= renew_cert_at {
                Step::RenewCert
            } else {
                Step::Wait {
                    until: rotate_ca_at.min(renew_cert_at),
                }
            }
        }
    }
}

fn ts(now: i64) -> Result<OffsetDateTime, CertError> {
    OffsetDateTime::from_unix_timestamp(now).map_err(|e| CertError::Mismatch {
        message: e.to_string(),
    })
}

/// Carries out `step`, returning the new Secret data.
pub fn apply(
    step: Step,
    s: &Stored,
    now: i64,
    t: &Timing,
    opts: &CertOptions,
) -> Result<Stored, CertError> {
    let mut out = s.clone();
    let set = |out: &mut Stored, k: &str, v: String| {
        out.0.insert(k.to_string(), v);
    };
    let opts = CertOptions {
        ca_validity_secs: t.ca_validity_secs,
        cert_validity_secs: t.cert_validity_secs,
        ..opts.clone()
    };
    let at = ts(now)?;
    match step {
        Step::Wait { .. } => {}
        Step::Create => {
            let b = super::generate(&opts, at)?;
            out = Stored::default();
            set(&mut out, CA_CRT, b.ca_pem.clone());
            set(&mut out, CA_KEY, b.ca_key_pem);
            set(&mut out, TLS_CRT, b.cert_pem);
            set(&mut out, TLS_KEY, b.key_pem);
            set(&mut out, BUNDLE, b.ca_pem);
        }
        Step::RenewCert => {
            let (ca, ca_key) = (s.get(CA_CRT).unwrap_or(""), s.get(CA_KEY).unwrap_or(""));
            let (cert, key) = sign_with_ca(ca, ca_key, &opts, at)?;
            set(&mut out, TLS_CRT, cert);
            set(&mut out, TLS_KEY, key);
        }
        Step::StartCaRotation => {
            let next = super::generate(&opts, at)?;
            let old = s.get(CA_CRT).unwrap_or("");
            set(&mut out, NEXT_CA_CRT, next.ca_pem.clone());
            set(&mut out, NEXT_CA_KEY, next.ca_key_pem);
            set(
                &mut out,
                BUNDLE,
                format!("{}{}", ensure_newline(old), next.ca_pem),
            );
            set(&mut out, PHASE, "extended".into());
            set(&mut out, PHASE_SINCE, now.to_string());
        }
        Step::SwitchCert => {
            let (ca, ca_key) = (
                s.get(NEXT_CA_CRT).unwrap_or(""),
                s.get(NEXT_CA_KEY).unwrap_or(""),
            );
            let (cert, key) = sign_with_ca(ca, ca_key, &opts, at)?;
            set(&mut out, CA_CRT, ca.to_string());
            set(&mut out, CA_KEY, ca_key.to_string());
            out.0.remove(NEXT_CA_CRT);
            out.0.remove(NEXT_CA_KEY);
            set(&mut out, TLS_CRT, cert);
            set(&mut out, TLS_KEY, key);
            set(&mut out, PHASE, "switched".into());
            set(&mut out, PHASE_SINCE, now.to_string());
        }
        Step::FinishCaRotation => {
            let ca = s.get(CA_CRT).unwrap_or("").to_string();
            set(&mut out, BUNDLE, ca);
            out.0.remove(PHASE);
            out.0.remove(PHASE_SINCE);
        }
    }
    Ok(out)
}

fn ensure_newline(pem: &str) -> String {
    if pem.ends_with('\n') {
        pem.to_string()
    } else {
        format!("{pem}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certs::pem_certs;

    fn timing() -> Timing {
        Timing {
            ca_validity_secs: 1000,
            cert_validity_secs: 300,
            ca_renew_before_secs: 400,
            cert_renew_before_secs: 100,
            overlap_secs: 50,
        }
    }

    fn run(s: &Stored, now: i64) -> (Step, Stored) {
        let step = next_step(s, now, &timing());
        let next = apply(step, s, now, &timing(), &CertOptions::default()).unwrap();
        (step, next)
    }

    fn cas_in_bundle(s: &Stored) -> usize {
        pem_certs(s.bundle().unwrap()).len()
    }

    #[test]
    fn full_lifecycle() {
        let t0 = OffsetDateTime::now_utc().unix_timestamp();
        let (step, s) = run(&Stored::default(), t0);
        assert_eq!(step, Step::Create);
        assert_eq!(cas_in_bundle(&s), 1);
        let ca0 = s.0[CA_CRT].clone();
        let cert0 = s.0[TLS_CRT].clone();

        // Nothing to do until the serving certificate nears expiry.
        // (not_before is an hour back, so expiry is t0 + 300.)
        let (step, _) = run(&s, t0 + 10);
        assert_eq!(step, Step::Wait { until: t0 + 200 });
        let (step, s) = run(&s, t0 + 200);
        assert_eq!(step, Step::RenewCert);
        assert_eq!(s.0[CA_CRT], ca0, "leaf renewal keeps the CA");
        assert_ne!(s.0[TLS_CRT], cert0);
        assert_eq!(cas_in_bundle(&s), 1);

        let (step, s) = run(&s, t0 + 400);
        assert_eq!(step, Step::RenewCert);

        // CA expiry at t0+1000: rotation starts at t0+600, before the
        // serving certificate renewal that is also due.
        let (step, s) = run(&s, t0 + 600);
        assert_eq!(step, Step::StartCaRotation);
        assert_eq!(s.phase(), Phase::Extended);
        assert_eq!(
            cas_in_bundle(&s),
            2,
            "old and new CA published before anything uses the new one"
        );
        assert_eq!(s.0[CA_CRT], ca0, "still serving from the old CA");

        let (step, s) = run(&s, t0 + 620);
        assert_eq!(
            step,
            Step::RenewCert,
            "renewal under the old CA goes on mid-rotation"
        );
        assert_eq!(s.0[CA_CRT], ca0);
        let (step, _) = run(&s, t0 + 630);
        assert_eq!(step, Step::Wait { until: t0 + 650 });
        let (step, s) = run(&s, t0 + 650);
        assert_eq!(step, Step::SwitchCert);
        assert_eq!(s.phase(), Phase::Switched);
        assert_ne!(s.0[CA_CRT], ca0, "serving from the new CA");
        assert_eq!(
            cas_in_bundle(&s),
            2,
            "old CA still trusted during the overlap"
        );
        assert!(!s.0.contains_key(NEXT_CA_CRT));
        let new_ca = s.0[CA_CRT].clone();

        let (step, s) = run(&s, t0 + 700);
        assert_eq!(step, Step::FinishCaRotation);
        assert_eq!(s.phase(), Phase::Steady);
        assert_eq!(cas_in_bundle(&s), 1);
        assert_eq!(s.bundle().unwrap(), new_ca);
    }

    #[test]
    fn broken_or_partial_data_is_recreated() {
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let mut s = Stored::default();
        s.0.insert(CA_CRT.into(), "junk".into());
        assert_eq!(next_step(&s, now, &timing()), Step::Create);
        let (_, good) = run(&Stored::default(), now);
        let mut no_key = good.clone();
        no_key.0.remove(TLS_KEY);
        assert_eq!(next_step(&no_key, now, &timing()), Step::Create);
    }

    #[test]
    fn timing_is_checked() {
        assert!(Timing::default().validate().is_ok());
        let bad = Timing {
            cert_renew_before_secs: 400,
            ..timing()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .contains("certRenewBeforeSeconds"));
    }
}
