//! The container image, assembled offline by tests/cluster/build-image.sh as
//! an OCI image layout, inspected as a runtime would read it: index →
//! manifest → config and layers, every blob checked against its digest. The
//! config must match the Dockerfile (entrypoint, command, user, ports) and
//! run as non-root; the one layer holds only /batchgate (no shell, nothing
//! else); the binary is static (no program interpreter) and runs, as the
//! image's user with an empty environment, from an empty directory.
//!
//! The test builds the image with `--profile dev` (an unoptimised static
//! binary: the same layout, a cheaper build); `make image` builds the release
//! image README describes. `BATCHGATE_IMAGE_LAYOUT=<dir>` inspects an
//! existing layout instead.

use std::{
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::OnceLock,
    time::{Duration, Instant},
};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const OCI_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// Runs build-image.sh with `args`; the last line it printed.
fn build_image(args: &[&str]) -> PathBuf {
    let out = Command::new("bash")
        .arg(format!("{ROOT}/tests/cluster/build-image.sh"))
        .args(args)
        .output()
        .expect("run tests/cluster/build-image.sh");
    assert!(
        out.status.success(),
        "build-image.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    PathBuf::from(stdout.lines().last().expect("a path").trim())
}

/// The layout, built once per test binary.
fn layout() -> PathBuf {
    static LAYOUT: OnceLock<PathBuf> = OnceLock::new();
    LAYOUT
        .get_or_init(|| match std::env::var_os("BATCHGATE_IMAGE_LAYOUT") {
            Some(dir) => PathBuf::from(dir),
            None => build_image(&["--profile", "dev"]),
        })
        .clone()
}

/// A blob by descriptor, its bytes checked against the digest and size.
fn blob(layout: &Path, desc: &Value) -> Vec<u8> {
    let digest = desc["digest"].as_str().expect("descriptor digest");
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    let bytes = std::fs::read(layout.join("blobs/sha256").join(hex)).unwrap();
    let actual = ring::digest::digest(&ring::digest::SHA256, &bytes);
    let actual: String = actual.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(actual, hex, "blob content does not match its digest");
    assert_eq!(
        desc["size"].as_u64(),
        Some(bytes.len() as u64),
        "{digest} size"
    );
    bytes
}

/// The JSON array of a Dockerfile instruction in exec form (`ENTRYPOINT ["/x"]`).
fn dockerfile_exec(dockerfile: &str, instruction: &str) -> Value {
    let line = last_instruction(dockerfile, instruction);
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{instruction} {line}: {e}"))
}

/// The arguments of the last `instruction` in the Dockerfile's final stage.
fn last_instruction(dockerfile: &str, instruction: &str) -> String {
    let stage = dockerfile
        .rsplit_once("\nFROM ")
        .map(|(_, s)| s)
        .unwrap_or(dockerfile);
    stage
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(&format!("{instruction} ")))
        .unwrap_or_else(|| panic!("no {instruction} in the Dockerfile's final stage"))
        .trim()
        .to_string()
}

/// Whether an ELF file asks for a program interpreter (PT_INTERP), i.e. is
/// dynamically linked. ELF64 little-endian only (the image is amd64).
fn has_interpreter(elf: &[u8]) -> bool {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not ELF64");
    assert_eq!(elf[5], 1, "not little-endian");
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    (0..phnum).any(|i| u32_at(phoff + i * phentsize) == 3)
}

