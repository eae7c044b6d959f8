//! The lint registry: one declaration per lint (name, group, default level,
//! one-line summary, long explanation with a bad and a good kernel).
//! Adding a lint is one declaration here, one entry in `LINTS`, and its pass.
//!
//! Owns: lint metadata, groups, and name lookup with suggestions. Does not
//! own: the passes that emit findings (one module per lint beside this one)
//! or level configuration (the binary).

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Allow,
    Warn,
    Deny,
    /// Deny, and no later source or `// gpucheck: allow` may lower it.
    Forbid,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warn => "warn",
            Level::Deny => "deny",
            Level::Forbid => "forbid",
        }
    }
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s {
            "allow" => Level::Allow,
            "warn" => Level::Warn,
            "deny" => Level::Deny,
            "forbid" => Level::Forbid,
            _ => return None,
        })
    }
    /// Printed as `error`.
    pub fn is_error(self) -> bool {
        matches!(self, Level::Deny | Level::Forbid)
    }
}

#[derive(Debug)]
pub struct Lint {
    pub name: &'static str,
    pub group: &'static str,
    pub default: Level,
    pub summary: &'static str,
    pub explanation: &'static str,
}

/// The lint groups, in display order.
pub static GROUPS: &[&str] = &["correctness", "perf", "pedantic"];

pub static DIVERGENT_BRANCH: Lint = Lint {
    name: "divergent_branch",
    group: "perf",
    default: Level::Warn,
    summary: "a branch whose condition differs between the threads of most warps",
    explanation: r#"### What it does
Finds branches whose condition depends on the thread index in a way that
splits the 32 threads of a warp between the two paths, in more than one warp
of a block, and loops whose trip count differs between the lanes of a warp.
The message says how many warps of a block are split, for the block shape
given in Cargo.toml (`[package.metadata.gpucheck] block = [x, y, z]`), by
`--block`, or by `.reqntid`.

### Why is this bad
A warp executes both paths one after the other with part of its lanes
masked off: `if t % 2 == 0 { a() } else { b() }` costs `a + b` for every
warp. Boundary checks (`if gid < n`) split at most one warp and are not
reported; nor are single-lane branches (`if t == 0`) or branches on loaded
data, whose divergence cannot be known statically.

### Example
```rust
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scale(a: *mut f32) {
    let t = _thread_idx_x() as usize;
    if t % 2 == 0 {             // splits every warp: even and odd lanes
        *a.add(t) = slow_even(*a.add(t));
    } else {
        *a.add(t) = slow_odd(*a.add(t));
    }
}
```
Use instead: give whole warps the same kind of work, so that the condition
is the same for the 32 consecutive threads of a warp:
```rust
    // warp w handles the elements of one parity: even warps even elements
    let (w, lane) = (t / 32, t % 32);
    let i = (w / 2) * 64 + lane * 2 + (w % 2);
    if w % 2 == 0 {
        *a.add(i) = slow_even(*a.add(i));
    } else {
        *a.add(i) = slow_odd(*a.add(i));
    }
```
"#,
};

