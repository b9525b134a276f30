//! Builds the shim that calls nvinfer custom parser libraries (`nvdsinfer/fs_nvdsparse.cpp`,
//! always: it needs only the system C++ compiler), and the TensorRT shim
//! (`tensorrt/fs_trt.cpp`) when the `tensorrt` feature is on.
//!
//! The TensorRT headers are taken from `TENSORRT_ROOT/include`, else from the standard locations
//! of JetPack (`/usr/include/aarch64-linux-gnu`) and of NVIDIA's x86 packages
//! (`/usr/include/x86_64-linux-gnu`, `/usr/local/TensorRT/include`). With
//! `FERROSTREAM_TENSORRT_COMPILE_CHECK=1` the shim is compiled against Ferrostream's own
//! declarations of the API (`tensorrt/api/`) instead: a compile check for machines without the
//! SDK, whose shim never loads TensorRT.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    nvdsinfer_shim();
    #[cfg(feature = "tensorrt")]
    tensorrt::build();
}

fn nvdsinfer_shim() {
    for file in [
        "nvdsinfer/fs_nvdsparse.cpp",
        "nvdsinfer/fs_nvdsparse.h",
        "nvdsinfer/include/nvdsinfer.h",
        "nvdsinfer/include/nvdsinfer_custom_impl.h",
    ] {
        println!("cargo:rerun-if-changed={file}");
    }
    cc::Build::new()
        .cpp(true)
        .std("c++14")
        .file("nvdsinfer/fs_nvdsparse.cpp")
        .include("nvdsinfer")
        .include("nvdsinfer/include")
        .warnings(true)
        .extra_warnings(true)
        .compile("fs_nvdsparse");
}

#[cfg(feature = "tensorrt")]
mod tensorrt {
    use std::path::{Path, PathBuf};

    const STANDARD_INCLUDE_DIRS: &[&str] = &[
        "/usr/include/aarch64-linux-gnu",
        "/usr/include/x86_64-linux-gnu",
        "/usr/local/TensorRT/include",
        "/usr/include",
    ];

    fn sdk_include_dir() -> Result<PathBuf, String> {
        if let Some(root) = std::env::var_os("TENSORRT_ROOT") {
            let dir = Path::new(&root).join("include");
            return if dir.join("NvInfer.h").is_file() {
                Ok(dir)
            } else {
                Err(format!(
                    "TENSORRT_ROOT={} has no include/NvInfer.h",
                    Path::new(&root).display()
                ))
            };
        }
        STANDARD_INCLUDE_DIRS
            .iter()
            .map(PathBuf::from)
            .find(|dir| dir.join("NvInfer.h").is_file() && dir.join("NvOnnxParser.h").is_file())
            .ok_or_else(|| {
                format!(
                    "the `tensorrt` feature needs the TensorRT 10.x SDK headers (NvInfer.h, \
                     NvOnnxParser.h): set TENSORRT_ROOT to the SDK, or install them in one of {}; \
                     FERROSTREAM_TENSORRT_COMPILE_CHECK=1 compiles against Ferrostream's own API \
                     declarations instead (a compile check: that build cannot run TensorRT)",
                    STANDARD_INCLUDE_DIRS.join(", ")
                )
            })
    }

    pub fn build() {
        for var in ["TENSORRT_ROOT", "FERROSTREAM_TENSORRT_COMPILE_CHECK"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        for file in [
            "tensorrt/fs_trt.cpp",
            "tensorrt/fs_trt.h",
            "tensorrt/api/NvInfer.h",
            "tensorrt/api/NvOnnxParser.h",
        ] {
            println!("cargo:rerun-if-changed={file}");
        }
        let compile_check =
            std::env::var("FERROSTREAM_TENSORRT_COMPILE_CHECK").is_ok_and(|v| v == "1");
        let include = if compile_check {
            PathBuf::from("tensorrt/api")
        } else {
            match sdk_include_dir() {
                Ok(dir) => dir,
                Err(message) => {
                    eprintln!("error: {message}");
                    std::process::exit(1);
                }
            }
        };
        cc::Build::new()
            .cpp(true)
            .std("c++17")
            .file("tensorrt/fs_trt.cpp")
            .include("tensorrt")
            .include(&include)
            .warnings(true)
            .extra_warnings(true)
            // setInt8Calibrator is deprecated in TensorRT 10.1+, still the way to use a cache.
            .flag_if_supported("-Wno-deprecated-declarations")
            .compile("fs_trt");
        println!("cargo:rustc-link-lib=dl");
        println!("cargo:rustc-env=FS_TRT_INCLUDE_DIR={}", include.display());
    }
}
