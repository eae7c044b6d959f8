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

pub static UNCOALESCED_GLOBAL_ACCESS: Lint = Lint {
    name: "uncoalesced_global_access",
    group: "perf",
    default: Level::Warn,
    summary: "a global memory access whose warp request touches at least twice the sectors it needs",
    explanation: r#"### What it does
Predicts, for every global load, store and atomic, how many 32-byte sectors
one warp request touches (sm_70 and newer), for the lanes that execute it
and the block shape, and compares with the sectors the same bytes need when
contiguous and aligned. Reports when the ratio reaches 2
(`--coalescing-threshold` changes it). Contiguous 8- and 16-byte elements
are ideal; so is a misaligned `x[i + 1]` (5 sectors for 4).

### Why is this bad
Memory moves in sectors: a warp whose lanes read 4 bytes each, 128 bytes
apart, moves 32 sectors (1024 bytes) to use 128 — an eighth of the
bandwidth.

### Example
```rust
// each lane reads a row: lanes are `n` elements apart
let i = gid();
let mut s = 0.0;
for k in 0..n { s += *a.add(i * n + k); }
```
Use instead: make `threadIdx.x` the fastest-varying index of the access
(consecutive lanes read consecutive addresses), transpose through shared
memory, or turn an array of structs into a structure of arrays:
```rust
// each lane reads a column: consecutive lanes read consecutive elements
for k in 0..n { s += *a.add(k * n + i); }
```
"#,
};

pub static SHARED_BANK_CONFLICT: Lint = Lint {
    name: "shared_bank_conflict",
    group: "perf",
    default: Level::Warn,
    summary: "a shared memory access whose lanes collide in the same bank",
    explanation: r#"### What it does
Predicts the bank-conflict degree of every shared memory access: shared
memory has 32 banks of 4-byte words; the degree is the largest number of
distinct words a warp request needs from one bank (lanes reading the same
word are served by one broadcast). 8-byte accesses are served per half
warp, 16-byte per quarter warp. Reports degree 2 and more.

### Why is this bad
An n-way conflict serialises the request into n transactions. Reading a
column of a 32×32 `f32` tile puts all 32 lanes in one bank: 32 times slower.

### Example
```rust
// tile: [[f32; 32]; 32] in shared memory
let v = tile[tx][ty];      // lanes stride 128 bytes: 32-way conflict
```
Use instead: pad each row by one word so a column spreads over 32 banks:
```rust
// tile: [[f32; 33]; 32]
let v = tile[tx][ty];      // lanes stride 132 bytes: conflict-free
```
"#,
};

pub static DATA_DEPENDENT_ACCESS: Lint = Lint {
    name: "data_dependent_access",
    group: "pedantic",
    default: Level::Allow,
    summary: "a memory access whose address depends on loaded data (gather/scatter)",
    explanation: r#"### What it does
Points out global and shared accesses whose address depends on data loaded
from memory (indirection, gather, scatter), so their cost cannot be
predicted statically.

### Why is this bad
It is not necessarily bad: gathers are sometimes the algorithm. But their
coalescing depends on the data: measure them with a profiler, or sort the
indices so that neighbouring lanes read neighbouring elements.

### Example
```rust
let j = *idx.add(i) as usize;
let v = *a.add(j);          // address from loaded data
```
Use instead, where possible, an access computed from the thread index:
```rust
let v = *a.add(i);
```
"#,
};

pub static SHARED_MEMORY_OPPORTUNITY: Lint = Lint {
    name: "shared_memory_opportunity",
    group: "pedantic",
    default: Level::Allow,
    summary: "global data read by several threads of a block that shared memory could serve",
    explanation: r#"### What it does
Finds global loads of one array whose threads, together, read the same
bytes several times within a block (stencils reading `a[i-1]`, `a[i]`,
`a[i+1]`; a naive matrix product reading a row for every column), and
reports the block's footprint: the distinct bytes it needs against the
bytes it requests (Juravle, §5.2).

### Why is this bad
Each repeated read goes to the memory system again; loading the footprint
once into shared memory and reading it from there saves bandwidth.

### Example
```rust
let i = gid();
*out.add(i) = *a.add(i - 1) + *a.add(i) + *a.add(i + 1);
```
Use instead: stage the block's footprint (blockDim.x + 2 elements) in
shared memory, synchronise, then read the neighbours from there.
"#,
};

pub static SHARED_MEMORY_RACE: Lint = Lint {
    name: "shared_memory_race",
    group: "correctness",
    default: Level::Deny,
    summary: "two threads of a block access the same shared memory with no barrier between, one writing",
    explanation: r#"### What it does
Finds pairs of shared memory accesses that can run in the same barrier
interval (no `_syncthreads()` between them on some path, including around
loop back edges), in two different threads of a block, on the same bytes,
at least one of them a write (atomics do not race with atomics). The
message names the kind (read-after-write, write-after-read,
write-after-write) and a witness pair of threads. Warp-synchronous code is
not exempt: threads of a warp are scheduled independently since Volta.

### Why is this bad
The result depends on the order in which threads run: wrong answers that
show up once in a thousand runs, or on another GPU.

### Example
```rust
*s.add(t) = x;
let right = *s.add(t + 1);      // thread t reads what thread t + 1 writes
```
Use instead: put a barrier between the write and the read:
```rust
*s.add(t) = x;
_syncthreads();
let right = *s.add(t + 1);
```
"#,
};

pub static GLOBAL_MEMORY_RACE: Lint = Lint {
    name: "global_memory_race",
    group: "correctness",
    default: Level::Warn,
    summary: "two threads of a block access the same global memory with no barrier between, one writing",
    explanation: r#"### What it does
The same check as `shared_memory_race`, for global memory within one block
(for example every thread writing `out[0]`). Accesses through different
pointer parameters are assumed not to alias. Races between different
blocks are out of scope.

### Why is this bad
The value left in memory depends on which thread writes last.

### Example
```rust
*out = t as u32;               // every thread writes out[0]
```
Use instead: let one thread write, or reduce first:
```rust
if t == 0 { *out = result; }
```
"#,
};

/// Every lint, in display order.
pub static LINTS: &[&Lint] = &[
    &BARRIER_DIVERGENCE,
    &SHARED_MEMORY_RACE,
    &GLOBAL_MEMORY_RACE,
    &UNUSED_GPUCHECK_ALLOW,
    &DIVERGENT_BRANCH,
    &UNCOALESCED_GLOBAL_ACCESS,
    &SHARED_BANK_CONFLICT,
    &DATA_DEPENDENT_ACCESS,
    &SHARED_MEMORY_OPPORTUNITY,
];

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
        assert_eq!(expand("gpucheck::perf").unwrap().len(), 3);
        assert_eq!(expand("pedantic").unwrap().len(), 2);
        assert_eq!(expand("correctness").unwrap().len(), 4);
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
