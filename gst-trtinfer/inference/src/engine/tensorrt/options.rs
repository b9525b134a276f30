// SPDX-License-Identifier: MIT OR Apache-2.0
//! How rstrtinfer's settings become a TensorRT build: precision flags, DLA, workspace and the
//! optimisation profile over the batch dimension.

use std::path::PathBuf;

use crate::config::{NetworkMode, TensorRtSettings};

/// nvinfer1::BuilderFlag values (REFERENCE: TensorRT 10.x; on 11.x the shim reads FP16 and INT8
/// as precision requests, those flags being gone there).
pub const FLAG_FP16: u32 = 0;
pub const FLAG_INT8: u32 = 1;
pub const FLAG_GPU_FALLBACK: u32 = 3;

/// Everything that decides what engine a build produces (besides the model and the GPU).
#[derive(Debug, Clone, PartialEq)]
pub struct BuildOptions {
    pub precision: NetworkMode,
    pub int8_calibration_cache: Option<PathBuf>,
    pub workspace_bytes: u64,
    /// Batch sizes the engine accepts: 1..=max_batch (models with a dynamic batch dimension).
    pub max_batch: u32,
    pub dla_core: Option<u32>,
    pub gpu_fallback: bool,
}

impl BuildOptions {
    /// The build for `settings` and engine calls of up to `batch_size` frames. Settings that
    /// cannot work together are errors naming them.
    pub fn new(settings: &TensorRtSettings, batch_size: u32) -> Result<Self, String> {
        if settings.enable_dla && settings.network_mode == NetworkMode::Fp32 {
            return Err(
                "enable-dla: the DLA runs FP16 or INT8 only; set network-mode to fp16 \
                        (2) or int8 (1)"
                    .into(),
            );
        }
        if settings.int8_calib_file.is_some() && settings.network_mode != NetworkMode::Int8 {
            return Err(format!(
                "int8-calib-file is set but network-mode is {:?}; set network-mode=1 (INT8) or \
                 remove the calibration file",
                settings.network_mode
            ));
        }
        Ok(Self {
            precision: settings.network_mode,
            int8_calibration_cache: settings.int8_calib_file.clone(),
            workspace_bytes: settings.workspace_size as u64 * 1024 * 1024,
            max_batch: batch_size.max(1),
            dla_core: settings.enable_dla.then_some(settings.use_dla_core),
            gpu_fallback: settings.enable_dla && settings.allow_gpu_fallback,
        })
    }

    /// The nvinfer1::BuilderFlag bits to set. INT8 keeps FP16 allowed, so layers without INT8
    /// kernels (or without calibration data) run in FP16 rather than FP32, as nvinfer does.
    pub fn builder_flags(&self) -> u64 {
        let mut flags = 0u64;
        match self.precision {
            NetworkMode::Fp32 => {}
            NetworkMode::Fp16 => flags |= 1 << FLAG_FP16,
            NetworkMode::Int8 => flags |= (1 << FLAG_INT8) | (1 << FLAG_FP16),
        }
        if self.gpu_fallback {
            flags |= 1 << FLAG_GPU_FALLBACK;
        }
        flags
    }

    /// The optimisation profile of the batch dimension: (min, opt, max). The DLA runs fixed
    /// shapes only, so a DLA build has min = opt = max (partial batches are padded).
    pub fn batch_profile(&self) -> (i32, i32, i32) {
        let max = self.max_batch as i32;
        if self.dla_core.is_some() {
            (max, max, max)
        } else {
            (1, max, max)
        }
    }

    /// Short name of the precision, for file names and messages.
    pub fn precision_name(&self) -> &'static str {
        match self.precision {
            NetworkMode::Fp32 => "fp32",
            NetworkMode::Fp16 => "fp16",
            NetworkMode::Int8 => "int8",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(f: impl FnOnce(&mut TensorRtSettings)) -> TensorRtSettings {
        let mut s = TensorRtSettings::default();
        f(&mut s);
        s
    }

    #[test]
    fn precision_maps_to_builder_flags() {
        let fp32 = BuildOptions::new(&settings(|_| {}), 4).unwrap();
        assert_eq!(fp32.builder_flags(), 0);
        let fp16 = BuildOptions::new(&settings(|s| s.network_mode = NetworkMode::Fp16), 4);
        assert_eq!(fp16.unwrap().builder_flags(), 1 << FLAG_FP16);
        let int8 = BuildOptions::new(
            &settings(|s| {
                s.network_mode = NetworkMode::Int8;
                s.int8_calib_file = Some("cal.bin".into());
            }),
            4,
        )
        .unwrap();
        assert_eq!(int8.builder_flags(), 0b11);
        assert_eq!(int8.int8_calibration_cache, Some(PathBuf::from("cal.bin")));
        assert_eq!(int8.precision_name(), "int8");
    }

    #[test]
    fn dla_settings_map_to_core_and_fallback() {
        let dla = BuildOptions::new(
            &settings(|s| {
                s.network_mode = NetworkMode::Fp16;
                s.enable_dla = true;
                s.use_dla_core = 1;
            }),
            2,
        )
        .unwrap();
        assert_eq!(dla.dla_core, Some(1));
        assert_eq!(
            dla.builder_flags(),
            (1 << FLAG_FP16) | (1 << FLAG_GPU_FALLBACK)
        );
        let strict = BuildOptions::new(
            &settings(|s| {
                s.network_mode = NetworkMode::Int8;
                s.enable_dla = true;
                s.allow_gpu_fallback = false;
            }),
            2,
        )
        .unwrap();
        assert_eq!(strict.builder_flags() & (1 << FLAG_GPU_FALLBACK), 0);
        // GPU builds never carry the DLA fallback flag, nor a core.
        let gpu = BuildOptions::new(&settings(|s| s.use_dla_core = 1), 2).unwrap();
        assert_eq!((gpu.dla_core, gpu.builder_flags()), (None, 0));
    }

    #[test]
    fn workspace_and_batch_profile() {
        let o = BuildOptions::new(&settings(|s| s.workspace_size = 512), 8).unwrap();
        assert_eq!(o.workspace_bytes, 512 << 20);
        assert_eq!(o.batch_profile(), (1, 8, 8));
        let one = BuildOptions::new(&settings(|_| {}), 0).unwrap();
        assert_eq!(one.batch_profile(), (1, 1, 1));
        // The DLA runs fixed shapes: min = opt = max.
        let dla = BuildOptions::new(
            &settings(|s| {
                s.enable_dla = true;
                s.network_mode = NetworkMode::Fp16;
            }),
            4,
        )
        .unwrap();
        assert_eq!(dla.batch_profile(), (4, 4, 4));
    }

    #[test]
    fn impossible_combinations_are_errors() {
        let err = BuildOptions::new(&settings(|s| s.enable_dla = true), 1).unwrap_err();
        assert!(err.contains("FP16 or INT8"), "{err}");
        let err =
            BuildOptions::new(&settings(|s| s.int8_calib_file = Some("c".into())), 1).unwrap_err();
        assert!(err.contains("network-mode"), "{err}");
    }
}
