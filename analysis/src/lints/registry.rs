//! The lint registry: one declaration per lint (name, group, default level,
//! one-line summary, long explanation).
//!
//! Owns: lint metadata. Does not own: the passes that emit findings (one
//! module per lint beside this one) or level configuration (the binary).

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Allow,
    Warn,
    Deny,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warn => "warn",
            Level::Deny => "deny",
        }
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

pub static DIVERGENT_BRANCH: Lint = Lint {
    name: "divergent_branch",
    group: "perf",
    default: Level::Warn,
    summary: "a branch whose condition differs between the threads of most warps",
    explanation: r#"### What it does
Finds branches whose condition depends on the thread index in a way that
splits the threads of a warp (32 consecutive threads of a block) between the
two paths, in more than one warp of a block.

### Why is this bad
A warp executes both paths one after the other with part of its lanes
masked off: `if t % 2 == 0 { a() } else { b() }` costs `a + b` for every warp.
Boundary checks (`if gid < n`) split at most one warp and are not reported;
nor are single-lane branches (`if t == 0`).

### Example
```rust
let t = _thread_idx_x();
if t % 2 == 0 { out[t] = expensive_a(); } else { out[t] = expensive_b(); }
```
Use instead: make the condition uniform per warp, e.g. branch on the warp
index (`(t / 32) % 2`), or sort work so neighbouring threads take the same path.
"#,
};

pub static BARRIER_DIVERGENCE: Lint = Lint {
    name: "barrier_divergence",
    group: "correctness",
    default: Level::Deny,
    summary: "a barrier that not every thread of the block reaches",
    explanation: r#"### What it does
Finds `bar.sync`/`barrier.sync` (`_syncthreads()`) under thread-dependent
control flow, or inside a loop whose trip count differs between threads
(GPUVerify's barrier divergence).

### Why is this bad
All threads of a block must reach the same barrier the same number of times.
Otherwise the behaviour is undefined: the kernel hangs or silently computes
wrong results, depending on the GPU.

### Example
```rust
if t < 128 { _syncthreads(); }
```
Use instead: move the barrier out of the conditional so that every thread
of the block reaches it; guard only the work, not the barrier.
"#,
};

/// Every lint, in display order.
pub static LINTS: &[&Lint] = &[&BARRIER_DIVERGENCE, &DIVERGENT_BRANCH];

pub fn find(name: &str) -> Option<&'static Lint> {
    let name = name.strip_prefix("gpucheck::").unwrap_or(name);
    LINTS.iter().copied().find(|l| l.name == name)
}