#[test]
fn image_is_static_nonroot_shell_free_and_matches_the_dockerfile() {
    let layout = layout();
    let oci_layout: Value =
        serde_json::from_slice(&std::fs::read(layout.join("oci-layout")).unwrap()).unwrap();
    assert_eq!(oci_layout["imageLayoutVersion"], "1.0.0");
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let manifests = index["manifests"].as_array().expect("index.manifests");
    assert_eq!(manifests.len(), 1, "one image in the layout: {index}");
    assert_eq!(manifests[0]["mediaType"], OCI_MANIFEST);
    let ref_name = manifests[0]["annotations"]["org.opencontainers.image.ref.name"]
        .as_str()
        .unwrap_or("");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(ref_name, format!("batchgate:{version}"));

    let manifest: Value = serde_json::from_slice(&blob(&layout, &manifests[0])).unwrap();
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(manifest["config"]["mediaType"], OCI_CONFIG);
    let config: Value = serde_json::from_slice(&blob(&layout, &manifest["config"])).unwrap();
    let layers = manifest["layers"].as_array().expect("manifest.layers");
    assert_eq!(layers.len(), 1, "an empty base and one layer: {manifest}");
    assert_eq!(layers[0]["mediaType"], OCI_LAYER_GZIP);

    // The config: what the Dockerfile says, and never root.
    let dockerfile = std::fs::read_to_string(format!("{ROOT}/Dockerfile")).unwrap();
    let (from, _) = dockerfile.rsplit_once("\nFROM ").unwrap();
    let final_from = dockerfile[from.len() + 6..].lines().next().unwrap().trim();
    assert_eq!(
        final_from, "scratch",
        "the Dockerfile's image is on an empty base"
    );
    assert_eq!(config["os"], "linux");
    assert_eq!(config["architecture"], "amd64");
    let c = &config["config"];
    assert_eq!(c["Entrypoint"], dockerfile_exec(&dockerfile, "ENTRYPOINT"));
    assert_eq!(c["Entrypoint"], serde_json::json!(["/batchgate"]));
    assert_eq!(c["Cmd"], dockerfile_exec(&dockerfile, "CMD"));
    let user = c["User"].as_str().expect("config.User");
    assert_eq!(user, last_instruction(&dockerfile, "USER"));
    let (uid, gid) = user.split_once(':').expect("numeric user:group");
    let (uid, gid): (u32, u32) = (uid.parse().unwrap(), gid.parse().unwrap());
    assert!(uid != 0 && gid != 0, "runs as root: {user}");
    let mut exposed: Vec<String> = c["ExposedPorts"]
        .as_object()
        .expect("config.ExposedPorts")
        .keys()
        .cloned()
        .collect();
    exposed.sort();
    let mut expose: Vec<String> = last_instruction(&dockerfile, "EXPOSE")
        .split_whitespace()
        .map(|p| format!("{p}/tcp"))
        .collect();
    expose.sort();
    assert_eq!(exposed, expose, "EXPOSE in the Dockerfile");
    assert!(
        c["Env"].as_array().is_none_or(|e| e.is_empty()),
        "no environment (no PATH: there is nothing to search): {c}"
    );
    // The Deployment runs it as the image's user.
    let deployment = std::fs::read_to_string(format!("{ROOT}/manifests/deployment.yaml")).unwrap();
    assert!(deployment.contains(&format!("runAsUser: {uid}")));
    assert!(deployment.contains(&format!("runAsGroup: {gid}")));
    assert!(deployment.contains("readOnlyRootFilesystem: true"));

    // The layer: /batchgate and nothing else.
    let tmp = tempfile::tempdir().unwrap();
    let layer = tmp.path().join("layer.tar.gz");
    std::fs::write(&layer, blob(&layout, &layers[0])).unwrap();
    let list = Command::new("tar")
        .args(["--numeric-owner", "-tvzf"])
        .arg(&layer)
        .output()
        .unwrap();
    assert!(list.status.success(), "{list:?}");
    let list = String::from_utf8(list.stdout).unwrap();
    let entries: Vec<&str> = list.lines().collect();
    assert_eq!(entries.len(), 1, "one file in the layer:\n{list}");
    let fields: Vec<&str> = entries[0].split_whitespace().collect();
    assert_eq!(fields[0], "-r-xr-xr-x", "{list}");
    assert_eq!(fields[1], "0/0", "{list}");
    assert_eq!(fields.last(), Some(&"batchgate"), "{list}");
    for shell in ["sh", "bash", "ash", "dash", "busybox"] {
        assert!(
            !entries
                .iter()
                .any(|e| e.ends_with(&format!("/{shell}")) || e.ends_with(&format!(" {shell}"))),
            "a shell in the image:\n{list}"
        );
    }

    // The binary: static, and it runs as the image's user with nothing
    // around it (empty environment, an empty working directory).
    let root = tmp.path().join("rootfs");
    std::fs::create_dir(&root).unwrap();
    let st = Command::new("tar")
        .arg("-xzf")
        .arg(&layer)
        .arg("-C")
        .arg(&root)
        .status()
        .unwrap();
    assert!(st.success());
    let bin = root.join("batchgate");
    assert!(
        !has_interpreter(&std::fs::read(&bin).unwrap()),
        "the binary is dynamically linked"
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = tempfile::tempdir().unwrap();
    // The image's user writes certificates into a directory it owns.
    let st = Command::new("chown")
        .arg(format!("{uid}:{gid}"))
        .arg(out.path())
        .status()
        .unwrap();
    assert!(st.success());
    let as_user = |args: &[&str]| {
        let mut cmd = Command::new("setpriv");
        cmd.args([
            &format!("--reuid={uid}"),
            &format!("--regid={gid}"),
            "--clear-groups",
        ])
        .arg(&bin)
        .args(args)
        .env_clear()
        .current_dir(&empty);
        cmd.output().unwrap()
    };
    let v = as_user(&["--version"]);
    assert!(v.status.success(), "{v:?}");
    assert_eq!(
        String::from_utf8_lossy(&v.stdout).trim(),
        format!("batchgate {version}")
    );
    // Crypto (ring, rcgen) and file output work in the static binary.
    let certs = out.path().join("certs");
    let certs_s = certs.display().to_string();
    let made = as_user(&["certs", "--out", &certs_s]);
    assert!(made.status.success(), "{made:?}");
    let crt = std::fs::read_to_string(certs.join("tls.crt")).unwrap();
    assert!(crt.starts_with("-----BEGIN CERTIFICATE-----"), "{crt}");
    // The image's binary has no local control-plane launcher (`batchgate
    // dev` is a default feature the image is built without).
    let dev = as_user(&["dev", "--no-demo"]);
    assert!(!dev.status.success(), "{dev:?}");
    assert!(
        String::from_utf8_lossy(&dev.stderr).contains("unrecognized subcommand 'dev'"),
        "{dev:?}"
    );
}

/// README's push command, against a registry on loopback (crane's own, in
/// memory): what arrives is the layout's manifest and config, byte for byte.
#[test]
fn the_layout_pushes_to_a_registry_with_crane() {
    let layout = layout();
    let crane = build_image(&["--tools"]).join("crane");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    /// Stopped on drop, also when an assertion fails.
    struct Registry(std::process::Child);
    impl Drop for Registry {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _registry = Registry(
        Command::new(&crane)
            .args(["registry", "serve", "--address", &addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "crane's registry did not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
    let image = format!("{addr}/batchgate:test");
    let crane_out = |args: &[&str]| {
        let out = Command::new(&crane).args(args).output().unwrap();
        assert!(out.status.success(), "crane {args:?}: {out:?}");
        out.stdout
    };
    crane_out(&["push", "--insecure", &layout.display().to_string(), &image]);
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let manifest = blob(&layout, &index["manifests"][0]);
    let digest = String::from_utf8(crane_out(&["digest", "--insecure", &image])).unwrap();
    assert_eq!(digest.trim(), index["manifests"][0]["digest"]);
    assert_eq!(crane_out(&["manifest", "--insecure", &image]), manifest);
    let m: Value = serde_json::from_slice(&manifest).unwrap();
    assert_eq!(
        crane_out(&["config", "--insecure", &image]),
        blob(&layout, &m["config"])
    );
}
