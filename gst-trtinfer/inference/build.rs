// SPDX-License-Identifier: MIT OR Apache-2.0
//! Builds the shim that calls nvinfer custom parser libraries (`nvdsinfer/fs_nvdsparse.cpp`,
//! always: it needs only the system C++ compiler), and the TensorRT shim
//! (`tensorrt/fs_trt.cpp`) when the `tensorrt` feature is on.
//!
//! The TensorRT headers are taken from `TENSORRT_ROOT/include`, else from the standard locations
//! of JetPack (`/usr/include/aarch64-linux-gnu`) and of NVIDIA's x86 packages
//! (`/usr/include/x86_64-linux-gnu`, `/usr/local/TensorRT/include`). With
//! `FERROSTREAM_TENSORRT_COMPILE_CHECK=1` the shim is compiled against Ferrostream's own
//! declarations of the API (`tensorrt/api/`, TensorRT 10.x) instead: a compile check for machines
//! without the SDK, whose shim never loads TensorRT.
//!
//! The shim supports TensorRT 10.x and 11.x. The headers' version (their `NvInferVersion.h`) is
//! checked here and passed to the crate as `FERROSTREAM_TENSORRT_HEADERS` (`11.1.0`) and
//! `FERROSTREAM_TENSORRT_MAJOR` (`11`, the `libnvinfer.so.N` to load).
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
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    /// TensorRT major versions the shim compiles against (`tensorrt/fs_trt.cpp`).
    const SUPPORTED_MAJORS: &[u32] = &[10, 11];

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
                    "the `tensorrt` feature needs the TensorRT 10.x or 11.x SDK headers \
                     (NvInfer.h, NvOnnxParser.h): set TENSORRT_ROOT to the SDK, or install them \
                     in one of {}; FERROSTREAM_TENSORRT_COMPILE_CHECK=1 compiles against \
                     Ferrostream's own API declarations instead (a compile check: that build \
                     cannot run TensorRT)",
                    STANDARD_INCLUDE_DIRS.join(", ")
                )
            })
    }

    /// NV_TENSORRT_MAJOR, _MINOR and _PATCH of a NvInferVersion.h. Each may name another macro
    /// of the file: TensorRT 10.16 and 11.x define NV_TENSORRT_MAJOR as TRT_MAJOR_ENTERPRISE.
    fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
        let defines: HashMap<&str, &str> = text
            .lines()
            .filter_map(|line| {
                let line = line.trim_start().strip_prefix('#')?.trim_start();
                let mut words = line.strip_prefix("define")?.split_whitespace();
                Some((words.next()?, words.next()?))
            })
            .collect();
        let number = |name: &str| {
            let mut value = *defines.get(name)?;
            for _ in 0..4 {
                if let Ok(n) = value.parse() {
                    return Some(n);
                }
                value = defines.get(value)?;
            }
            None
        };
        Some((
            number("NV_TENSORRT_MAJOR")?,
            number("NV_TENSORRT_MINOR")?,
            number("NV_TENSORRT_PATCH")?,
        ))
    }

    /// The TensorRT version of the headers in `include`, which the shim must support.
    fn header_version(include: &Path) -> (u32, u32, u32) {
        let file = include.join("NvInferVersion.h");
        println!("cargo:rerun-if-changed={}", file.display());
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "cannot read {} to learn the TensorRT headers' version: {e}",
                file.display()
            )
        });
        let version = parse_version(&text).unwrap_or_else(|| {
            panic!(
                "{} does not define NV_TENSORRT_MAJOR, NV_TENSORRT_MINOR and NV_TENSORRT_PATCH",
                file.display()
            )
        });
        let (major, minor, patch) = version;
        if !SUPPORTED_MAJORS.contains(&major) {
            panic!(
                "the TensorRT headers in {} are TensorRT {major}.{minor}.{patch}; Ferrostream's \
                 TensorRT shim supports the major versions {SUPPORTED_MAJORS:?}: set \
                 TENSORRT_ROOT to such an SDK",
                include.display()
            );
        }
        version
    }

    pub fn build() {
        for var in ["TENSORRT_ROOT", "FERROSTREAM_TENSORRT_COMPILE_CHECK"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        for file in [
            "tensorrt/fs_trt.cpp",
            "tensorrt/fs_trt.h",
            "tensorrt/api/NvInfer.h",
            "tensorrt/api/NvInferVersion.h",
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
        let (major, minor, patch) = header_version(&include);
        build
            .cpp(true)
            .std("c++17")
            .file("tensorrt/fs_trt.cpp")
            .include("tensorrt")
            .warnings(true)
            .extra_warnings(true)
            // TensorRT 10.x deprecates setInt8Calibrator (10.1) and BuilderFlag::kFP16/kINT8
            // (10.12), still its way to build FP16 and calibrated INT8 engines; the shim's 11.x
            // path uses nothing deprecated.
            .flag_if_supported("-Wno-deprecated-declarations")
            .compile("fs_trt");
        println!("cargo:rustc-link-lib=dl");
        println!("cargo:rustc-env=FS_TRT_INCLUDE_DIR={}", include.display());
        println!("cargo:rustc-env=FERROSTREAM_TENSORRT_HEADERS={major}.{minor}.{patch}");
        println!("cargo:rustc-env=FERROSTREAM_TENSORRT_MAJOR={major}");
    }
}
