// SPDX-License-Identifier: MIT OR Apache-2.0
//! GPU lane: real NVDEC output (`nvh264dec`), `cudaupload` output and NVMM test frames go
//! through rsstreammux -> rstrtinfer -> rsosd without a single copy of pixels between host and
//! device (the elements' `pixel-copies` counters stay 0 while `gpu-frames` counts every frame),
//! and the detections equal those of the same frames pre-processed on the CPU. Also measures
//! the end-to-end latency of a batch from the muxer's output to rsosd's output.
//!
//! Ignored on machines without a GPU; `scripts/gpu-check.sh` runs them with `--include-ignored`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrostream_core::BatchMeta;
use ferrostream_core::cuda::{Transfers, transfers};
use ferrostream_tests::{gpu, init, media, quoted, repo_root};
use gst::prelude::*;

/// What a pipeline run left behind.
struct Run {
    /// (source id, frame number, class id, box) of every object, sorted.
    objects: Vec<(u32, u64, i32, [i32; 4])>,
    frames: usize,
    counters: HashMap<String, u64>,
    /// Milliseconds from the muxer's output to rsosd's output, per batch.
    latencies: Vec<f64>,
    /// Bytes Ferrostream copied between host and device during the run (the CUDA layer's
    /// process-wide trace; the tests of this binary run one at a time).
    transfers: Transfers,
}

/// Runs `description` to EOS; the elements named `infer` and `osd` (when present) report their
/// counters, the element named `mux` and `osd` bracket the latency.
fn run(description: &str) -> Run {
    run_with(description, |_| {})
}

