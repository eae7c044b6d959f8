//! `conditional_divergent_branch` (pedantic): the declaration only. The
//! `divergent_branch` pass emits it for a split that holds only for some
//! values of a parameter or block index (counted with a sample), or only
//! in the worst case over an unknown bound.

declare_lint! {
    /// ### What it does
    /// Reports branches that split the lanes of a warp for some values of a
    /// parameter, not for every value the kernel allows: a loop's tail
    /// (`for (c = lane; c < C; c += 32)` splits only when `C` is not a multiple
    /// of 32), a bounds check whose split depends on the size (`if (x < n)` in a
    /// 16×16 block splits every warp only when `n < 16`). The message gives the
    /// split for the sampled value it was counted with (`counted with n = 3`),
    /// or the worst case over an unknown bound.
    ///
    /// ### Why is this bad
    /// It may not be: whether the split happens at all depends on the sizes the
    /// kernel is launched with. It is listed so that a kernel tuned for given
    /// sizes can check them; `divergent_branch` reports only splits that hold for
    /// every value.
    ///
    /// ### Example
    /// ```rust
    /// // a 16×16 block: rows of 16 lanes, two to a warp
    /// if x < n {            // splits every warp when n < 16, none when n ≥ 16
    ///     *out.add(y * 16 + x) = work(x);
    /// }
    /// ```
    /// Use instead: nothing, when the sizes it runs with keep whole warps on
    /// one side; otherwise choose a block shape whose rows are whole warps.
    pub static CONDITIONAL_DIVERGENT_BRANCH = {
        name: "conditional_divergent_branch",
        group: Pedantic,
        default: Allow,
        summary: "a thread-dependent branch splits warps only for some values of a parameter (counted with a sample) or in the worst case over an unknown bound",
    }
}
