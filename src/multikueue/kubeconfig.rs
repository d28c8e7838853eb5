//! The rules a worker's kubeconfig must follow before the manager uses it,
//! as Kueue v0.19.2's MultiKueueCluster controller applies them
//! (`validateKubeconfig`, `validateRestConfig`, `validateKubeConfigPath`),
//! with its error words: a kubeconfig from a Secret or a file may not read
//! a token or CA file from the manager's disk, turn TLS off, carry a
//! password or run a plugin. Kueue does not refuse client certificate and
//! key file paths (clientcmd opens them); neither does this, so the shell
//! must decide what reading them means.
//!
//! Pure: the kubeconfig is bytes in; the one filesystem question the path
//! rules ask (where a path leads once its symlinks are followed) is a
//! function the caller passes.

use std::collections::BTreeMap;

use base64::Engine;
use serde::Deserialize;

/// Why a kubeconfig is refused. The text is Kueue's; the shell prefixes
/// `load client config failed: ` in the cluster's condition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeconfigError {
    /// Not a kubeconfig at all (clientcmd.Load failed). The detail is
    /// the YAML reader's, not Go's.
    #[error("failed to parse kubeconfig(apiconfig): {0}")]
    Parse(String),
    #[error("tokenFile is not allowed")]
    TokenFile,
    #[error("insecure TLS verification is not allowed for cluster {0}")]
    InsecureSkipTlsVerify(String),
    #[error("certificate-authority file paths are not allowed, use certificate-authority-data for cluster {0}")]
    CertificateAuthorityFile(String),
    #[error("server URL is required for cluster {0}")]
    NoServer(String),
    /// clientcmd could not build a client from the current context.
    #[error("invalid configuration: {0}")]
    Unusable(String),
    #[error(transparent)]
    RestConfig(#[from] RestConfigError),
}

/// The rules on the client configuration the kubeconfig's current
/// context makes (`validateRestConfig`); a ClusterProfile's client
/// configuration follows them too, exec plugins allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestConfigError {
    #[error("bearerTokenFile is not allowed")]
    BearerTokenFile,
    #[error("untrusted server endpoint")]
    UntrustedServer,
    #[error("basic auth is not allowed")]
    BasicAuth,
    #[error("exec plugins are not allowed")]
    ExecPlugin,
    #[error("auth providers are not allowed")]
    AuthProvider,
}

/// What of a client configuration the rest-config rules look at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestConfig {
    pub host: String,
    pub bearer_token_file: String,
    pub username: String,
    pub password: String,
    pub exec_provider: bool,
    pub auth_provider: bool,
}

/// `validateRestConfig`: `allow_exec` for ClusterProfile access plugins.
pub fn validate_rest_config(c: &RestConfig, allow_exec: bool) -> Result<(), RestConfigError> {
    if !c.bearer_token_file.is_empty() {
        return Err(RestConfigError::BearerTokenFile);
    }
    // Lowercased so a fully qualified name in capitals is still a name.
    if !is_valid_hostname(&c.host.to_lowercase()) {
        return Err(RestConfigError::UntrustedServer);
    }
    if !c.username.is_empty() || !c.password.is_empty() {
        return Err(RestConfigError::BasicAuth);
    }
    if c.exec_provider && !allow_exec {
        return Err(RestConfigError::ExecPlugin);
    }
    if c.auth_provider {
        return Err(RestConfigError::AuthProvider);
    }
    Ok(())
}

/// A kubeconfig (`clientcmd/api/v1.Config`), only what the rules read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Config {
    clusters: Option<Vec<Named<Cluster>>>,
    users: Option<Vec<Named<User>>>,
    contexts: Option<Vec<Named<Context>>>,
    #[serde(rename = "current-context")]
    current_context: String,
}

/// An entry of `clusters`, `users` or `contexts`: a name and the value
/// under `cluster`, `user` or `context`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Named<T: Default> {
    name: String,
    #[serde(rename = "cluster", alias = "user", alias = "context")]
    value: T,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
