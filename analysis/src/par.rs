//! Parallel maps that stay on the calling thread when there is nothing to
//! share out.
//!
//! Starting rayon's thread pool costs about a millisecond of CPU (a thread
//! per core, each with its stack), which is a third of a one-kernel file's
//! whole check. Work of fewer than two items runs where it is; the pool
//! starts only when two tasks can run side by side.

use rayon::prelude::*;

/// `items.iter().map(f)`, in parallel when there are two items or more.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    if items.len() < 2 {
        items.iter().map(f).collect()
    } else {
        items.par_iter().map(f).collect()
    }
}

/// `items.into_iter().map(f)`, in parallel when there are two items or more.
pub fn map_owned<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
    if items.len() < 2 {
        items.into_iter().map(f).collect()
    } else {
        items.into_par_iter().map(f).collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn maps_keep_order_either_way() {
        for n in [0usize, 1, 2, 57] {
            let v: Vec<usize> = (0..n).collect();
            assert_eq!(super::map(&v, |x| x * 2), v.iter().map(|x| x * 2).collect::<Vec<_>>());
            assert_eq!(super::map_owned(v.clone(), |x| x + 1), v.iter().map(|x| x + 1).collect::<Vec<_>>());
        }
    }
}
