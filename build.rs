//! Embeds every file in policies/ into the binary as the default integration
//! policies, so adding a job kind needs a new YAML file and no Rust.
use std::{env, fs, path::Path};

fn main() {
    let dir = Path::new("policies");
    println!("cargo:rerun-if-changed=policies");
    let mut files: Vec<_> = fs::read_dir(dir)
        .expect("policies/ directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    files.sort();
    let mut out = String::from("/// (file name, contents) of every policy shipped in policies/.\npub const EMBEDDED: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 file name");
        // The path is made when the crate compiles, not here: a target
        // directory shared by two checkouts (the image build's is) may keep
        // this output from the other one, whose absolute paths are gone.
        out.push_str(&format!(
            "    ({name:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/policies/\", {name:?}))),\n"
        ));
    }
    out.push_str("];\n");
    let dest = Path::new(&env::var("OUT_DIR").expect("OUT_DIR")).join("embedded_policies.rs");
    fs::write(dest, out).expect("write embedded_policies.rs");
}