struct Cluster {
    server: String,
    #[serde(rename = "insecure-skip-tls-verify")]
    insecure_skip_tls_verify: bool,
    #[serde(rename = "certificate-authority")]
    certificate_authority: String,
    #[serde(rename = "certificate-authority-data")]
    certificate_authority_data: String,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
struct User {
    token: String,
    #[serde(rename = "tokenFile")]
    token_file: String,
    username: String,
    password: String,
    #[serde(rename = "client-certificate")]
    client_certificate: String,
    #[serde(rename = "client-certificate-data")]
    client_certificate_data: String,
    #[serde(rename = "client-key")]
    client_key: String,
    #[serde(rename = "client-key-data")]
    client_key_data: String,
    #[serde(rename = "as")]
    impersonate: String,
    #[serde(rename = "as-uid")]
    impersonate_uid: String,
    #[serde(rename = "as-groups")]
    impersonate_groups: Option<Vec<String>>,
    #[serde(rename = "as-user-extra")]
    impersonate_user_extra: Option<BTreeMap<String, Vec<String>>>,
    exec: Option<Exec>,
    #[serde(rename = "auth-provider")]
    auth_provider: Option<serde_json::Value>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Exec {
    command: String,
    api_version: String,
    env: Option<Vec<ExecEnv>>,
    interactive_mode: String,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
struct ExecEnv {
    name: String,
}

/// clientcmd's `validateAuthInfo`, but for the checks that open the
/// client certificate and key files and the exec plugin allowlist.
fn auth_info_errors(name: &str, u: &User) -> Vec<String> {
    let mut errs = Vec::new();
    let mut methods = Vec::new();
    if !u.token.is_empty() {
        methods.push("token");
    }
    if !u.username.is_empty() || !u.password.is_empty() {
        methods.push("basicAuth");
    }
    if !u.client_certificate.is_empty() || !u.client_certificate_data.is_empty() {
        if !u.client_certificate.is_empty() && !u.client_certificate_data.is_empty() {
            errs.push(format!("client-cert-data and client-cert are both specified for {name}. client-cert-data will override."));
        }
        if !u.client_key.is_empty() && !u.client_key_data.is_empty() {
            errs.push(format!("client-key-data and client-key are both specified for {name}; client-key-data will override"));
        }
        if u.client_key.is_empty() && u.client_key_data.is_empty() {
            errs.push(format!("client-key-data or client-key must be specified for {name} to use the clientCert authentication method."));
        }
    }
    if let Some(exec) = &u.exec {
        let plugin = "to use exec authentication plugin";
        if u.auth_provider.is_some() {
            errs.push(format!(
                "authProvider cannot be provided in combination with an exec plugin for {name}"
            ));
        }
        if exec.command.is_empty() {
            errs.push(format!("command must be specified for {name} {plugin}"));
        }
        if exec.api_version.is_empty() {
            errs.push(format!("apiVersion must be specified for {name} {plugin}"));
        }
        for env in exec.env.iter().flatten() {
            if env.name.is_empty() {
                errs.push(format!(
                    "env variable name must be specified for {name} {plugin}"
                ));
            }
        }
        match exec.interactive_mode.as_str() {
            "" => errs.push(format!(
                "interactiveMode must be specified for {name} {plugin}"
            )),
            "Never" | "IfAvailable" | "Always" => {}
            other => errs.push(format!("invalid interactiveMode for {name}: {other:?}")),
        }
    }
    if methods.len() > 1 {
        errs.push(format!(
            "more than one authentication method found for {name}; found [{}], only one is allowed",
            methods.join(" ")
        ));
    }
    let impersonates_more = !u.impersonate_uid.is_empty()
        || u.impersonate_groups.as_ref().is_some_and(|g| !g.is_empty())
        || u.impersonate_user_extra
            .as_ref()
            .is_some_and(|e| !e.is_empty());
    if impersonates_more && u.impersonate.is_empty() {
        errs.push(format!(
            "requesting uid, groups or user-extra for {name} without impersonating a user"
        ));
    }
    errs
}

/// `utilerrors.NewAggregate(errs).Error()`: one message alone, several
/// (repeats dropped) in brackets.
fn aggregate(errs: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errs {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
struct Context {
    cluster: String,
    user: String,
}

/// Go's map semantics over a kubeconfig's named lists: a later entry of
/// the same name replaces an earlier one, in the earlier one's place.
fn by_name<T: Default>(list: Option<Vec<Named<T>>>) -> Vec<(String, T)> {
    let mut out: Vec<(String, T)> = Vec::new();
    for n in list.unwrap_or_default() {
        match out.iter_mut().find(|(k, _)| *k == n.name) {
            Some(slot) => slot.1 = n.value,
            None => out.push((n.name, n.value)),
        }
    }
    out
}

fn find<'a, T>(list: &'a [(String, T)], name: &str) -> Option<&'a T> {
    list.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// `validateKubeconfig`: the kubeconfig text of a Secret's `kubeconfig`
/// key or of a file. Clusters are checked in the file's order (Go's map
/// order is random, so with several bad clusters Kueue may name another).
/// Of clientcmd's own checks on the current context, those needing no
/// file are made (context and cluster found, the user's credentials
/// consistent); opening the client certificate and key files, and the exec
/// plugin allowlist, are not.
pub fn validate(kubeconfig: &[u8]) -> Result<(), KubeconfigError> {
    let cfg: Config = if kubeconfig.iter().all(u8::is_ascii_whitespace) {
        // clientcmd.Load reads nothing as an empty config.
        Config::default()
    } else {
        serde_yaml::from_slice::<Option<Config>>(kubeconfig)
            .map_err(|e| KubeconfigError::Parse(e.to_string()))?
            .unwrap_or_default()
    };
    let clusters = by_name(cfg.clusters);
    let users = by_name(cfg.users);
    let contexts = by_name(cfg.contexts);
    // Go decodes the certificate data while loading.
    let data = clusters
        .iter()
        .map(|(_, c)| ("certificate-authority-data", &c.certificate_authority_data))
        .chain(users.iter().flat_map(|(_, u)| {
            [
                ("client-certificate-data", &u.client_certificate_data),
                ("client-key-data", &u.client_key_data),
            ]
        }));
    for (field, value) in data {
        if !value.is_empty() {
            base64::engine::general_purpose::STANDARD
                .decode(value)
                .map_err(|e| KubeconfigError::Parse(format!("{field}: {e}")))?;
        }
    }
    // A token is allowed (service account tokens); a token file is not.
    if users.iter().any(|(_, u)| !u.token_file.is_empty()) {
        return Err(KubeconfigError::TokenFile);
    }
    for (name, c) in &clusters {
        if c.insecure_skip_tls_verify {
            return Err(KubeconfigError::InsecureSkipTlsVerify(name.clone()));
        }
        if !c.certificate_authority.is_empty() {
            return Err(KubeconfigError::CertificateAuthorityFile(name.clone()));
        }
        if c.server.is_empty() {
            return Err(KubeconfigError::NoServer(name.clone()));
        }
    }

    // clientcmd.RESTConfigFromKubeConfig: the current context's user and
    // cluster (ConfirmUsable's errors, aggregated as Go prints them).
    let mut errs: Vec<String> = Vec::new();
    let context = find(&contexts, &cfg.current_context);
    if !cfg.current_context.is_empty() && context.is_none() {
        errs.push(format!(
            "context was not found for specified context: {}",
            cfg.current_context
        ));
    }
    let no_context = Context::default();
    let context = context.unwrap_or(&no_context);
    let no_user = User::default();
    let user = find(&users, &context.user).unwrap_or(&no_user);
    errs.extend(auth_info_errors(&context.user, user));
    // Every listed cluster has a server by now: only a missing one is empty.
    const EMPTY_CLUSTER: &str = "cluster has no server defined";
    let no_cluster = Cluster::default();
    let cluster = find(&clusters, &context.cluster).unwrap_or_else(|| {
        errs.push(EMPTY_CLUSTER.into());
        &no_cluster
    });
    match errs.as_slice() {
        [] => {}
        // A direct client config whose only fault is no cluster has none.
        [only] if only == EMPTY_CLUSTER => {
            return Err(KubeconfigError::Unusable(
                "no configuration has been provided, try setting KUBERNETES_MASTER environment variable".into(),
            ))
        }
        _ => return Err(KubeconfigError::Unusable(aggregate(&errs))),
    }
    validate_rest_config(
        &RestConfig {
            host: cluster.server.clone(),
            bearer_token_file: user.token_file.clone(),
            username: user.username.clone(),
            password: user.password.clone(),
            exec_provider: user.exec.is_some(),
            auth_provider: user.auth_provider.is_some(),
        },
        false,
    )?;
    Ok(())
}

/// `isValidHostname`: the URL's host (port dropped) is an IP address or a
/// DNS subdomain. Go's `url.Parse` and `net.SplitHostPort`, as far as a
/// server URL needs them: a URL without a scheme has no host.
fn is_valid_hostname(server: &str) -> bool {
    let host = url_host(server).unwrap_or_default();
    let host = split_host_port(host).unwrap_or(host);
    host.parse::<std::net::IpAddr>().is_ok() || crate::vocabulary::names::is_dns1123_subdomain(host)
}

/// The authority's host part of `scheme://[userinfo@]host[:port][/...]`.
fn url_host(url: &str) -> Option<&str> {
    let colon = url.find(':')?;
    let scheme = &url[..colon];
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return None;
    }
    let rest = url[colon + 1..].strip_prefix("//")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    Some(match authority.rfind('@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    })
}

/// Go's `net.SplitHostPort`, the host only; `None` where Go errs.
fn split_host_port(hostport: &str) -> Option<&str> {
    if let Some(rest) = hostport.strip_prefix('[') {
        let close = rest.find(']')?;
        let after = &rest[close + 1..];
        return after.starts_with(':').then_some(&rest[..close]);
    }
    let colon = hostport.rfind(':')?;
    let host = &hostport[..colon];
    (!host.contains(':')).then_some(host)
}

/// The directory a `locationType: Path` kubeconfig must be under when
/// the MultiKueueKubeConfigPathValidation gate is on.
pub const DEFAULT_PATH_PREFIX: &str = "/etc/multikueue/kubeconfigs";

/// Why a kubeconfig path is refused (`validateKubeConfigPath`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("kubeconfig path must not be empty")]
    Empty,
    #[error("kubeconfig path is not under the allowed prefix: path contains \"..\"")]
    DotDot,
    #[error("kubeconfig path is not under the allowed prefix: path must be absolute")]
    Relative,
    /// The path (after following symlinks, when that worked) and the
    /// prefix, both as Go prints them with `%q`.
    #[error("kubeconfig path is not under the allowed prefix: {path:?} is not under {prefix:?}")]
    NotUnder { path: String, prefix: String },
    /// The filesystem's error on following the path's symlinks.
    #[error("cannot resolve kubeconfig path symlinks: {0}")]
    Unresolvable(String),
}

/// `validateKubeConfigPath`: the file to read for a `locationType: Path`
/// kubeconfig. With the gate off (Kueue v0.19.2's default: the gate is
/// alpha) any path is taken as given. `resolve` follows a path's symlinks
/// (Go's `filepath.EvalSymlinks`: the path, or the filesystem's error);
/// the prefix is taken as absolute.
pub fn validate_path(
    raw: &str,
    allowed_prefix: &str,
    gate_enabled: bool,
    resolve: impl Fn(&str) -> Result<String, String>,
) -> Result<String, PathError> {
    if !gate_enabled {
        return Ok(raw.to_string());
    }
    if raw.is_empty() {
        return Err(PathError::Empty);
    }
    let cleaned = clean(raw);
    // Only a relative path keeps a ".." once cleaned.
    if cleaned.split('/').any(|c| c == "..") {
        return Err(PathError::DotDot);
    }
    if !cleaned.starts_with('/') {
        return Err(PathError::Relative);
    }
    // No prefix directory: no kubeconfig can be under it.
    let Ok(prefix) = resolve(allowed_prefix) else {
        return Err(PathError::NotUnder {
            path: cleaned,
            prefix: clean(allowed_prefix),
        });
    };
    let resolved = resolve(&cleaned).map_err(PathError::Unresolvable)?;
    // With a separator at the end, /etc/kueue does not take in
    // /etc/kueue-other.
    if !format!("{resolved}/").starts_with(&format!("{prefix}/")) {
        return Err(PathError::NotUnder {
            path: resolved,
            prefix,
        });
    }
    Ok(resolved)
}

/// Go's `filepath.Clean` on Unix paths.
pub fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let rooted = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            p => out.push(p),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// The manager's Secrets, by the fields the controller reads: the
/// kubeconfig under key `kubeconfig`, or Kueue's message when the key is
/// missing.
pub fn from_secret<'a>(
    secret_name: &str,
    data: &'a BTreeMap<String, Vec<u8>>,
) -> Result<&'a [u8], String> {
    data.get(crate::api::kueue::v1beta2::MULTIKUEUE_CONFIG_SECRET_KEY)
        .map(Vec::as_slice)
        .ok_or_else(|| format!("key \"kubeconfig\" not found in secret {secret_name:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What upstream's `TestKubeConfigWrapper` writes through
    /// `clientcmd.Write`: cluster `test` at https://10.10.10.10 with CA
    /// data `-----`, an empty user `u`, context `test-context`, current.
    fn base(cluster_extra: &str, user: &str) -> String {
        format!(
            "apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS0=
    server: https://10.10.10.10{cluster_extra}
  name: test
contexts:
- context:
    cluster: test
    user: u
  name: test-context
current-context: test-context
kind: Config
preferences: {{}}
users:
- name: u
  user: {user}
"
        )
    }

    /// TestValidateKubeconfig (multikueuecluster_test.go), its four cases.
    #[test]
    fn validate_kubeconfig_upstream_cases() {
        let cases: [(&str, String, Option<KubeconfigError>); 4] = [
            (
                "tokenFile not allowed",
                base("", "\n    tokenFile: /tmp/tokenfile"),
                Some(KubeconfigError::TokenFile),
            ),
            (
                "insecure skip-tls",
                base("\n    insecure-skip-tls-verify: true", "{}"),
                Some(KubeconfigError::InsecureSkipTlsVerify("test".into())),
            ),
            (
                "certificate-authority file disallowed",
                base("\n    certificate-authority: /tmp/ca", "{}"),
                Some(KubeconfigError::CertificateAuthorityFile("test".into())),
            ),
            ("valid config", base("", "{}"), None),
        ];
        for (name, text, want) in cases {
            assert_eq!(validate(text.as_bytes()).err(), want, "{name}");
        }
    }

    #[test]
    fn messages_are_kueues() {
        assert_eq!(
            KubeconfigError::InsecureSkipTlsVerify("w1".into()).to_string(),
            "insecure TLS verification is not allowed for cluster w1"
        );
        assert_eq!(
            KubeconfigError::CertificateAuthorityFile("w1".into()).to_string(),
            "certificate-authority file paths are not allowed, use certificate-authority-data for cluster w1"
        );
        assert_eq!(
            KubeconfigError::NoServer("w1".into()).to_string(),
            "server URL is required for cluster w1"
        );
        assert_eq!(
            KubeconfigError::from(RestConfigError::UntrustedServer).to_string(),
            "untrusted server endpoint"
        );
    }

    /// Beyond upstream's table; every expected message here was checked
    /// against a Go run of upstream's validateKubeconfig on the same text
    /// (client-go v0.36.2).
    #[test]
    fn what_the_rest_config_rules_refuse() {
        let with_user = |user: &str| validate(base("", user).as_bytes()).err();
        assert_eq!(
            with_user("\n    username: admin\n    password: secret"),
            Some(RestConfigError::BasicAuth.into())
        );
        assert_eq!(
            with_user("\n    exec:\n      command: gcloud\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never"),
            Some(RestConfigError::ExecPlugin.into())
        );
        // clientcmd refuses an incomplete exec plugin before Kueue sees it.
        assert_eq!(
            with_user("\n    exec:\n      command: gcloud\n      apiVersion: client.authentication.k8s.io/v1")
                .map(|e| e.to_string()),
            Some("invalid configuration: interactiveMode must be specified for u to use exec authentication plugin".into())
        );
        assert_eq!(
            with_user("\n    token: abc\n    username: admin").map(|e| e.to_string()),
            Some("invalid configuration: more than one authentication method found for u; found [token basicAuth], only one is allowed".into())
        );
        assert_eq!(
            with_user("\n    as-groups: [a]").map(|e| e.to_string()),
            Some("invalid configuration: requesting uid, groups or user-extra for u without impersonating a user".into())
        );
        assert_eq!(
            with_user("\n    client-certificate-data: LS0tLS0=").map(|e| e.to_string()),
            Some("invalid configuration: client-key-data or client-key must be specified for u to use the clientCert authentication method.".into())
        );
        assert_eq!(
            with_user("\n    auth-provider:\n      name: oidc"),
            Some(RestConfigError::AuthProvider.into())
        );
        assert_eq!(with_user("\n    token: abc"), None);
        let no_server = base("", "{}").replace("    server: https://10.10.10.10\n", "");
        assert_eq!(
            validate(no_server.as_bytes()).err(),
            Some(KubeconfigError::NoServer("test".into()))
        );
        // A ClusterProfile's access plugin may be an exec plugin.
        let exec = RestConfig {
            host: "https://worker.example.com".into(),
            exec_provider: true,
            ..Default::default()
        };
        assert_eq!(validate_rest_config(&exec, true), Ok(()));
        assert_eq!(
            validate_rest_config(&exec, false),
            Err(RestConfigError::ExecPlugin)
        );
    }

    /// Checked against Go's isValidHostname on the same strings.
    #[test]
    fn server_hosts_as_go_reads_them() {
        for (server, ok) in [
            ("https://10.10.10.10", true),
            ("https://10.10.10.10:6443", true),
            ("https://[::1]:6443", true),
            // SplitHostPort fails without a port; "[::1]" is no IP.
            ("https://[::1]", false),
            ("https://Worker.Example.com:443/path", true),
            ("https://user@worker.example.com", true),
            ("worker.example.com:6443", false),
            ("worker.example.com", false),
            ("https://", false),
            ("https://under_score.example.com", false),
        ] {
            let c = RestConfig {
                host: server.into(),
                ..Default::default()
            };
            assert_eq!(validate_rest_config(&c, false).is_ok(), ok, "{server}");
        }
    }

    /// Messages checked against a Go run of validateKubeconfig (client-go
    /// v0.36.2); a YAML reader's own detail after `failed to parse
    /// kubeconfig(apiconfig): ` is serde's, not Go's.
    #[test]
    fn unusable_kubeconfigs_are_refused_as_clientcmd_refuses_them() {
        assert_eq!(
            validate(b"").err(),
            Some(KubeconfigError::Unusable(
                "no configuration has been provided, try setting KUBERNETES_MASTER environment variable".into()
            ))
        );
        let other =
            base("", "{}").replace("current-context: test-context", "current-context: gone");
        assert_eq!(
            validate(other.as_bytes()).err().map(|e| e.to_string()),
            Some("invalid configuration: [context was not found for specified context: gone, cluster has no server defined]".into())
        );
        let no_context = base("", "{}").replace("current-context: test-context\n", "");
        assert_eq!(
            validate(no_context.as_bytes()).err().map(|e| e.to_string()),
            Some("invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable".into())
        );
        assert!(matches!(
            validate(b"clusters: 7").err(),
            Some(KubeconfigError::Parse(_))
        ));
        let bad_ca = base("", "{}").replace("LS0tLS0=", "not base64!");
        assert!(matches!(
            validate(bad_ca.as_bytes()).err(),
            Some(KubeconfigError::Parse(_))
        ));
    }

    #[test]
    fn go_clean() {
        for (raw, want) in [
            ("", "."),
            ("/a/b/../c", "/a/c"),
            ("/../etc", "/etc"),
            ("a/../../b", "../b"),
            ("relative/path/file", "relative/path/file"),
            ("//a//b/", "/a/b"),
            ("/", "/"),
        ] {
            assert_eq!(clean(raw), want, "{raw}");
        }
    }

    /// A filesystem for the path rules: directories and files that exist
    /// (symlinks followed to their targets), as `filepath.EvalSymlinks`
    /// sees them.
    fn fs(
        entries: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Result<String, String> {
        move |p: &str| {
            entries
                .iter()
                .find(|(k, _)| *k == p)
                .map(|(_, v)| v.to_string())
                .ok_or_else(|| {
                    format!(
                        "lstat {}: no such file or directory",
                        p.rsplit_once('/').map_or(p, |(d, _)| d)
                    )
                })
        }
    }

    /// TestValidateKubeConfigPath (multikueuecluster_test.go), its nine
    /// cases, upstream's temporary directories given fixed names: the
    /// allowed directory /tmp/allowed with worker.kubeconfig and
    /// escape-symlink (to /tmp/other/external-secret) in it.
    #[test]
    fn validate_kube_config_path_upstream_cases() {
        const ALLOWED: &str = "/tmp/allowed";
        let files = fs(&[
            ("/tmp/allowed", "/tmp/allowed"),
            (
                "/tmp/allowed/worker.kubeconfig",
                "/tmp/allowed/worker.kubeconfig",
            ),
            ("/tmp/allowed/escape-symlink", "/tmp/other/external-secret"),
            ("/tmp/other/external-secret", "/tmp/other/external-secret"),
        ]);
        let cases: [(&str, &str, &str, bool, Option<&str>); 9] = [
            (
                "safe FG disabled allows any path (legacy)",
                "/any/arbitrary/path",
                ALLOWED,
                false,
                None,
            ),
            (
                "valid path under prefix",
                "/tmp/allowed/worker.kubeconfig",
                ALLOWED,
                true,
                None,
            ),
            ("empty path", "", ALLOWED, true, Some("must not be empty")),
            (
                // filepath.Join cleans it to /tmp/etc/passwd, which does
                // not exist.
                "path with dot-dot traversal",
                "/tmp/allowed/../etc/passwd",
                ALLOWED,
                true,
                Some("cannot resolve kubeconfig path symlinks"),
            ),
            (
                "path outside prefix",
                "/var/run/secrets/kubernetes.io/serviceaccount/token",
                ALLOWED,
                true,
                Some("cannot resolve kubeconfig path symlinks"),
            ),
            (
                "relative path rejected",
                "relative/path/file",
                ALLOWED,
                true,
                Some("must be absolute"),
            ),
            (
                "symlink escape rejected",
                "/tmp/allowed/escape-symlink",
                ALLOWED,
                true,
                Some("not under"),
            ),
            (
                "SA token path rejected",
                "/var/run/secrets/kubernetes.io/serviceaccount/token",
                "/etc/multikueue/kubeconfigs",
                true,
                Some("not under"),
            ),
            (
                // /etc/kueue-other should not match prefix /etc/kueue
                "prefix name collision",
                "/etc/kueue-other/file",
                "/etc/kueue",
                true,
                Some("not under"),
            ),
        ];
        for (name, path, prefix, gate, want) in cases {
            let got = validate_path(path, prefix, gate, &files);
            match want {
                None => assert!(got.is_ok(), "{name}: {got:?}"),
                Some(words) => {
                    let err = got.expect_err(name).to_string();
                    assert!(err.contains(words), "{name}: {err:?} lacks {words:?}");
                }
            }
        }
        assert_eq!(
            validate_path("/tmp/allowed/worker.kubeconfig", ALLOWED, true, &files),
            Ok("/tmp/allowed/worker.kubeconfig".into())
        );
        assert_eq!(
            validate_path("/tmp/allowed/escape-symlink", ALLOWED, true, &files)
                .unwrap_err()
                .to_string(),
            "kubeconfig path is not under the allowed prefix: \"/tmp/other/external-secret\" is not under \"/tmp/allowed\""
        );
        // A ".." survives cleaning only in a relative path.
        assert_eq!(
            validate_path("../kubeconfig", ALLOWED, true, &files),
            Err(PathError::DotDot)
        );
    }

    #[test]
    fn a_secret_without_the_kubeconfig_key() {
        let data = BTreeMap::from([("config".to_string(), b"x".to_vec())]);
        assert_eq!(
            from_secret("worker1", &data),
            Err("key \"kubeconfig\" not found in secret \"worker1\"".into())
        );
        let data = BTreeMap::from([("kubeconfig".to_string(), b"x".to_vec())]);
        assert_eq!(from_secret("worker1", &data), Ok(&b"x"[..]));
    }
}