/// As [`run`], calling `prepare` on the pipeline before it starts.
fn run_with(description: &str, prepare: impl FnOnce(&gst::Pipeline)) -> Run {
    init();
    let pipeline = gst::parse::launch(description)
        .unwrap_or_else(|e| panic!("{description}: {e}"))
        .downcast::<gst::Pipeline>()
        .unwrap();
    prepare(&pipeline);
    let objects = Arc::new(Mutex::new(Vec::new()));
    let frames = Arc::new(Mutex::new(0usize));
    let sent: Arc<Mutex<HashMap<Option<gst::ClockTime>, Instant>>> = Arc::default();
    let latencies = Arc::new(Mutex::new(Vec::new()));
    if let Some(mux) = pipeline.by_name("mux") {
        let sent = sent.clone();
        mux.static_pad("src")
            .unwrap()
            .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
                if let Some(b) = info.buffer() {
                    sent.lock().unwrap().insert(b.pts(), Instant::now());
                }
                gst::PadProbeReturn::Ok
            });
    }
    let last: gst::Element = pipeline
        .by_name("osd")
        .or_else(|| pipeline.by_name("infer"))
        .unwrap();
    {
        let (objects, frames, sent, latencies) = (
            objects.clone(),
            frames.clone(),
            sent.clone(),
            latencies.clone(),
        );
        last.static_pad("src")
            .unwrap()
            .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
                let Some(b) = info.buffer() else {
                    return gst::PadProbeReturn::Ok;
                };
                if let Some(t) = sent.lock().unwrap().remove(&b.pts()) {
                    latencies
                        .lock()
                        .unwrap()
                        .push(t.elapsed().as_secs_f64() * 1e3);
                }
                if let Some(meta) = b.meta::<BatchMeta>() {
                    for f in &meta.batch().frames {
                        *frames.lock().unwrap() += 1;
                        for o in &f.objects {
                            let r = |v: f32| v.round() as i32;
                            objects.lock().unwrap().push((
                                f.source_id,
                                f.frame_num,
                                o.class_id,
                                [
                                    r(o.bbox().left),
                                    r(o.bbox().top),
                                    r(o.bbox().width),
                                    r(o.bbox().height),
                                ],
                            ));
                        }
                    }
                }
                gst::PadProbeReturn::Ok
            });
    }
    let bus = pipeline.bus().unwrap();
    let before = transfers();
    if pipeline.set_state(gst::State::Playing).is_err() {
        let error = bus
            .timed_pop_filtered(gst::ClockTime::from_seconds(1), &[gst::MessageType::Error])
            .map(|m| match m.view() {
                gst::MessageView::Error(e) => format!("{} ({:?})", e.error(), e.debug()),
                _ => unreachable!(),
            });
        panic!("{description}: cannot start: {error:?}");
    }
    let msg = bus
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(120),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("EOS within 120 s");
    if let gst::MessageView::Error(e) = msg.view() {
        panic!("{description}: {} ({:?})", e.error(), e.debug());
    }
    let mut counters = HashMap::new();
    for name in ["infer", "osd"] {
        if let Some(e) = pipeline.by_name(name) {
            for prop in ["gpu-frames", "pixel-copies"] {
                counters.insert(format!("{name}.{prop}"), e.property::<u64>(prop));
            }
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let transfers = transfers().since(before);
    let mut objects = std::mem::take(&mut *objects.lock().unwrap());
    objects.sort();
    let frames = *frames.lock().unwrap();
    let latencies = std::mem::take(&mut *latencies.lock().unwrap());
    Run {
        objects,
        frames,
        counters,
        latencies,
        transfers,
    }
}

fn infer() -> String {
    format!(
        "rstrtinfer name=infer config-file-path={} batch-size=4",
        quoted(&repo_root().join("pipelines/coco_ssd.txt"))
    )
}

/// Checks the zero-copy counters of a GPU run of `frames` frames.
/// Bytes of the network input of `pipelines/coco_ssd.txt` (u8, 3x300x300) per frame: what
/// rstrtinfer copies to the CPU engine.
const TENSOR_BYTES: u64 = 3 * 300 * 300;

/// Checks that `frames` frames of `frame_bytes` bytes each went through on the GPU: the elements
/// count every frame as drawn and inferred in device memory, and the trace of host<->device
/// copies holds exactly one network input per frame towards the host (the CPU engine's) and,
/// towards the device, only draw lists, glyphs and descriptors: far less than one frame's pixels
/// per frame.
fn assert_zero_copy(run: &Run, frames: usize, frame_bytes: u64, what: &str) {
    assert_eq!(run.frames, frames, "{what}: frames out");
    if cuda_engine() {
        // The engine reads the tensor on the GPU; only the selected anchors' rows come back.
        assert!(
            run.transfers.to_host < frames as u64 * TENSOR_BYTES / 20,
            "{what}: {} bytes copied to the host for {frames} frames (device engine: only \
             selected rows should come back)",
            run.transfers.to_host
        );
        assert_eq!(
            run.transfers.between_contexts, 0,
            "{what}: the frames were not in the engine's context"
        );
    } else {
        assert_eq!(
            run.transfers.to_host,
            frames as u64 * TENSOR_BYTES,
            "{what}: bytes copied to the host are the network inputs, nothing else"
        );
    }
    assert!(
        run.transfers.to_device < frames as u64 * frame_bytes / 4,
        "{what}: {} bytes copied to the device for {frames} frames of {frame_bytes} bytes",
        run.transfers.to_device
    );
    for name in ["infer", "osd"] {
        assert_eq!(
            run.counters[&format!("{name}.gpu-frames")],
            frames as u64,
            "{what}: {name} frames on the GPU"
        );
        assert_eq!(
            run.counters[&format!("{name}.pixel-copies")],
            0,
            "{what}: {name} pixel copies"
        );
    }
    println!(
        "GPU-RESULT {what}_frames_on_gpu {frames} frames (pixel copies 0; copied to host {} B, \
         to device {} B, between contexts {} B; {})",
        run.transfers.to_host,
        run.transfers.to_device,
        run.transfers.between_contexts,
        if cuda_engine() {
            "device engine: selected rows only"
        } else {
            "host engine: network inputs"
        }
    );
}

/// Whether the installed ONNX Runtime runs the COCO model on the CUDA provider (then rstrtinfer
/// takes the device path: input in place, selection on the GPU).
fn cuda_engine() -> bool {
    use gst_trtinfer::config::Device;
    use gst_trtinfer::engine::onnxruntime::{OrtEngine, OrtOptions};
    static CUDA: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CUDA.get_or_init(|| {
        OrtEngine::open(&OrtOptions::new(
            ferrostream_tests::model("coco_ssdlite_mobilenet_v2.onnx"),
            Device::Cuda,
        ))
        .is_ok()
    })
}

/// Whether test `name` can run: a GPU (see [`gpu`]) and ONNX Runtime's CUDA provider; says why
/// not, and fails when `FERROSTREAM_REQUIRE_CUDA_ENGINE` is set and the provider is missing.
fn gpu_with_cuda_engine(name: &str) -> bool {
    if gpu(name).is_none() {
        return false;
    }
    if !cuda_engine() {
        assert!(
            std::env::var_os("FERROSTREAM_REQUIRE_CUDA_ENGINE").is_none(),
            "FERROSTREAM_REQUIRE_CUDA_ENGINE is set but ONNX Runtime has no CUDA provider here"
        );
        println!("skipped: the installed ONNX Runtime has no CUDA provider");
        return false;
    }
    true
}

/// Runs two 30-frame sources of `format` at `size` (`src(i)` links source i to `mux.sink_i`)
/// through rsstreammux -> rstrtinfer -> rsosd and checks that all 60 frames stayed on the GPU.
fn run_two_sources(src: &dyn Fn(u32) -> String, format: &str, size: (u64, u64), what: &str) {
    let run = run(&format!(
        "rsstreammux name=mux batch-size=2 ! {} ! rsosd name=osd ! fakesink sync=false {}{}",
        infer(),
        src(0),
        src(1)
    ));
    let pixels = size.0 * size.1;
    let frame_bytes = if format == "NV12" {
        pixels * 3 / 2
    } else {
        pixels * 4
    };
    assert_zero_copy(&run, 60, frame_bytes, what);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

#[test]
#[ignore = "needs a CUDA GPU with NVDEC; run by scripts/gpu-check.sh"]
fn nvdec_frames_stay_on_the_gpu_and_detect_like_the_cpu() {
    if gpu("nvdec_frames_stay_on_the_gpu_and_detect_like_the_cpu").is_none() {
        return;
    }
    let video = quoted(&media("carphone_pristine.mp4"));
    let sources = |download: &str| {
        (0..4)
            .map(|i| {
                format!(
                    "filesrc location={video} ! qtdemux ! h264parse ! nvh264dec {download} ! mux.sink_{i} "
                )
            })
            .collect::<String>()
    };
    let tail = format!(
        "rsstreammux name=mux batch-size=4 ! {} ! rsosd name=osd ! fakesink sync=false ",
        infer()
    );
    let gpu_run = run(&format!("{tail} {}", sources("")));
    let frames = gpu_run.frames;
    assert_eq!(frames, 4 * 120, "carphone has 120 frames");
    // carphone is 176x144 NV12.
    assert_zero_copy(&gpu_run, frames, 176 * 144 * 3 / 2, "nvh264dec");
    // The same decoded frames, downloaded and pre-processed on the CPU.
    let cpu_run = run(&format!(
        "{tail} {}",
        sources("! cudadownload ! video/x-raw")
    ));
    assert_eq!(cpu_run.counters["infer.gpu-frames"], 0);
    assert!(!gpu_run.objects.is_empty(), "no detections on carphone");
    assert_eq!(
        gpu_run.objects, cpu_run.objects,
        "GPU and CPU pre-processing detect differently"
    );
    println!(
        "GPU-RESULT nvh264dec_detections_equal_cpu {} objects in {frames} frames",
        gpu_run.objects.len()
    );
    println!(
        "GPU-RESULT e2e_batch_latency_4x_nvdec {:.2} ms (median mux->osd of {} batches; CPU engine)",
        median(gpu_run.latencies.clone()),
        gpu_run.latencies.len()
    );
}

/// Detections of `objects` that `reference` has too: same source, frame and class, box within
/// 2 pixels on every side (the CPU and CUDA providers round differently).
fn matched(
    objects: &[(u32, u64, i32, [i32; 4])],
    reference: &[(u32, u64, i32, [i32; 4])],
) -> usize {
    objects
        .iter()
        .filter(|o| {
            reference.iter().any(|r| {
                (r.0, r.1, r.2) == (o.0, o.1, o.2)
                    && r.3.iter().zip(o.3).all(|(a, b)| (a - b).abs() <= 2)
            })
        })
        .count()
}

#[test]
#[ignore = "needs a CUDA GPU with NVDEC and ONNX Runtime's GPU build; run by scripts/gpu-check.sh"]
fn cuda_engine_in_one_context_detects_like_the_cpu_engine() {
    if !gpu_with_cuda_engine("cuda_engine_in_one_context_detects_like_the_cpu_engine") {
        return;
    }
    let video = quoted(&media("carphone_pristine.mp4"));
    let config = quoted(&repo_root().join("pipelines/coco_ssd.txt"));
    let pipeline = |device: &str, download: &str| {
        let sources: String = (0..4)
            .map(|i| {
                format!(
                    "filesrc location={video} ! qtdemux ! h264parse ! nvh264dec name=dec{i} \
                     {download} ! mux.sink_{i} "
                )
            })
            .collect();
        format!(
            "rsstreammux name=mux batch-size=4 ! rstrtinfer name=infer config-file-path={config} \
             batch-size=4 device={device} ! fakesink sync=false {sources}"
        )
    };
    // Device path: NVDEC frames in the engine's context, pre-processed into the engine's input,
    // anchors selected on the GPU.
    let device = run(&pipeline("cuda", ""));
    assert_eq!(device.frames, 480);
    assert_eq!(device.counters["infer.gpu-frames"], 480);
    assert_eq!(device.transfers.between_contexts, 0, "one CUDA context");
    let per_batch = device.transfers.to_host as f64 / 120.0;
    // The whole outputs of a batch of 4 are 2.9 MB; the selected rows (384 bytes an anchor)
    // are a few kilobytes.
    assert!(
        per_batch < 65_536.0,
        "{per_batch} bytes to the host per batch of 4 (the whole outputs are 2.9 MB)"
    );
    // Host path of the same engine: frames downloaded, pre-processed on the CPU, outputs read
    // back whole and parsed on the CPU: the same detections, exactly.
    let host = run(&pipeline("cuda", "! cudadownload ! video/x-raw"));
    assert_eq!(host.counters["infer.gpu-frames"], 0);
    assert!(!device.objects.is_empty(), "no detections on carphone");
    assert_eq!(
        device.objects, host.objects,
        "GPU selection and CPU parsing of the same engine differ"
    );
    // Frames in a CUDA context of their own (as when a decoder made its context before the
    // engine offered one): the tensor crosses contexts device to device, never through the host.
    let foreign = run_with(&pipeline("cuda", ""), |p| {
        let ctx = ferrostream_core::cuda::gst_cuda::private_context(0).expect("a CUDA context");
        for i in 0..4 {
            p.by_name(&format!("dec{i}")).unwrap().set_context(&ctx);
        }
    });
    assert_eq!(
        foreign.transfers.between_contexts,
        480 * TENSOR_BYTES,
        "one tensor copy between contexts per frame"
    );
    assert!(foreign.transfers.to_host < 120 * 65_536);
    assert_eq!(foreign.objects, device.objects);
    // The CPU provider on the same frames: the providers round differently, so boxes may move
    // by a pixel and a borderline score may cross the threshold, rarely.
    let cpu = run(&pipeline("cpu", "! cudadownload ! video/x-raw"));
    let common = matched(&device.objects, &cpu.objects);
    assert!(
        common * 100 >= cpu.objects.len().max(device.objects.len()) * 95,
        "CUDA and CPU providers: {common} of {} / {} detections match",
        device.objects.len(),
        cpu.objects.len()
    );
    println!(
        "GPU-RESULT cuda_engine_one_context {} objects in 480 frames equal to the host path; {:.0} B \
         to the host per batch of 4; between contexts 0 B",
        device.objects.len(),
        per_batch
    );
    println!(
        "GPU-RESULT cuda_engine_foreign_context {} B copied device to device ({} per frame), {} B \
         to the host",
        foreign.transfers.between_contexts, TENSOR_BYTES, foreign.transfers.to_host
    );
    println!(
        "GPU-RESULT cuda_vs_cpu_provider {common} of {} / {} detections match (2 px)",
        device.objects.len(),
        cpu.objects.len()
    );
}

/// On SIGSEGV, prints where (the crashing thread's stack) before dying: the GPU machine has no
/// debugger. Not async-signal-safe; good enough to find a crash.
fn print_backtrace_on_crash() {
    extern "C" fn on_segv(_: libc::c_int) {
        eprintln!(
            "SIGSEGV in thread {:?}:\n{}",
            std::thread::current().name(),
            std::backtrace::Backtrace::force_capture()
        );
        std::process::abort();
    }
    // SAFETY: installs a handler for SIGSEGV; the handler only prints and aborts.
    unsafe {
        libc::signal(libc::SIGSEGV, on_segv as *const () as libc::sighandler_t);
    }
}

/// Reliability on the GPU lane: the device's primary context (the one every element shares)
/// is reset under a running CUDA pipeline. What must happen: an error message naming the
/// failure, or the stream going on; never a hang or a crash, and the pipeline stops.
#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn a_lost_gpu_context_is_a_clear_error_not_a_hang() {
    if gpu("a_lost_gpu_context_is_a_clear_error_not_a_hang").is_none() {
        return;
    }
    // In a process of its own: the reset would pull the context from under the other tests.
    if !ferrostream_tests::is_child() {
        let (ok, out) =
            ferrostream_tests::run_in_child("a_lost_gpu_context_is_a_clear_error_not_a_hang", &[]);
        println!("{out}");
        assert!(ok, "the child run failed (a crash shows here as a signal)");
        return;
    }
    init();
    print_backtrace_on_crash();
    let desc = format!(
        "videotestsrc num-buffers=100000 ! video/x-raw,format=NV12,width=640,height=480 \
         ! cudaupload ! video/x-raw(memory:CUDAMemory) ! mux.sink_0 \
         rsstreammux name=mux batch-size=1 ! {} ! rsosd name=osd ! appsink name=sink sync=false",
        infer()
    );
    let pipeline = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let sink: gst_app::AppSink = ferrostream_tests::element(&pipeline, "sink");
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    for _ in 0..30 {
        sink.try_pull_sample(gst::ClockTime::from_seconds(30))
            .expect("frames before the reset");
    }
    // SAFETY: plain driver calls; resetting the primary context is the fault under test.
    let reset = unsafe {
        let mut device = 0;
        cudarc::driver::sys::cuDeviceGet(&mut device, 0);
        cudarc::driver::sys::cuDevicePrimaryCtxReset_v2(device)
    };
    let started = Instant::now();
    let mut frames_after = 0;
    let outcome = loop {
        if let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
            let gst::MessageView::Error(e) = msg.view() else {
                unreachable!()
            };
            break format!("error: {}", e.error());
        }
        match sink.try_pull_sample(gst::ClockTime::from_mseconds(100)) {
            Some(_) => frames_after += 1,
            None if sink.is_eos() => break "end of stream".to_string(),
            None => {}
        }
        if frames_after >= 300 {
            break "the stream went on".to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "neither an error nor frames 30 s after the reset ({frames_after} frames): a hang"
        );
    };
    // Stopping must not hang either.
    let (tx, rx) = std::sync::mpsc::channel();
    let p = pipeline.clone();
    std::thread::spawn(move || {
        let _ = p.set_state(gst::State::Null);
        let _ = tx.send(());
    });
    assert!(
        rx.recv_timeout(Duration::from_secs(30)).is_ok(),
        "setting the pipeline to NULL after the reset hangs"
    );
    println!(
        "GPU-RESULT lost_context_outcome {frames_after} frames after the reset (reset returned \
         {reset:?}); {outcome}"
    );
    assert!(
        outcome.starts_with("error") || frames_after >= 300,
        "{outcome}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU with NVDEC; run by scripts/gpu-check.sh"]
fn rsurisrcbin_gives_nvdec_frames_in_cuda_memory() {
    if gpu("rsurisrcbin_gives_nvdec_frames_in_cuda_memory").is_none() {
        return;
    }
    // uridecodebin inside decodes H.264 with nvh264dec (the GPU check's bundle has no software
    // H.264 decoder; elsewhere GST_PLUGIN_FEATURE_RANK=nvh264dec:MAX makes it the choice) and
    // gives CUDA memory because rsstreammux takes it.
    let uri = gst::glib::filename_to_uri(media("carphone_pristine.mp4"), None).unwrap();
    let run = run(&format!(
        "rsstreammux name=mux batch-size=2 ! {} ! rsosd name=osd ! fakesink sync=false \
         rsurisrcbin uri={uri} ! mux.sink_0 rsurisrcbin uri={uri} ! mux.sink_1",
        infer()
    ));
    assert_zero_copy(&run, 2 * 120, 176 * 144 * 3 / 2, "rsurisrcbin");
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn cudaupload_frames_stay_on_the_gpu() {
    if gpu("cudaupload_frames_stay_on_the_gpu").is_none() {
        return;
    }
    for format in ["NV12", "RGBA"] {
        let src = |i: u32| {
            format!(
                "videotestsrc num-buffers=30 pattern={} ! video/x-raw,format={format},width=1280,height=720 ! cudaupload ! video/x-raw(memory:CUDAMemory) ! mux.sink_{i} ",
                ["ball", "smpte"][i as usize]
            )
        };
        run_two_sources(&src, format, (1280, 720), &format!("cudaupload_{format}"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn nvmm_test_frames_stay_on_the_gpu() {
    if gpu("nvmm_test_frames_stay_on_the_gpu").is_none() {
        return;
    }
    init();
    assert!(
        gst::ElementFactory::find("rsnvmmtestsrc").is_some(),
        "rsnvmmtestsrc is registered in CUDA builds"
    );
    for (format, abi) in [("NV12", "ds7"), ("RGBA", "ds8")] {
        let src = |i: u32| {
            format!(
                "rsnvmmtestsrc num-buffers=30 abi={abi} ! video/x-raw(memory:NVMM),format={format},width=1920,height=1080 ! mux.sink_{i} "
            )
        };
        run_two_sources(&src, format, (1920, 1080), &format!("nvmm_{format}_{abi}"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn secondary_crops_cut_on_the_gpu_equal_the_cpu() {
    if gpu("secondary_crops_cut_on_the_gpu_equal_the_cpu").is_none() {
        return;
    }
    // messi5.jpg through the COCO detector, then two secondary elements: the identity model
    // (its output is each object's pre-processed crop) and MobileNetV2. Once from system
    // memory, once from CUDA memory: crops cut on the GPU must equal the CPU's exactly.
    let pipeline = |format: &str, upload: &str| {
        format!(
            "filesrc location={} ! jpegdec ! videoconvert ! video/x-raw,format={format} {upload} \
             ! rstrtinfer config-file-path={} \
             ! rstrtinfer name=crops onnx-file={} process-mode=secondary network-type=other \
               output-tensor-meta=true gie-unique-id=5 model-color-format=bgr offsets=\"10;20;30\" \
               maintain-aspect-ratio=true symmetric-padding=true \
             ! rstrtinfer name=sgie config-file-path={} gie-unique-id=6 ! appsink name=sink",
            quoted(&media("messi5.jpg")),
            quoted(&repo_root().join("pipelines/coco_ssd.txt")),
            quoted(&repo_root().join("tests/fixtures/identity_crop.onnx")),
            quoted(&repo_root().join("pipelines/imagenet_secondary.txt")),
        )
    };
    for format in ["NV12", "RGBA"] {
        let cpu = ferrostream_tests::run_pipeline(&pipeline(format, ""), Duration::from_secs(120))
            .unwrap();
        let mut counters = Vec::new();
        let gpu_out = ferrostream_tests::run_pipeline_inspect(
            &pipeline(format, "! cudaupload ! video/x-raw(memory:CUDAMemory)"),
            usize::MAX,
            Duration::from_secs(120),
            |p| {
                for name in ["crops", "sgie"] {
                    let e = p.by_name(name).unwrap();
                    counters.push((
                        e.property::<u64>("gpu-frames"),
                        e.property::<u64>("pixel-copies"),
                    ));
                }
            },
        )
        .unwrap();
        let (cpu, gpu_frame) = (&cpu.frames[0], &gpu_out.frames[0]);
        assert!(cpu.objects.len() >= 2, "{:?}", cpu.objects);
        assert_eq!(cpu.objects.len(), gpu_frame.objects.len());
        let mut values = 0;
        for (c, g) in cpu.objects.iter().zip(&gpu_frame.objects) {
            assert_eq!(
                (&c.label, c.bbox()),
                (&g.label, g.bbox()),
                "same detections"
            );
            let tensor = |o: &ferrostream_core::Object| match o.attributes.get("tensor:5:pixels") {
                Some(ferrostream_core::AttributeValue::Floats(v)) => v.clone(),
                other => panic!("no crop tensor: {other:?}"),
            };
            let (tc, tg) = (tensor(c), tensor(g));
            let worst = tc
                .iter()
                .zip(&tg)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert_eq!(
                worst, 0.0,
                "{format} {}: GPU crop differs by {worst}",
                c.label
            );
            values += tc.len();
            let class = |o: &ferrostream_core::Object| {
                let r = o
                    .classifications
                    .iter()
                    .find(|r| r.component_id == 6)
                    .unwrap();
                (r.label.clone(), r.prob)
            };
            // Two sessions of the classifier: cuDNN picks its algorithms per session by timing
            // (and cuda-tuning may choose channels-last), so the probabilities agree closely,
            // not bit for bit; the crops themselves are compared exactly above.
            let ((lc, pc), (lg, pg)) = (class(c), class(g));
            assert_eq!(lc, lg);
            assert!((pc - pg).abs() < 1e-3, "{pc} {pg}");
        }
        let objects = cpu.objects.len() as u64;
        assert_eq!(
            counters,
            vec![(objects, 0), (objects, 0)],
            "{format}: crops on the GPU"
        );
        println!(
            "GPU-RESULT secondary_crops_{format}_exact {objects} objects cut on the GPU ({values} \
             tensor values, max abs error 0; classifications equal; pixel copies 0)"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU and ONNX Runtime's GPU build; run by scripts/gpu-check.sh"]
fn parser_families_read_device_outputs_like_host_outputs() {
    if !gpu_with_cuda_engine("parser_families_read_device_outputs_like_host_outputs") {
        return;
    }
    // Outputs only known at the first inference (symbolic dims), end-to-end rows, instance
    // masks from prototypes and a class map: the device path (frames in CUDA memory, outputs
    // read back by the engine's stream) gives exactly the metadata of the host path.
    let fixtures = [
        ("tf_od_api_symbolic.onnx", ""),
        ("end_to_end_symbolic.onnx", ""),
        (
            "yolov8_seg_constant.onnx",
            "network-type=instance-segmentation",
        ),
        ("segmentation_constant.onnx", "network-type=segmentation"),
    ];
    for (model, keys) in fixtures {
        let path = quoted(&repo_root().join("tests/fixtures").join(model));
        let run = |upload: &str| {
            ferrostream_tests::run_pipeline(
                &format!(
                    "videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=128,height=128 \
                     {upload} ! rstrtinfer name=infer onnx-file={path} device=cuda \
                     pre-cluster-threshold=0.5 segmentation-threshold=0.5 {keys} \
                     ! appsink name=sink"
                ),
                Duration::from_secs(120),
            )
            .unwrap_or_else(|e| panic!("{model}: {e}"))
            .frames
        };
        let device = run("! cudaupload ! video/x-raw(memory:CUDAMemory)");
        let host = run("");
        assert_eq!(device.len(), 3, "{model}");
        assert!(
            device
                .iter()
                .all(|f| !f.objects.is_empty() || f.segmentation.is_some()),
            "{model}: nothing found"
        );
        let meta = |frames: &[ferrostream_core::Frame]| {
            frames
                .iter()
                .map(|f| (f.objects.clone(), f.segmentation.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            meta(&device),
            meta(&host),
            "{model}: device and host paths differ"
        );
        println!("GPU-RESULT parser_family {model}: device path equals host path");
    }
}

/// The objects `pipelines/CONFIG` finds on the JPEG image `image` on one CUDA engine, with the
/// frame in CUDA memory (pre-processing and the selection of anchors on the GPU, the selected
/// rows decoded on the host) and in system memory.
fn device_and_host_objects(
    image: &str,
    config: &str,
) -> (Vec<ferrostream_core::Object>, Vec<ferrostream_core::Object>) {
    let run = |upload: &str| {
        let mut frames = ferrostream_tests::run_pipeline(
            &format!(
                "filesrc location={} ! jpegdec ! videoconvert ! video/x-raw,format=RGBA {upload} \
                 ! rstrtinfer config-file-path={} device=cuda ! appsink name=sink",
                quoted(&media(image)),
                quoted(&repo_root().join("pipelines").join(config)),
            ),
            Duration::from_secs(120),
        )
        .unwrap()
        .frames;
        assert!(!frames.is_empty(), "no frame from {image}");
        frames.swap_remove(0).objects
    };
    (
        run("! cudaupload ! video/x-raw(memory:CUDAMemory)"),
        run(""),
    )
}

#[test]
#[ignore = "needs a CUDA GPU and ONNX Runtime's GPU build; run by scripts/gpu-check.sh"]
fn pose_keypoints_on_the_device_path_equal_the_host_path() {
    if !gpu_with_cuda_engine("pose_keypoints_on_the_device_path_equal_the_host_path") {
        return;
    }
    // The trained YOLO11n-pose on messi5.jpg: frames in CUDA memory (pre-processing and the
    // selection of anchors on the GPU, the selected rows decoded on the host) against frames in
    // system memory on the same engine. Its input is f32, which the two pre-processings give
    // within 1e-3 (not bit for bit): the people, boxes and keypoints must agree to a fraction
    // of a pixel.
    let (d, h) = &device_and_host_objects("messi5.jpg", "yolo11_pose.txt");
    assert!(!d.is_empty(), "nobody found");
    assert_eq!(d.len(), h.len(), "device {d:#?} host {h:#?}");
    let mut worst: f32 = 0.0;
    for (a, b) in d.iter().zip(h) {
        assert_eq!(a.class_id, b.class_id);
        assert!((a.confidence - b.confidence).abs() < 0.01);
        let (ka, kb) = (a.keypoints.as_ref().unwrap(), b.keypoints.as_ref().unwrap());
        assert_eq!(ka.points.len(), 17);
        for (p, q) in ka.points.iter().zip(&kb.points) {
            assert_eq!(p.name, q.name);
            let distance = (p.x - q.x).hypot(p.y - q.y);
            worst = worst.max(distance);
            assert!(distance < 0.5, "{p:?} on the device, {q:?} on the host");
            assert!((p.confidence - q.confidence).abs() < 0.01);
        }
    }
    println!(
        "GPU-RESULT pose_device_path {} people, 17 keypoints each; largest keypoint difference \
         {worst:.4} px (device vs host pre-processing)",
        d.len()
    );
}

#[test]
#[ignore = "needs a CUDA GPU and ONNX Runtime's GPU build; run by scripts/gpu-check.sh"]
fn oriented_boxes_on_the_device_path_equal_the_host_path() {
    if !gpu_with_cuda_engine("oriented_boxes_on_the_device_path_equal_the_host_path") {
        return;
    }
    // The trained YOLOv8n-OBB on the marina photo: frames in CUDA memory (pre-processing and
    // the selection of anchors on the GPU, the selected rows decoded on the host) against frames
    // in system memory on the same engine; the boxes, angles and corners must agree.
    let (d, h) = &device_and_host_objects("marina_obb.jpg", "yolov8_obb.txt");
    assert!(d.len() >= 100, "{} boxes on the device", d.len());
    // Boxes near the thresholds may fall either way with pre-processing differences of 1e-3:
    // every confident box of one path is matched in the other.
    let (mut worst_angle, mut worst_corner, mut compared) = (0.0f32, 0.0f32, 0);
    for a in d.iter().filter(|o| o.confidence >= 0.5) {
        let centre = |o: &ferrostream_core::Object| {
            let b = o.bbox();
            [b.left + b.width / 2.0, b.top + b.height / 2.0]
        };
        let [x, y] = centre(a);
        let b = h
            .iter()
            .filter(|o| o.class_id == a.class_id)
            .min_by(|p, q| {
                let dist =
                    |o: &ferrostream_core::Object| (centre(o)[0] - x).hypot(centre(o)[1] - y);
                dist(p).total_cmp(&dist(q))
            })
            .unwrap_or_else(|| panic!("{a:#?} has no match on the host"));
        // As boxes: a quarter turn apart (the sides swapped) is the same rectangle, its corners
        // listed from another one.
        let turn = (a.angle.unwrap() - b.angle.unwrap()).rem_euclid(std::f32::consts::FRAC_PI_2);
        let angle = turn.min(std::f32::consts::FRAC_PI_2 - turn);
        let corner = a
            .corners()
            .iter()
            .map(|p| {
                b.corners()
                    .iter()
                    .map(|q| (p[0] - q[0]).hypot(p[1] - q[1]))
                    .fold(f32::INFINITY, f32::min)
            })
            .fold(0.0f32, f32::max);
        assert!(
            angle < 0.01 && corner < 0.5,
            "{a:#?} on the device, {b:#?} on the host"
        );
        worst_angle = worst_angle.max(angle);
        worst_corner = worst_corner.max(corner);
        compared += 1;
    }
    println!(
        "GPU-RESULT obb_device_path {compared} oriented boxes; largest angle difference \
         {worst_angle:.5} rad, largest corner difference {worst_corner:.4} px (device vs host \
         pre-processing)"
    );
}

/// Applications (the Python package, C) map a frame in CUDA memory through the plugin's C ABI:
/// they get the device address, pitch and shape of the very memory `cudaupload` produced (no
/// copy), and those bytes are the frame's pixels.
#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn applications_map_cuda_frames_in_place() {
    use ferrostream_abi::{FsFrameMap, memory, status};
    use gstferrostream::capi::{ferrostream_frame_map, ferrostream_frame_unmap};
    if gpu("applications_map_cuda_frames_in_place").is_none() {
        return;
    }
    init();
    let pipeline = gst::parse::launch(
        "videotestsrc num-buffers=1 pattern=smpte ! video/x-raw,format=RGBA,width=322,height=240 \
         ! tee name=t t. ! queue ! appsink name=host t. ! queue ! cudaupload \
         ! video/x-raw(memory:CUDAMemory) ! appsink name=dev",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let pull = |name: &str| {
        pipeline
            .by_name(name)
            .unwrap()
            .emit_by_name::<Option<gst::Sample>>(
                "try-pull-sample",
                &[&gst::ClockTime::from_seconds(60)],
            )
            .unwrap_or_else(|| panic!("no frame from {name}"))
    };
    let (host, dev) = (pull("host"), pull("dev"));
    let host_buffer = host.buffer().unwrap().map_readable().unwrap();
    let host_info = gst_video::VideoInfo::from_caps(host.caps().unwrap()).unwrap();
    let buffer = dev.buffer_owned().unwrap();
    let caps = dev.caps_owned().unwrap();
    let mut map = FsFrameMap::default();
    let mut error = std::ptr::null_mut();
    // SAFETY: a live buffer and caps; `map` and `error` are locals.
    let code = unsafe {
        ferrostream_frame_map(
            buffer.as_ptr() as *mut _,
            caps.as_ptr() as *const _,
            0,
            0,
            &mut map,
            &mut error,
        )
    };
    assert_eq!(code, status::OK, "mapping the CUDA frame");
    assert_eq!(map.memory, memory::CUDA);
    assert_eq!(map.gpu_id, 0);
    assert_eq!(
        (map.n_planes, map.rows[0], map.cols[0], map.channels[0]),
        (1, 240, 322, 4)
    );
    let pitch = map.strides[0] as usize;
    let mut ctx = ferrostream_core::cuda::gst_cuda::ContextTracker::default();
    let context = ctx
        .context_of(buffer.as_ref())
        .expect("cudaupload's context");
    let _bound = context.bind().unwrap();
    let mut device_bytes = vec![0u8; pitch * 240];
    // SAFETY: the mapped plane holds `pitch * rows` bytes at this device address, in the bound
    // context.
    unsafe {
        cudarc::driver::result::memcpy_dtoh_sync(&mut device_bytes, map.data[0]).unwrap();
    }
    for row in 0..240 {
        let h = &host_buffer[row * host_info.stride()[0] as usize..][..322 * 4];
        assert_eq!(&device_bytes[row * pitch..][..322 * 4], h, "row {row}");
    }
    // SAFETY: filled by ferrostream_frame_map; a second unmap is a no-op.
    unsafe {
        ferrostream_frame_unmap(&mut map);
        ferrostream_frame_unmap(&mut map);
    }
    assert!(map.handle.is_null());
    drop(host_buffer);
    pipeline.set_state(gst::State::Null).unwrap();
}
