// Records the git commit in the plugin version (gst-inspect-1.0 shows it).
fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=FERROSTREAM_COMMIT={commit}");
    println!("cargo:rerun-if-changed=build.rs");
}
