//! Parallel maps that stay on the calling thread when there is nothing to
//! share out.
//!
//! Starting rayon's thread pool costs about a millisecond of CPU (a thread
//! per core, each with its stack), which is a third of a one-kernel file's
//! whole check. Work of fewer than two items runs where it is, and so does
//! all the work of a small module ([`alone`]); the pool starts only when
//! two tasks can run side by side and are worth it.

use rayon::prelude::*;
use std::cell::Cell;

thread_local! {
    /// Inside [`alone`] on this thread.
    static ALONE: Cell<bool> = const { Cell::new(false) };
}

/// Run `work` with every parallel map in it on the calling thread: work
/// too small to gain from the pool (a module of a few hundred
/// instructions takes as long on one thread, and the pool's threads cost
/// a fifth of its CPU time).
pub fn alone<R>(work: impl FnOnce() -> R) -> R {
    let was = ALONE.with(|a| a.replace(true));
    let out = work();
    ALONE.with(|a| a.set(was));
    out
}

/// May work be shared out here (not inside [`alone`])?
pub fn parallel() -> bool {
    !ALONE.with(Cell::get)
}

/// `items.iter().map(f)`, in parallel when there are two items or more.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    if items.len() < 2 || !parallel() {
        items.iter().map(f).collect()
    } else {
        items.par_iter().map(f).collect()
    }
}

/// `items.into_iter().map(f)`, in parallel when there are two items or more.
pub fn map_owned<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if items.len() < 2 || !parallel() {
        items.into_iter().map(f).collect()
    } else {
        items.into_par_iter().map(f).collect()
    }
}

#[cfg(test)]
mod tests {
    /// Inside `alone` every map runs on the calling thread (nested too),
    /// in order; outside it work is shared out again.
    #[test]
    fn alone_keeps_the_work_on_the_calling_thread() {
        let me = std::thread::current().id();
        let v: Vec<usize> = (0..64).collect();
        let (inside, threads) = super::alone(|| {
            let threads: Vec<std::thread::ThreadId> = super::map(&v, |_| std::thread::current().id());
            let nested = super::alone(|| super::map_owned(v.clone(), |x| x + 1));
            (super::parallel() || nested != (1..65).collect::<Vec<_>>(), threads)
        });
        assert!(!inside, "work shared out inside `alone`, or out of order");
        assert!(threads.iter().all(|t| *t == me), "a map inside `alone` ran on another thread");
        assert!(super::parallel(), "`alone` left its mark after it returned");
    }

    #[test]
    fn maps_keep_order_either_way() {
        for n in [0usize, 1, 2, 57] {
            let v: Vec<usize> = (0..n).collect();
            assert_eq!(super::map(&v, |x| x * 2), v.iter().map(|x| x * 2).collect::<Vec<_>>());
            assert_eq!(super::map_owned(v.clone(), |x| x + 1), v.iter().map(|x| x + 1).collect::<Vec<_>>());
        }
    }
}
