// SPDX-License-Identifier: MIT OR Apache-2.0
//! SIGINT and SIGTERM delivered to the GLib main loop. The signals are blocked in every thread
//! ([`block`], called first thing in `main`, before GStreamer starts threads of its own) and
//! one thread waits for them with `sigwait`, so no code runs in a signal handler.

use std::sync::OnceLock;

use gst::glib;

fn set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid sigset_t; both signal numbers are valid.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
    }
    set
}

/// Blocks SIGINT and SIGTERM in this thread and every thread it starts later.
pub fn block() {
    let set = set();
    // SAFETY: a valid set; the old mask is not wanted.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Calls `on_signal` on the default main context at each SIGINT or SIGTERM (one waiting
/// thread per process; later calls replace nothing and are ignored).
pub fn forward(on_signal: impl Fn() + Send + Sync + 'static) {
    static STARTED: OnceLock<()> = OnceLock::new();
    if STARTED.set(()).is_err() {
        return;
    }
    let on_signal = std::sync::Arc::new(on_signal);
    std::thread::spawn(move || {
        let set = set();
        loop {
            let mut signal = 0;
            // SAFETY: a valid set of blocked signals and a valid out pointer.
            if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                return;
            }
            let on_signal = on_signal.clone();
            glib::MainContext::default().invoke(move || on_signal());
        }
    });
}
