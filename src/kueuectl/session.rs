//! The session: the kubeconfig with kubectl's flags applied, the client
//! and namespace a command runs with, and the servers' versions.

use k8s_openapi::api::{apps::v1::Deployment, coordination::v1::Lease};
use kube::{
    api::ListParams,
    config::{KubeConfigOptions, Kubeconfig},
    Api, Client, Config, ResourceExt,
};

use super::{args::KubeFlags, error::Error};
use crate::controllers::lease::{LEASE_NAME, VERSION_ANNOTATION};

/// A client and the namespace of the request (`-n`, else the context's).
pub struct Session {
    pub client: Client,
    pub namespace: String,
}

/// The name given to the context, cluster and user kubectl's flags make
/// when the kubeconfig has none to override.
pub(super) const FLAGS_ENTRY: &str = "kubectl-kueue-flags";

/// `--request-timeout` as kubectl reads it: `0` (none), whole seconds, or
/// a Go duration (`1s`, `2m`, `1h30m`, `500ms`).
pub fn request_timeout(v: &str) -> Result<Option<std::time::Duration>, Error> {
    let bad = || {
        Error::Usage(
            "invalid timeout value. Timeout must be a single integer in seconds, or an integer followed by a corresponding time unit (e.g. 1s | 2m | 3h)".into(),
        )
    };
    let v = v.trim();
    if v.is_empty() || v == "0" {
        return Ok(None);
    }
    if let Ok(secs) = v.parse::<u64>() {
        return Ok(Some(std::time::Duration::from_secs(secs)));
    }
    let mut total = 0f64;
    let mut rest = v;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let n: f64 = rest[..num_end].parse().map_err(|_| bad())?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    Ok((total > 0.0).then(|| std::time::Duration::from_secs_f64(total)))
}

/// kubectl's global flags applied over the kubeconfig, as clientcmd's
/// overrides: the context, cluster and user chosen, then the flags set on
/// the chosen cluster and user.
pub fn apply_flags(kc: &mut Kubeconfig, flags: &KubeFlags) -> KubeConfigOptions {
    use kube::config::{AuthInfo, Cluster, Context, NamedAuthInfo, NamedCluster, NamedContext};
    let context_name = flags
        .context
        .clone()
        .or_else(|| kc.current_context.clone())
        .filter(|c| kc.contexts.iter().any(|n| n.name == *c))
        .unwrap_or_else(|| {
            kc.contexts.push(NamedContext {
                name: FLAGS_ENTRY.into(),
                context: Some(Context::default()),
                other: Default::default(),
            });
            FLAGS_ENTRY.into()
        });
    let context = kc
        .contexts
        .iter()
        .find(|n| n.name == context_name)
        .and_then(|n| n.context.clone())
        .unwrap_or_default();
    let cluster_name = flags
        .cluster
        .clone()
        .or_else(|| Some(context.cluster.clone()).filter(|c| !c.is_empty()))
        .unwrap_or_else(|| FLAGS_ENTRY.into());
    let user_name = flags
        .user
        .clone()
        .or(context.user.clone())
        .unwrap_or_else(|| FLAGS_ENTRY.into());
    if !kc.clusters.iter().any(|c| c.name == cluster_name) {
        kc.clusters.push(NamedCluster {
            name: cluster_name.clone(),
            cluster: Some(Cluster::default()),
            other: Default::default(),
        });
    }
    if !kc.auth_infos.iter().any(|a| a.name == user_name) {
        kc.auth_infos.push(NamedAuthInfo {
            name: user_name.clone(),
            auth_info: Some(AuthInfo::default()),
            other: Default::default(),
        });
    }
    if let Some(named) = kc.clusters.iter_mut().find(|c| c.name == cluster_name) {
        let c = named.cluster.get_or_insert_with(Cluster::default);
        if let Some(s) = &flags.server {
            c.server = Some(s.clone());
        }
        if let Some(ca) = &flags.certificate_authority {
            c.certificate_authority = Some(ca.clone());
            c.certificate_authority_data = None;
        }
        if let Some(n) = &flags.tls_server_name {
            c.tls_server_name = Some(n.clone());
        }
        if let Some(insecure) = flags.insecure_skip_tls_verify {
            c.insecure_skip_tls_verify = Some(insecure);
            if insecure {
                // As clientcmd: skipping verification drops the CA.
                c.certificate_authority = None;
                c.certificate_authority_data = None;
            }
        }
    }
    if let Some(named) = kc.auth_infos.iter_mut().find(|a| a.name == user_name) {
        let a = named.auth_info.get_or_insert_with(AuthInfo::default);
        if let Some(t) = &flags.token {
            a.token = Some(t.clone().into());
            a.token_file = None;
        }
        if let Some(c) = &flags.client_certificate {
            a.client_certificate = Some(c.clone());
            a.client_certificate_data = None;
        }
        if let Some(k) = &flags.client_key {
            a.client_key = Some(k.clone());
            a.client_key_data = None;
        }
        if let Some(u) = &flags.as_user {
            a.impersonate = Some(u.clone());
        }
        if let Some(u) = &flags.as_uid {
            a.impersonate_uid = Some(u.clone());
        }
        if !flags.as_group.is_empty() {
            a.impersonate_groups = Some(flags.as_group.clone());
        }
        if let Some(extra) = user_extra(&flags.as_user_extra) {
            a.impersonate_user_extra = Some(extra);
        }
    }
    KubeConfigOptions {
        context: Some(context_name),
        cluster: Some(cluster_name),
        user: Some(user_name),
    }
}

