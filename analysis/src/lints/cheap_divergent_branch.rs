//! `cheap_divergent_branch` (pedantic): the declaration only. The
//! `divergent_branch` pass emits it for a split branch that decides only a
//! few straight-line instructions (`crate::facts::BranchCost::is_cheap`).

declare_lint! {
    /// ### What it does
    /// Reports branches that split the lanes of a warp like `divergent_branch`
    /// does, but around only a few straight-line instructions (at most 6, with
    /// no loop, call or barrier): a guard around one store (`if t == k { out[r] =
    /// sum; }`), a clamp, a small fix-up. The split is real, its cost is a few
    /// instructions run with part of the warp masked off. A split that repeats
    /// (at least half of the warp executions of its line split, over a loop's
    /// iterations or an unrolled loop's copies: the interleaved reduction's
    /// `if t % (2 * k) == 0`) is `divergent_branch` instead.
    ///
    /// ### Why is this bad
    /// It rarely is: each split warp runs both short paths one after the other,
    /// which costs a handful of cycles. It is listed so that the numbers are
    /// there when a kernel is tuned instruction by instruction.
    ///
    /// ### Example
    /// ```rust
    /// // lanes of one warp both store and skip: a few instructions, masked
    /// if t % 4 == 0 {
    ///     *out.add(t / 4) = acc;
    /// }
    /// ```
    /// Use instead: usually nothing; when the branch matters, let a whole warp
    /// take the same side:
    /// ```rust
    /// if t < n / 4 {
    ///     *out.add(t) = partial[t];
    /// }
    /// ```
    pub static CHEAP_DIVERGENT_BRANCH = {
        name: "cheap_divergent_branch",
        group: Pedantic,
        default: Allow,
        summary: "a thread-dependent branch splits warps around only a few straight-line instructions (a guarded store): real, but cheap",
    }
}
