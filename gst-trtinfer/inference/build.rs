// SPDX-License-Identifier: MIT OR Apache-2.0
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
//!
//! TensorRT's headers include CUDA's (`cuda_runtime_api.h`), which JetPack and NVIDIA's CUDA
//! packages install outside the compiler's default path: they are taken from `CUDA_HOME/include`,
//! else `/usr/local/cuda/include`. Both SDKs are included as system headers, so warnings in
//! NVIDIA's headers (TensorRT 10.16 has unused parameters) do not fill the build log.

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

    /// Where CUDA's headers are, when the compiler does not find them by itself (`None`).
    fn cuda_include_dir(tensorrt: &Path) -> Result<Option<PathBuf>, String> {
        println!("cargo:rerun-if-env-changed=CUDA_HOME");
        let candidates: Vec<PathBuf> = std::env::var_os("CUDA_HOME")
            .map(|home| PathBuf::from(home).join("include"))
            .into_iter()
            .chain([PathBuf::from("/usr/local/cuda/include")])
            .collect();
        if let Some(dir) = candidates
            .iter()
            .find(|dir| dir.join("cuda_runtime_api.h").is_file())
        {
            return Ok(Some(dir.clone()));
        }
        if tensorrt.join("cuda_runtime_api.h").is_file()
            || Path::new("/usr/include/cuda_runtime_api.h").is_file()
        {
            return Ok(None);
        }
        Err(format!(
            "TensorRT's headers ({}) include CUDA's cuda_runtime_api.h, found in none of {}: \
             set CUDA_HOME to the CUDA toolkit",
            tensorrt.display(),
            candidates
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

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
        let mut build = cc::Build::new();
        let include = if compile_check {
            let api = PathBuf::from("tensorrt/api");
            build.include(&api);
            api
        } else {
            let sdk =
                sdk_include_dir().and_then(|sdk| cuda_include_dir(&sdk).map(|cuda| (sdk, cuda)));
            match sdk {
                Ok((sdk, cuda)) => {
                    build.flag("-isystem").flag(sdk.as_os_str());
                    if let Some(cuda) = cuda {
                        build.flag("-isystem").flag(cuda.as_os_str());
                    }
                    sdk
                }
                Err(message) => {
                    eprintln!("error: {message}");
                    std::process::exit(1);
                }
            }
        };
        build
            .cpp(true)
            .std("c++17")
            .file("tensorrt/fs_trt.cpp")
            .include("tensorrt")
            .warnings(true)
            .extra_warnings(true)
            // setInt8Calibrator is deprecated in TensorRT 10.1+, still the way to use a cache.
            .flag_if_supported("-Wno-deprecated-declarations")
            .compile("fs_trt");
        println!("cargo:rustc-link-lib=dl");
        println!("cargo:rustc-env=FS_TRT_INCLUDE_DIR={}", include.display());
    }
}
