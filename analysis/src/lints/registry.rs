//! The lint registry's types and lookups: levels, groups, the `Lint`
//! declaration type, name lookup with suggestions. The list of lints
//! itself (`LINTS`) is generated in the parent module from one list; each
//! declaration lives in its lint's file.
//!
//! Owns: lint metadata types and name lookup. Does not own: the passes, or
//! level configuration (the binary).

use super::LINTS;

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

/// A lint group (`-W gpucheck::perf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    Correctness,
    Perf,
    Pedantic,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Correctness => "correctness",
            Group::Perf => "perf",
            Group::Pedantic => "pedantic",
        }
    }
    fn parse(s: &str) -> Option<Group> {
        GROUPS.iter().copied().find(|g| g.name() == s)
    }
}

/// The lint groups, in display order.
pub static GROUPS: &[Group] = &[Group::Correctness, Group::Perf, Group::Pedantic];

/// A lint's declaration (see `declare_lint!`).
#[derive(Debug)]
pub struct Lint {
    pub name: &'static str,
    pub group: Group,
    pub default: Level,
    pub summary: &'static str,
    /// The findings of one source line, or of one pair of lines, are one
    /// diagnostic (the accesses of one statement that race through the
    /// same missing barrier: the tile loop's `As[ty][k] * Bs[k][tx]`).
    pub one_per_line: bool,
    /// The doc comment of the declaration, one `#[doc]` line each.
    pub doc: &'static str,
}

impl Lint {
    /// What the lint finds, why, a bad and a good kernel (markdown).
    pub fn explanation(&self) -> String {
        let mut out = String::with_capacity(self.doc.len());
        for line in self.doc.lines() {
            let line = line.strip_prefix(' ').unwrap_or(line);
            out.push_str(line.strip_suffix(",ignore").filter(|l| l.starts_with("```")).unwrap_or(line));
            out.push('\n');
        }
        out
    }
}

/// Whether `lint` is one of [`LINTS`] (not merely some `Lint` value).
pub fn is_registered(lint: &Lint) -> bool {
    LINTS.iter().any(|l| std::ptr::eq(*l, lint))
}

/// The lint table of the README: one row per lint, from the declarations.
pub fn markdown_table() -> String {
    let mut out = String::from("| lint | group | default | fires when |\n|---|---|---|---|\n");
    for l in LINTS {
        out.push_str(&format!("| `{}` | {} | {} | {} |\n", l.name, l.group.name(), l.default.as_str(), l.summary));
    }
    out
}

/// A lint by name, with or without the `gpucheck::` prefix.
pub fn find(name: &str) -> Option<&'static Lint> {
    let name = name.strip_prefix("gpucheck::").unwrap_or(name);
    LINTS.iter().copied().find(|l| l.name == name)
}

/// The lints a name stands for: one lint, a group, or `all` (every lint
/// that is not pedantic, as `clippy::all`).
pub fn expand(name: &str) -> Option<Vec<&'static Lint>> {
    let n = name.strip_prefix("gpucheck::").unwrap_or(name);
    if let Some(l) = find(n) {
        return Some(vec![l]);
    }
    // as `clippy::all`: every lint that is not pedantic
    if n == "all" {
        return Some(LINTS.iter().copied().filter(|l| l.group != Group::Pedantic).collect());
    }
    if let Some(g) = Group::parse(n) {
        return Some(LINTS.iter().copied().filter(|l| l.group == g).collect());
    }
    None
}

/// The known lint or group name closest to `name` (for "did you mean").
pub fn closest(name: &str) -> Option<&'static str> {
    let n = name.strip_prefix("gpucheck::").unwrap_or(name);
    let candidates = LINTS.iter().map(|l| l.name).chain(GROUPS.iter().map(|g| g.name())).chain(["all", "warnings"]);
    closest_among(n, candidates)
}

/// The candidate closest to `name`: within a few edits (a typo), else the
/// shortest one that contains it (`divergent` → `divergent_branch`).
pub fn closest_among<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let candidates: Vec<&str> = candidates.into_iter().collect();
    // (a name that shares nothing with the candidate is no suggestion: `zz` is not near `n`)
    let near = candidates
        .iter()
        .map(|c| (edit_distance(name, c), *c))
        .min()
        .filter(|(d, c)| *d <= (name.len() / 3).max(2) && *d < name.chars().count().max(c.chars().count()));
    near.map(|x| x.1).or_else(|| candidates.iter().filter(|c| name.len() >= 3 && c.contains(name)).min_by_key(|c| c.len()).copied())
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
        // every group names its lints, with or without the tool prefix; together they are all
        let mut in_groups = 0;
        for g in GROUPS {
            let members = expand(g.name()).unwrap();
            assert!(!members.is_empty() && members.iter().all(|l| l.group == *g), "{g:?}");
            let names = |v: Vec<&Lint>| v.iter().map(|l| l.name).collect::<Vec<_>>();
            assert_eq!(expand(&format!("gpucheck::{}", g.name())).map(names), Some(names(members.clone())));
            in_groups += members.len();
        }
        assert_eq!(in_groups, LINTS.len());
        assert!(expand("perf").unwrap().iter().any(|l| l.name == "uncoalesced_global_access"));
        assert!(expand("pedantic").unwrap().iter().all(|l| l.default == Level::Allow));
        assert_eq!(expand("all").unwrap().len(), LINTS.len() - expand("pedantic").unwrap().len());
        assert!(expand("nope").is_none());
        assert_eq!(closest("divergent_branches"), Some("divergent_branch"));
        assert_eq!(closest("gpucheck::barier_divergence"), Some("barrier_divergence"));
        assert_eq!(closest("perff"), Some("perf"));
        assert_eq!(closest("completely_unrelated_name"), None);
        assert_eq!(closest("divergent"), Some("divergent_branch"));
        assert_eq!(closest("coalesc"), Some("uncoalesced_global_access"));
        // short names: near when they share something
        assert_eq!(closest_among("nn", ["n", "x"]), Some("n"));
        assert_eq!(closest_among("zz", ["n", "x"]), None);
    }

    #[test]
    fn every_explanation_has_a_bad_and_a_good_example() {
        for l in LINTS {
            let e = l.explanation();
            assert!(e.contains("### What it does") && e.contains("### Why is this bad"), "{}", l.name);
            assert!(e.contains("### Example") && e.contains("Use instead"), "{}", l.name);
            assert!(!e.contains("```rust,ignore") && !e.lines().any(|x| x.starts_with(' ') && x.trim().starts_with("###")), "{}", l.name);
        }
    }

    #[test]
    fn the_registry_is_the_declarations() {
        // every declared static is registered once, under its own name
        let mut names: Vec<&str> = LINTS.iter().map(|l| l.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), LINTS.len());
        assert!(is_registered(&crate::lints::DIVERGENT_BRANCH));
        let stray = Lint { name: "divergent_branch", group: Group::Perf, default: Level::Warn, summary: "", one_per_line: false, doc: "" };
        assert!(!is_registered(&stray));
    }
}
