//! `declare_lint!`: one lint's declaration, in its own file — the static
//! `Lint` with its name, group, default level and summary (and, for the
//! race lints, `one_per_line: true`: one diagnostic per source line), and its
//! explanation written as the doc comment (`### What it does`, `### Why is
//! this bad`, `### Example` with a bad and a good kernel), the way clippy
//! declares its lints. The doc comment is the text `cargo gpucheck explain`
//! prints and SARIF carries as the rule's help.
//!
//! Owns: the macro. Does not own: the registry (`lints!` in the parent).

macro_rules! declare_lint {
    (
        $(#[doc = $doc:expr])*
        pub static $ident:ident = {
            name: $name:literal,
            group: $group:ident,
            default: $level:ident,
            summary: $summary:literal
            $(, one_per_line: $one_per_line:literal)? $(,)?
        }
    ) => {
        pub static $ident: $crate::lints::Lint = $crate::lints::Lint {
            name: $name,
            group: $crate::lints::Group::$group,
            default: $crate::lints::Level::$level,
            summary: $summary,
            one_per_line: false $(|| $one_per_line)?,
            doc: concat!($($doc, "\n"),*),
        };
    };
}
