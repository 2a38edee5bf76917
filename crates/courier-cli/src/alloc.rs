//! A counting global allocator, for `courier bench --count-allocations`.
//!
//! It wraps the system allocator and is always installed, because a global allocator cannot be
//! chosen at run time; while counting is off, each allocation costs one extra relaxed load.
//! While it is on, every allocation (and reallocation, which is a new allocation as far as the
//! cost of a request goes) adds to two relaxed atomic counters — unless the thread is marked as
//! not counted: the in-process built-in server's threads and the benchmark's own bookkeeping
//! (sampler, progress line) mark themselves, so the counts are the client's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The system allocator, counting when asked to.
pub struct CountingAllocator;

static ENABLED: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // `const` and without a destructor: reading it never allocates, even during thread exit.
    static IGNORED: Cell<bool> = const { Cell::new(false) };
}

impl CountingAllocator {
    #[inline]
    fn count(size: usize) {
        if counting_here() {
            ALLOCATIONS.fetch_add(1, Relaxed);
            BYTES.fetch_add(size as u64, Relaxed);
        }
    }
}

/// Whether an allocation on this thread, now, is counted.
#[inline]
fn counting_here() -> bool {
    ENABLED.load(Relaxed) && !IGNORED.try_with(Cell::get).unwrap_or(true)
}

// SAFETY: every call is forwarded unchanged to `System`; counting touches only atomics and a
// const thread-local, neither of which allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::count(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::count(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::count(new_size);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations and bytes counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub allocations: u64,
    pub bytes: u64,
}

/// Starts counting (from zero).
pub fn start() {
    ALLOCATIONS.store(0, Relaxed);
    BYTES.store(0, Relaxed);
    ENABLED.store(true, Relaxed);
}

/// Stops counting and returns the counts.
pub fn stop() -> Counts {
    ENABLED.store(false, Relaxed);
    read()
}

/// The counts so far (counting continues).
pub fn read() -> Counts {
    Counts {
        allocations: ALLOCATIONS.load(Relaxed),
        bytes: BYTES.load(Relaxed),
    }
}

/// Leaves the calling thread's allocations out of the counts for good (server threads).
pub fn ignore_this_thread() {
    let _ = IGNORED.try_with(|ignored| ignored.set(true));
}

/// Runs `f` with the calling thread's allocations left out of the counts (bookkeeping).
pub fn uncounted<T>(f: impl FnOnce() -> T) -> T {
    let before = IGNORED
        .try_with(|ignored| ignored.replace(true))
        .unwrap_or(true);
    let result = f();
    let _ = IGNORED.try_with(|ignored| ignored.set(before));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test only: the counters are process-wide, so parallel tests would see each other.
    // Other tests allocate meanwhile, hence lower bounds and the on/off decision, not totals.
    #[test]
    fn counts_only_while_enabled_and_not_on_ignored_threads() {
        std::thread::spawn(|| {
            assert!(!counting_here());
            start();
            assert!(counting_here());
            let v: Vec<u8> = Vec::with_capacity(1000);
            let counted = read();
            assert!(counted.allocations >= 1, "{counted:?}");
            assert!(counted.bytes >= 1000, "{counted:?}");
            uncounted(|| assert!(!counting_here()));
            assert!(counting_here());
            let total = stop();
            assert!(!counting_here());
            drop(std::hint::black_box(Vec::<u8>::with_capacity(1 << 20)));
            assert_eq!(read(), total);
            drop(v);
            ignore_this_thread();
            start();
            assert!(!counting_here());
            stop();
        })
        .join()
        .unwrap();
    }
}