pub static BARRIER_DIVERGENCE: Lint = Lint {
    name: "barrier_divergence",
    group: "correctness",
    default: Level::Deny,
    summary: "a barrier that not every thread of the block reaches",
    explanation: r#"### What it does
Finds `_syncthreads()` (`bar.sync`, `barrier.sync`, or a call to a function
that executes one) under thread-dependent control flow: inside a branch on
the thread index, after a thread-dependent early `return`, predicated on a
thread-dependent value, or inside a loop whose trip count differs between
threads (GPUVerify's barrier divergence). The note names the branch and,
when the block shape is known, the threads that skip the barrier.

### Why is this bad
All threads of a block must reach the same barrier the same number of
times. Otherwise the behaviour is undefined: the kernel hangs, or silently
computes wrong results, depending on the GPU.

### Example
```rust
#[no_mangle]
pub unsafe extern "ptx-kernel" fn shift(out: *mut u32) {
    let t = _thread_idx_x() as usize;
    let s = shared_buffer();
    *s.add(t) = t as u32;
    if t < 128 {
        _syncthreads();          // threads 128.. never arrive
        *out.add(t) = *s.add(t + 1);
    }
}
```
Use instead: move the barrier out of the conditional so that every thread
of the block reaches it, and guard only the work:
```rust
    *s.add(t) = t as u32;
    _syncthreads();
    if t < 128 {
        *out.add(t) = *s.add(t + 1);
    }
```
"#,
};

pub static UNUSED_GPUCHECK_ALLOW: Lint = Lint {
    name: "unused_gpucheck_allow",
    group: "correctness",
    default: Level::Warn,
    summary: "a `// gpucheck: allow(...)` comment that suppresses nothing",
    explanation: r#"### What it does
Finds `// gpucheck: allow(NAME)` comments that no finding of `NAME` uses:
on the line of a finding or the line above it, or on the line of a kernel's
`fn` for the whole kernel. Also reports names that are not lints.

### Why is this bad
A stale suppression hides the next real finding on that line and misleads
readers about what the code does.

### Example
```rust
let i = gid();
if i < n { // gpucheck: allow(divergent_branch)   <- a boundary check is never reported
    *out.add(i) = 1.0;
}
```
Use instead: delete the comment.
"#,
};

/// Every lint, in display order.
pub static LINTS: &[&Lint] = &[&BARRIER_DIVERGENCE, &DIVERGENT_BRANCH, &UNUSED_GPUCHECK_ALLOW];

/// A lint by name, with or without the `gpucheck::` prefix.
pub fn find(name: &str) -> Option<&'static Lint> {
    let name = name.strip_prefix("gpucheck::").unwrap_or(name);
    LINTS.iter().copied().find(|l| l.name == name)
}

/// The lints a name stands for: one lint, a group, or `all`.
pub fn expand(name: &str) -> Option<Vec<&'static Lint>> {
    let n = name.strip_prefix("gpucheck::").unwrap_or(name);
    if let Some(l) = find(n) {
        return Some(vec![l]);
    }
    if n == "all" {
        return Some(LINTS.to_vec());
    }
    if GROUPS.contains(&n) {
        return Some(LINTS.iter().copied().filter(|l| l.group == n).collect());
    }
    None
}

/// The known lint or group name closest to `name` (for "did you mean").
pub fn closest(name: &str) -> Option<&'static str> {
    let n = name.strip_prefix("gpucheck::").unwrap_or(name);
    let candidates = LINTS.iter().map(|l| l.name).chain(GROUPS.iter().copied()).chain(["all"]);
    let (d, best) = candidates.map(|c| (edit_distance(n, c), c)).min()?;
    (d <= (n.len() / 3).max(2)).then_some(best)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + (ca != *cb) as usize).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_groups_and_suggestions() {
        assert_eq!(find("gpucheck::divergent_branch").map(|l| l.name), Some("divergent_branch"));
        assert_eq!(expand("gpucheck::perf").unwrap().len(), 1);
        assert_eq!(expand("correctness").unwrap().len(), 2);
        assert_eq!(expand("all").unwrap().len(), LINTS.len());
        assert!(expand("nope").is_none());
        assert_eq!(closest("divergent_branches"), Some("divergent_branch"));
        assert_eq!(closest("gpucheck::barier_divergence"), Some("barrier_divergence"));
        assert_eq!(closest("perff"), Some("perf"));
        assert_eq!(closest("completely_unrelated_name"), None);
    }

    #[test]
    fn every_explanation_has_a_bad_and_a_good_example() {
        for l in LINTS {
            assert!(l.explanation.contains("### Example") && l.explanation.contains("Use instead"), "{}", l.name);
            assert!(GROUPS.contains(&l.group), "{}", l.name);
        }
    }
}
