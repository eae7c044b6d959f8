//! `unused_gpucheck_allow`: the declaration only. The binary reports it:
//! it reads the package's source comments and lint attributes, which this
//! crate never touches.

declare_lint! {
    /// ### What it does
    /// Finds `// gpucheck: allow(NAME)` comments that no finding of `NAME` uses:
    /// on the line of a finding or the line above it, or on the line of a kernel's
    /// `fn` for the whole kernel; and `#[expect(gpucheck::NAME)]` attributes that
    /// no finding inside their item, statement or expression meets (as rustc's
    /// `unfulfilled_lint_expectations`). Also reports names that are not lints.
    ///
    /// ### Why is this bad
    /// A stale suppression hides the next real finding on that line and misleads
    /// readers about what the code does.
    ///
    /// ### Example
    /// ```rust
    /// let i = gid();
    /// if i < n { // gpucheck: allow(divergent_branch)   <- a boundary check is never reported
    ///     *out.add(i) = 1.0;
    /// }
    /// ```
    /// Use instead: delete the comment. The same for an attribute:
    /// ```rust
    /// #[expect(gpucheck::divergent_branch)] // <- nothing diverges here: unfulfilled
    /// let v = *x.add(i);
    /// ```
    pub static UNUSED_GPUCHECK_ALLOW = {
        name: "unused_gpucheck_allow",
        group: Correctness,
        default: Warn,
        summary: "a `// gpucheck: allow(…)` comment suppresses nothing, an `#[expect(gpucheck::…)]` meets no finding, or either names no lint",
    }
}
