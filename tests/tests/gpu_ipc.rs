// SPDX-License-Identifier: MIT OR Apache-2.0
//! GPU lane: rsipcsink / rsipcsrc with frames in device memory. Batches of eight 1080p frames in
//! shareable memory reach a consumer process without a byte copied (the copy trace of both
//! processes) and with the producer's pixels; decoder frames (not shareable) are copied once on
//! the GPU and arrive intact; 50 consumers killed mid-stream leave the producer running and no
//! device memory lost (`cuMemGetInfo`).

use std::path::Path;
use std::time::{Duration, Instant};

use ferrostream_tests::ipc::{self, ConsumerProcess, Producer, WATCHDOG, surface_hashes, temp_dir};
use ferrostream_tests::{init, is_child, media, quoted};
use gst::prelude::*;

/// The consumers, run in child processes by the tests below.
#[test]
#[ignore = "run as a child process by the tests below"]
fn ipc_consumer() {
    if is_child() {
        ipc::run_consumer_child();
    }
}

#[test]
#[ignore = "run as a child process by the tests below"]
fn ipc_gpu_consumer() {
    if is_child() {
        ipc::run_gpu_consumer_child();
    }
}

/// Runs `producer` (an rsipcsink named ipc after a batch of NVMM or CUDA frames) with a GPU
/// consumer process; returns the producer's and the consumer's surface hashes and the
/// producer's copy trace.
fn gpu_round_trip(
    dir: &Path,
    producer: &str,
) -> (Vec<u64>, Vec<u64>, ferrostream_core::cuda::Transfers) {
    let socket = dir.join("gpu.sock");
    let out = dir.join("hashes.txt");
    // From before the producer prerolls: the probe's check downloads start there.
    let start = ferrostream_core::cuda::transfers();
    let producer = Producer::start(&format!("{producer} socket-path={}", quoted(&socket)));
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let checks = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    {
        let (sent, checks) = (sent.clone(), checks.clone());
        producer.sink.static_pad("sink").unwrap().add_probe(
            gst::PadProbeType::BUFFER,
            move |pad, info| {
                if let Some(buffer) = info.buffer() {
                    let caps = pad.current_caps().expect("negotiated");
                    let before = ferrostream_core::cuda::transfers();
                    sent.lock().unwrap().extend(surface_hashes(buffer, &caps));
                    checks.fetch_add(
                        ferrostream_core::cuda::transfers().since(before).to_host,
                        std::sync::atomic::Ordering::Relaxed,
                    );
                }
                gst::PadProbeReturn::Ok
            },
        );
    }
    let consumer = ConsumerProcess::spawn_test(
        "ipc_gpu_consumer",
        &[
            ("FS_IPC_SOCKET", socket.display().to_string()),
            ("FS_IPC_OUT", out.display().to_string()),
        ],
    );
    producer.wait_for_consumers(1);
    let warnings = producer.run_to_eos();
    let mut copied = ferrostream_core::cuda::transfers().since(start);
    copied.to_host -= checks.load(std::sync::atomic::Ordering::Relaxed);
    assert!(consumer.wait(WATCHDOG), "the GPU consumer process failed");
    assert!(warnings.is_empty(), "{warnings:?}");
    let received = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect();
    let sent = sent.lock().unwrap().clone();
    (sent, received, copied)
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn gpu_frames_in_batches_of_8_cross_to_a_consumer_process_without_a_copy() {
    if ferrostream_tests::gpu(
        "gpu_frames_in_batches_of_8_cross_to_a_consumer_process_without_a_copy",
    )
    .is_none()
    {
        return;
    }
    init();
    let dir = temp_dir("gpu-zero-copy");
    let sources: String = (0..8)
        .map(|i| {
            format!(
                "rsnvmmtestsrc num-buffers=12 pattern-seed={i} \
                 ! video/x-raw(memory:NVMM),format=NV12,width=1920,height=1080 ! m.sink_{i} "
            )
        })
        .collect();
    let (sent, received, copied) = gpu_round_trip(
        &dir,
        &format!("{sources} rsstreammux name=m batch-size=8 ! rsipcsink name=ipc sync=false"),
    );
    assert_eq!(sent.len(), 96, "12 batches of 8 frames");
    assert_eq!(received, sent, "the consumer's pixels are the producer's");
    let distinct: std::collections::HashSet<_> = sent.iter().collect();
    assert!(
        distinct.len() > 8,
        "the frames differ ({} distinct)",
        distinct.len()
    );
    assert_eq!(
        (
            copied.for_sharing,
            copied.to_host,
            copied.to_device,
            copied.between_contexts
        ),
        (0, 0, 0, 0),
        "no pixel was copied to share the frames"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs a CUDA GPU with NVDEC; run by scripts/gpu-check.sh"]
fn gpu_decoder_frames_are_copied_once_on_the_gpu_and_arrive_intact() {
    if ferrostream_tests::gpu("gpu_decoder_frames_are_copied_once_on_the_gpu_and_arrive_intact")
        .is_none()
    {
        return;
    }
    init();
    // nvh264dec's CUDA memory is not shareable: one device-to-device copy per frame into the
    // producer's shared slots, ordered by an IPC event the consumer waits on.
    let dir = temp_dir("gpu-copy");
    let video = quoted(&media("carphone_pristine.mp4"));
    let sources: String = (0..2)
        .map(|i| {
            format!(
                "filesrc location={video} ! qtdemux ! h264parse ! nvh264dec \
                 ! video/x-raw(memory:CUDAMemory),format=NV12 ! m.sink_{i} "
            )
        })
        .collect();
    let (sent, received, copied) = gpu_round_trip(
        &dir,
        &format!("{sources} rsstreammux name=m batch-size=2 ! rsipcsink name=ipc sync=false"),
    );
    assert!(sent.len() >= 100, "{} frames", sent.len());
    assert_eq!(received, sent, "the consumer's pixels are the producer's");
    // carphone is 176x144 NV12: at least the visible bytes of every frame, no host copy.
    assert!(copied.for_sharing >= sent.len() as u64 * 176 * 144 * 3 / 2);
    assert_eq!((copied.to_host, copied.to_device), (0, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn gpu_consumers_killed_50_times_leak_no_device_memory() {
    let Some(ctx) = ferrostream_tests::gpu("gpu_consumers_killed_50_times_leak_no_device_memory")
    else {
        return;
    };
    init();
    let dir = temp_dir("gpu-kill");
    let socket = dir.join("cam.sock");
    let producer = Producer::start(&format!(
        "rsnvmmtestsrc is-live=true ! video/x-raw(memory:NVMM),format=NV12,width=1920,height=1080,framerate=60/1 \
         ! rsipcsink name=ipc max-buffers=4 socket-path={}",
        quoted(&socket)
    ));
    producer.pipeline.set_state(gst::State::Playing).unwrap();
    let free = || ferrostream_core::cuda::shared::memory_info(&ctx).unwrap().0 as i64;
    let mut baseline = 0;
    for cycle in 0..50 {
        let out = dir.join(format!("c{cycle}.jsonl"));
        let consumer = ipc::spawn_consumer(&socket, &out, &[]);
        producer.wait_for_consumers(1);
        ipc::wait_for_frames(&out, 3);
        consumer.kill();
        producer.wait_for_consumers(0);
        if cycle == 4 {
            // Warm: the producer's pool and the driver's state have settled.
            std::thread::sleep(Duration::from_millis(500));
            baseline = free();
        }
    }
    // The killed processes' memory goes back to the driver as they are reaped; a leak stays.
    let tolerance = 64 << 20;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut now = free();
    while now < baseline - tolerance && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        now = free();
    }
    println!(
        "device memory free after 5 cycles {} MiB, after 50 {} MiB",
        baseline >> 20,
        now >> 20
    );
    assert!(
        now >= baseline - tolerance,
        "{} MiB of device memory lost over 45 attach/kill cycles",
        (baseline - now) >> 20
    );
    let warnings = producer.warnings();
    assert!(warnings.is_empty(), "{warnings:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// CUDA external memory, the import rsdlainfer's standalone mode gives its NvSciBuf tensors
/// (`ExternalMemory`, `DeviceBuffer::from_external`), run here with the one source an x86 GPU
/// offers: a shareable allocation's descriptor, imported as opaque-fd memory. The import maps the
/// allocation's bytes both ways; 50 imports released leave no descriptor open (CUDA owns each
/// one from its import); and once the original is freed too, the GPU's free memory is back where
/// it was before the allocation, which it would not be if an import still held the memory.
#[test]
#[ignore = "needs a CUDA GPU; run by scripts/gpu-check.sh"]
fn gpu_external_memory_maps_an_exported_allocation_and_releases_it() {
    use ferrostream_core::cuda::external::ExternalMemory;
    use ferrostream_core::cuda::{DeviceBuffer, Stream, shared};
    let Some(ctx) = ferrostream_tests::gpu("gpu_external_memory") else {
        return;
    };
    let stream = Stream::new(&ctx, 0).unwrap();
    let free = || {
        ctx.synchronize().unwrap();
        shared::memory_info(&ctx).unwrap().0
    };
    let descriptors = || std::fs::read_dir("/proc/self/fd").unwrap().count();
    let before = free();
    let original = DeviceBuffer::new_shared(&ctx, 64 << 20).unwrap();
    let pattern: Vec<u8> = (0..original.len()).map(|i| (i * 7 % 251) as u8).collect();
    original.upload(&stream, &pattern).unwrap();
    let at = shared::find(original.ptr(), original.len()).expect("a shared allocation");
    let import = || {
        let fd = shared::export(at.base, at.serial).unwrap();
        DeviceBuffer::from_external(ExternalMemory::from_fd(&ctx, fd, at.size as u64).unwrap())
            .unwrap()
    };
    let imported = import();
    assert_ne!(imported.ptr(), original.ptr(), "a mapping of its own");
    let mut seen = vec![0u8; pattern.len()];
    imported.download(&stream, &mut seen).unwrap();
    assert!(seen == pattern, "the import reads the allocation's bytes");
    // Written through the import, read through the original.
    let inverse: Vec<u8> = pattern.iter().map(|b| !b).collect();
    imported.upload(&stream, &inverse).unwrap();
    original.download(&stream, &mut seen).unwrap();
    assert!(seen == inverse, "the original sees what the import wrote");
    drop(imported);
    let open = descriptors();
    for _ in 0..50 {
        drop(import());
    }
    assert_eq!(descriptors(), open, "no descriptor left open by 50 imports");
    drop(original);
    let after = free();
    eprintln!(
        "free device memory before the allocation {} MiB, after it and 51 imports were released {} MiB",
        before >> 20,
        after >> 20
    );
    assert_eq!(
        after, before,
        "every import released its hold on the memory"
    );
}
