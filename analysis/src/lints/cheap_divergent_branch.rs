//! `cheap_divergent_branch` (pedantic): the declaration only. The
//! `divergent_branch` pass emits it for a split whose idle lane-slots are
//! under its threshold, or that decides a few straight-line instructions
//! each warp meets once (`crate::facts::BranchCost::is_cheap`).

declare_lint! {
    /// ### What it does
    /// Reports branches that split the lanes of a warp like `divergent_branch`
    /// does, but whose idle lane-slots are under 10 % of the kernel's (a few
    /// warps split around a short side, sequential addressing's last steps), or
    /// that decide only a few straight-line instructions (at most 6, with no
    /// loop, call or barrier) that each warp meets once: a guard around one
    /// store (`if t == k { out[r] = sum; }`), a clamp, a small fix-up. The note
    /// and JSON (`idle_share`) give the share. A short side that splits again
    /// and again (the interleaved reduction's `if t % (2 * k) == 0`, in every
    /// iteration) is counted over the iterations and is `divergent_branch` when
    /// its share reaches the threshold.
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
        summary: "a thread-dependent branch splits warps but leaves under 10 % of the kernel's lane-slots idle, or guards a few instructions each warp meets once: real, but cheap",
    }
}