/// `--as-user-extra KEY=VALUE`s as clientcmd reads them: values of one key
/// gathered, an entry without `=` skipped.
pub fn user_extra(entries: &[String]) -> Option<std::collections::HashMap<String, Vec<String>>> {
    if entries.is_empty() {
        return None;
    }
    let mut extra: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (k, v) in entries.iter().filter_map(|e| e.split_once('=')) {
        extra.entry(k.to_string()).or_default().push(v.to_string());
    }
    Some(extra)
}

impl Session {
    pub async fn connect(flags: &KubeFlags) -> Result<Session, Error> {
        let timeout = request_timeout(&flags.request_timeout)?;
        let kc = match &flags.kubeconfig {
            Some(path) => {
                Some(Kubeconfig::read_from(path).map_err(|e| Error::Config(e.to_string()))?)
            }
            None => Kubeconfig::read().ok(),
        };
        let mut config = match kc {
            Some(mut kc) => {
                let opts = apply_flags(&mut kc, flags);
                Config::from_custom_kubeconfig(kc, &opts)
                    .await
                    .map_err(|e| Error::Config(e.to_string()))?
            }
            // No kubeconfig: the flags alone (`--server`), else in-cluster.
            None if flags.server.is_some() => {
                let mut kc = Kubeconfig::default();
                let opts = apply_flags(&mut kc, flags);
                Config::from_custom_kubeconfig(kc, &opts)
                    .await
                    .map_err(|e| Error::Config(e.to_string()))?
            }
            None => Config::infer()
                .await
                .map_err(|e| Error::Config(e.to_string()))?,
        };
        if timeout.is_some() {
            config.connect_timeout = timeout;
            config.read_timeout = timeout;
            config.write_timeout = timeout;
        }
        let namespace = flags
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let client = Client::try_from(config).map_err(|e| Error::Config(e.to_string()))?;
        Ok(Session { client, namespace })
    }
}

/// The batchgate found in the cluster: the Deployment's image (as upstream
/// reports Kueue's) and the version the reconciler wrote on its Lease.
pub(super) async fn server_versions(client: &Client) -> Result<Vec<String>, Error> {
    let mut lines = Vec::new();
    let deployments = Api::<Deployment>::namespaced(client.clone(), "batchgate-system");
    if let Some(d) = deployments.get_opt("batchgate").await? {
        let image = d
            .spec
            .and_then(|s| s.template.spec)
            .and_then(|p| p.containers.into_iter().find(|c| c.name == "batchgate"))
            .and_then(|c| c.image);
        if let Some(image) = image {
            lines.push(format!("Batchgate Image: {image}"));
        }
    }
    let leases = Api::<Lease>::all(client.clone());
    let lp = ListParams::default().fields(&format!("metadata.name={LEASE_NAME}"));
    if let Ok(list) = leases.list(&lp).await {
        for l in list.items {
            if let Some(v) = l.annotations().get(VERSION_ANNOTATION) {
                let holder = l
                    .spec
                    .as_ref()
                    .and_then(|s| s.holder_identity.clone())
                    .unwrap_or_default();
                lines.push(format!(
                    "Batchgate Reconciler Version: v{v} (lease {}/{LEASE_NAME}, holder {holder})",
                    l.namespace().unwrap_or_default()
                ));
            }
        }
    }
    Ok(lines)
}
