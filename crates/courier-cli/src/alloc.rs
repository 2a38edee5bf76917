//! A counting global allocator, for `courier bench --count-allocations` and the heap figures of
//! long polls.
//!
//! It wraps the system allocator and is always installed, because a global allocator cannot be
//! chosen at run time; while counting is off, each allocation or free costs one extra relaxed
//! load. While it is on, every allocation (and reallocation, which is a new allocation as far as
//! the cost of a request goes) adds to relaxed atomic counters, and frees to a third, so the
//! heap's growth over a window is known too — unless the thread is marked as not counted: the
//! in-process built-in server's threads and the benchmark's own bookkeeping (sampler, progress
//! line) mark themselves, so the counts are the client's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The system allocator, counting when asked to.
pub struct CountingAllocator;

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Allocations and their bytes since the last [`start`].
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and freed while enabled, never reset: their difference is the heap's growth.
static HEAP_IN: AtomicU64 = AtomicU64::new(0);
static HEAP_OUT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // `const` and without a destructor: reading it never allocates, even during thread exit.
    static IGNORED: Cell<bool> = const { Cell::new(false) };
}

impl CountingAllocator {
    #[inline]
    fn allocated(size: usize) {
        if counting_here() {
            ALLOCATIONS.fetch_add(1, Relaxed);
            BYTES.fetch_add(size as u64, Relaxed);
            HEAP_IN.fetch_add(size as u64, Relaxed);
        }
    }

    #[inline]
    fn freed(size: usize) {
        if counting_here() {
            HEAP_OUT.fetch_add(size as u64, Relaxed);
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
        Self::allocated(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::allocated(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::allocated(new_size);
        Self::freed(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        Self::freed(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations and bytes counted since [`start`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub allocations: u64,
    pub bytes: u64,
}

/// Starts counting allocations from zero (the heap balance keeps running).
pub fn start() {
    ALLOCATIONS.store(0, Relaxed);
    BYTES.store(0, Relaxed);
    enable();
}

/// Stops counting and returns the counts since [`start`].
pub fn stop() -> Counts {
    disable();
    read()
}

/// Turns counting on without resetting anything (for heap balances).
pub fn enable() {
    ENABLED.store(true, Relaxed);
}

/// Turns counting off.
pub fn disable() {
    ENABLED.store(false, Relaxed);
}

/// The counts since [`start`] (counting continues).
pub fn read() -> Counts {
    Counts {
        allocations: ALLOCATIONS.load(Relaxed),
        bytes: BYTES.load(Relaxed),
    }
}

/// Bytes allocated minus bytes freed while counting was on, since the process started. Only
/// differences between two readings mean something: the heap's growth in between (memory freed
/// in the window but allocated before it makes the growth look smaller, by that much).
pub fn heap_balance() -> i64 {
    HEAP_IN.load(Relaxed).wrapping_sub(HEAP_OUT.load(Relaxed)) as i64
}

/// Leaves the calling thread's allocations out of the counts for good (server threads).
pub fn ignore_this_thread() {
    let _ = IGNORED.try_with(|ignored| ignored.set(true));
}

/// What building one value with `f` allocates, averaged over `times` builds (counting must be
/// off: this starts and stops it).
pub fn measure<T>(times: u32, mut f: impl FnMut() -> T) -> (f64, f64) {
    start();
    for _ in 0..times {
        drop(std::hint::black_box(f()));
    }
    let counts = stop();
    let n = f64::from(times.max(1));
    (counts.allocations as f64 / n, counts.bytes as f64 / n)
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
    // Other tests allocate meanwhile, hence lower bounds, wide margins and the on/off decision.
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

            const MIB: i64 = 1 << 20;
            let before = heap_balance();
            let kept: Vec<u8> = Vec::with_capacity(8 << 20);
            let grown = heap_balance() - before;
            assert!((6 * MIB..10 * MIB).contains(&grown), "{grown}");
            drop(kept);
            let after = heap_balance() - before;
            assert!(after.abs() < 2 * MIB, "{after}");

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
