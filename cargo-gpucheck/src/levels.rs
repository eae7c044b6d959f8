//! Lint levels: defaults, `[workspace.metadata.gpucheck.lints]`,
//! `[package.metadata.gpucheck.lints]`, then `-A/-W/-D/-F NAME` on the
//! command line (in order, last wins). Names may be lints or groups, with or
//! without `gpucheck::`. `forbid` cannot be lowered afterwards. `warnings`
//! is rustc's: `-D warnings` makes every finding that would be a warning an
//! error (whatever set it to warn, before or after), `-A warnings` hides them.
//!
//! Owns: resolving the level of each lint and the note saying where it came
//! from (as rustc's "`#[warn(…)]` on by default"). Does not own: which
//! findings exist or where comments suppress them (`suppress`).

use gpucheck_analysis::lints::registry::{closest, expand};
use gpucheck_analysis::lints::Group;
use gpucheck_analysis::{Finding, Level, Lint, LINTS};
use rustc_hash::FxHashMap as HashMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    /// `[workspace.metadata.gpucheck.lints]` / `[package.metadata.gpucheck.lints]`
    Table {
        table: &'static str,
        manifest: String,
        key: String,
    },
    /// `-D name` (possibly a group that contained the lint)
    CommandLine {
        flag: char,
        name: String,
    },
}

#[derive(Clone, Debug)]
pub struct Levels {
    map: HashMap<&'static str, (Level, Source)>,
    /// What `warnings` was last set to: the level every warning takes.
    all_warnings: Option<(Level, Source)>,
    /// What the `pedantic` group was last set to: the level of a
    /// correctness finding whose replay did not reproduce it.
    pedantic: Option<(Level, Source)>,
    /// Problems with the configuration that do not stop the check (unknown
    /// lint names), reported once.
    pub warnings: Vec<String>,
    /// Configuration that cannot be used (a level that is not one): the
    /// check stops with exit status 2.
    pub errors: Vec<String>,
}

/// rustc's name for every lint at warn level.
const WARNINGS: &str = "warnings";

fn flag_level(flag: char) -> Level {
    match flag {
        'A' => Level::Allow,
        'W' => Level::Warn,
        'D' => Level::Deny,
        _ => Level::Forbid,
    }
}

impl Default for Levels {
    fn default() -> Self {
        Levels {
            map: LINTS.iter().map(|l| (l.name, (l.default, Source::Default))).collect(),
            all_warnings: None,
            pedantic: None,
            warnings: vec![],
            errors: vec![],
        }
    }
}

impl Levels {
    fn set(&mut self, name: &str, level: Level, source: Source) {
        if name.strip_prefix("gpucheck::").unwrap_or(name) == WARNINGS {
            self.all_warnings = Some((level, source));
            return;
        }
        if name.strip_prefix("gpucheck::").unwrap_or(name) == "pedantic" {
            self.pedantic = Some((level, source.clone()));
        }
        match expand(name) {
            Some(lints) => {
                for l in lints {
                    let cur = self.map.get(l.name).cloned().unwrap_or((l.default, Source::Default));
                    if cur.0 == Level::Forbid && level != Level::Forbid {
                        self.warnings.push(format!(
                            "`{}` for `gpucheck::{}` is ignored: the lint was forbidden earlier ({})",
                            level.as_str(),
                            l.name,
                            describe(&cur.1, l)
                        ));
                        continue;
                    }
                    self.map.insert(l.name, (level, source.clone()));
                }
            }
            None => {
                let hint = closest(name).map(|c| format!("; did you mean `gpucheck::{c}`?")).unwrap_or_default();
                self.warnings.push(format!("unknown lint: `{name}`{hint}"));
            }
        }
    }

    /// Apply a `lints` table from Cargo.toml metadata.
    pub fn apply_table(&mut self, table: &serde_json::Value, which: &'static str, manifest: &str) {
        let Some(obj) = table.as_object() else {
            self.errors.push(format!("`[{which}]` in {manifest} must be a table of `name = \"allow\"|\"warn\"|\"deny\"|\"forbid\"`"));
            return;
        };
        // groups first, then single lints, so `perf = "deny"` + `x = "allow"` means what it says
        let mut entries: Vec<(&String, &serde_json::Value)> = obj.iter().collect();
        entries.sort_by_key(|(k, _)| expand(k).map(|v| v.len() == 1).unwrap_or(true));
        for (k, v) in entries {
            let lv = v.as_str().or_else(|| v.get("level").and_then(|x| x.as_str()));
            match lv.and_then(Level::parse) {
                Some(level) => self.set(k, level, Source::Table { table: which, manifest: manifest.to_string(), key: k.clone() }),
                None => self
                    .errors
                    .push(format!("`{k} = {v}` in `[{which}]` of {manifest}: expected \"allow\", \"warn\", \"deny\" or \"forbid\"")),
            }
        }
    }

    /// Apply command-line flags, in the order given.
    pub fn apply_flags(&mut self, flags: &[(char, String)]) {
        for (f, name) in flags {
            self.set(name, flag_level(*f), Source::CommandLine { flag: *f, name: name.clone() });
        }
    }

    pub fn level(&self, lint: &Lint) -> Level {
        let level = self.map.get(lint.name).map(|x| x.0).unwrap_or(lint.default);
        match &self.all_warnings {
            Some((promoted, _)) if level == Level::Warn => *promoted,
            _ => level,
        }
    }

    /// A finding's level and the note saying where it came from: its lint's,
    /// but a correctness finding that needs values the check gave unknowns
    /// (`Finding::conditional`: it names them) is a warning while its lint
    /// is at its default deny — an error is one that happens for every
    /// launch; `-D` on the lint (or `-D warnings`) makes it one.
    ///
    /// A correctness finding whose witness a replay ran and did not show
    /// (`Replay::NotReproduced`) is pedantic while its lint is at its
    /// default: allowed, unless the `pedantic` group is raised.
    pub fn of_finding(&self, f: &Finding) -> (Level, String) {
        let defaulted = matches!(self.map.get(f.lint.name), None | Some((_, Source::Default)));
        if defaulted && matches!(f.replay, gpucheck_analysis::lints::Replay::NotReproduced(_)) {
            let (level, from) = match &self.pedantic {
                Some((level, src)) => (*level, describe_group(src)),
                None => (Level::Allow, "off by default".to_string()),
            };
            return (
                level,
                format!("a replay did not reproduce this finding: it is pedantic, and pedantic findings are {from} (`-D gpucheck::{}` reports it at the lint's level)", f.lint.name),
            );
        }
        if defaulted && f.lint.default == Level::Deny && f.lint.group == Group::Correctness && f.conditional() {
            let note = format!(
                "`#[deny(gpucheck::{})]` on by default, but this finding needs the values named above: a warning until they hold for the launch (`-D gpucheck::{}` makes it an error)",
                f.lint.name, f.lint.name
            );
            return match &self.all_warnings {
                Some((promoted, from)) if *promoted != Level::Warn => {
                    (*promoted, format!("{note}, and this warning is {} by {}", promoted.as_str(), warnings_source(from)))
                }
                _ => (Level::Warn, note),
            };
        }
        (self.level(f.lint), self.note(f.lint))
    }

    /// The lints none of whose findings can be shown: allowed by the
    /// defaults, tables and flags, and named by no attribute of the sources
    /// (`named`), which could raise them (a comment only allows). The
    /// analysis does not run the passes that find only these
    /// (`Options::silent`). Correctness lints are never silent: their
    /// findings' replays are counted at every level.
    pub fn silent(&self, named: &dyn Fn(&str) -> bool) -> Vec<&'static str> {
        LINTS.iter().filter(|l| l.group != Group::Correctness && self.level(l) == Level::Allow && !named(l.name)).map(|l| l.name).collect()
    }

    /// A level set in the source (`#[warn(gpucheck::…)]`), with `-D
    /// warnings` (or `-A warnings`) applied as to every warning.
    pub fn promoted(&self, level: Level, note: String) -> (Level, String) {
        match &self.all_warnings {
            Some((promoted, from)) if level == Level::Warn && *promoted != Level::Warn => {
                (*promoted, format!("{note}, and this warning is {} by {}", promoted.as_str(), warnings_source(from)))
            }
            _ => (level, note),
        }
    }

    /// rustc-style note saying where the level came from.
    pub fn note(&self, lint: &'static Lint) -> String {
        let (level, src) = self.map.get(lint.name).map(|(l, s)| (*l, s)).unwrap_or((lint.default, &Source::Default));
        self.promoted(level, describe(src, lint)).1
    }
}

fn describe(src: &Source, lint: &Lint) -> String {
    match src {
        Source::Default => format!("`#[{}(gpucheck::{})]` on by default", lint.default.as_str(), lint.name),
        Source::Table { table, manifest, key } => {
            format!("`{key}` set in `[{table}]` of {manifest}")
        }
        Source::CommandLine { flag, name } => {
            let n = name.strip_prefix("gpucheck::").unwrap_or(name);
            if n == lint.name {
                format!("requested on the command line with `-{flag} gpucheck::{n}`")
            } else {
                format!("`-{flag} gpucheck::{}` implied by `-{flag} gpucheck::{n}`", lint.name)
            }
        }
    }
}

/// Where the `pedantic` group was set.
fn describe_group(src: &Source) -> String {
    match src {
        Source::Default => "off by default".to_string(),
        Source::Table { table, manifest, key } => format!("set by `{key}` in `[{table}]` of {manifest}"),
        Source::CommandLine { flag, name } => format!("requested with `-{flag} {name}`"),
    }
}

/// Where `warnings` was set: `-D warnings`, or a Cargo table.
fn warnings_source(src: &Source) -> String {
    match src {
        Source::CommandLine { flag, .. } => format!("`-{flag} {WARNINGS}`"),
        Source::Table { table, manifest, key } => format!("`{key}` in `[{table}]` of {manifest}"),
        Source::Default => WARNINGS.to_string(),
    }
}

/// `-A/-W/-D/-F NAME` (also `-ANAME`) from the raw arguments, in order.
pub fn flags_from_args(args: &[String]) -> Vec<(char, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            break;
        }
        let b = a.as_bytes();
        if b.len() >= 2 && b[0] == b'-' && matches!(b[1], b'A' | b'W' | b'D' | b'F') {
            let flag = b[1] as char;
            if b.len() > 2 {
                out.push((flag, a[2..].trim_start_matches('=').to_string()));
            } else if let Some(v) = args.get(i + 1) {
                out.push((flag, v.clone()));
                i += 1;
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucheck_analysis::lints::{BARRIER_DIVERGENCE, DIVERGENT_BRANCH};
    use serde_json::json;

    #[test]
    fn precedence_command_line_over_package_over_workspace() {
        let mut l = Levels::default();
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Warn);
        assert_eq!(l.note(&DIVERGENT_BRANCH), "`#[warn(gpucheck::divergent_branch)]` on by default");
        l.apply_table(&json!({"perf": "allow"}), "workspace.metadata.gpucheck.lints", "Cargo.toml");
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Allow);
        l.apply_table(&json!({"gpucheck::divergent_branch": "deny"}), "package.metadata.gpucheck.lints", "k/Cargo.toml");
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Deny);
        assert_eq!(l.note(&DIVERGENT_BRANCH), "`gpucheck::divergent_branch` set in `[package.metadata.gpucheck.lints]` of k/Cargo.toml");
        l.apply_flags(&flags_from_args(&["-D".into(), "all".into(), "-Wgpucheck::perf".into()]));
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Warn);
        assert_eq!(l.note(&DIVERGENT_BRANCH), "`-W gpucheck::divergent_branch` implied by `-W gpucheck::perf`");
        assert_eq!(l.level(&BARRIER_DIVERGENCE), Level::Deny);
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    }

    #[test]
    fn silent_lints_are_those_no_level_shows() {
        let allowed: Vec<&str> =
            LINTS.iter().filter(|l| l.default == Level::Allow && l.group != Group::Correctness).map(|l| l.name).collect();
        assert!(allowed.contains(&"shared_memory_opportunity"), "{allowed:?}");
        // by default: the pedantic lints allowed by default
        assert_eq!(Levels::default().silent(&|_| false), allowed);
        // a level from a table, a flag, or an attribute that names the lint or its group shows it
        let mut l = Levels::default();
        l.apply_table(&json!({"shared_memory_opportunity": "warn"}), "package.metadata.gpucheck.lints", "Cargo.toml");
        assert!(!l.silent(&|_| false).contains(&"shared_memory_opportunity"));
        let mut l = Levels::default();
        l.apply_flags(&[('W', "pedantic".into())]);
        assert!(l.silent(&|_| false).is_empty(), "{:?}", l.silent(&|_| false));
        assert!(!Levels::default().silent(&|n| n == "vectorizable_access").contains(&"vectorizable_access"));
        // a lint allowed on the command line is silent; a correctness lint never is (its replays are counted)
        let mut l = Levels::default();
        l.apply_flags(&[('A', "all".into())]);
        let s = l.silent(&|_| false);
        assert!(s.contains(&"divergent_branch") && !s.contains(&"shared_memory_race"), "{s:?}");
        // `-A warnings` hides every warning: the perf lints at warn are silent too
        let mut l = Levels::default();
        l.apply_flags(&[('A', "warnings".into())]);
        assert!(l.silent(&|_| false).contains(&"uncoalesced_global_access"));
    }

    #[test]
    fn a_finding_that_needs_sampled_values_is_a_warning_until_denied() {
        use gpucheck_analysis::facts::{Assumed, Assumption};
        use gpucheck_analysis::lints::SHARED_MEMORY_RACE;
        let finding = |alignment: bool| Finding {
            kernel: "k".into(),
            ptx_line: 1,
            ptx_col: 1,
            access: true,
            assumes: vec![Assumption {
                name: "n".into(),
                kind: Assumed::Parameter,
                ptx_line: None,
                sample: 1024,
                alignment,
                known: vec![],
                param: None,
            }],
            ..Finding::new(&SHARED_MEMORY_RACE)
        };
        let mut l = Levels::default();
        // a sample the witness needs: a warning; one that decides the alignment only: still an error
        let (level, note) = l.of_finding(&finding(false));
        assert_eq!(level, Level::Warn);
        assert!(note.contains("needs the values named above"), "{note}");
        assert_eq!(l.of_finding(&finding(true)).0, Level::Deny);
        // asked for on the command line: an error again
        l.apply_flags(&[('D', "shared_memory_race".into())]);
        assert_eq!(l.of_finding(&finding(false)).0, Level::Deny);
        let mut w = Levels::default();
        w.apply_flags(&[('D', "warnings".into())]);
        assert_eq!(w.of_finding(&finding(false)).0, Level::Deny);
        // a witness a replay did not reproduce: pedantic, off unless the group is raised
        let not = Finding { replay: gpucheck_analysis::lints::Replay::NotReproduced("block 0".into()), ..finding(true) };
        let (level, note) = Levels::default().of_finding(&not);
        assert_eq!(level, Level::Allow);
        assert!(note.contains("did not reproduce"), "{note}");
        let mut p = Levels::default();
        p.apply_flags(&[('W', "pedantic".into())]);
        let (level, note) = p.of_finding(&not);
        assert_eq!(level, Level::Warn);
        assert!(note.contains("requested with `-W pedantic`"), "{note}");
        // the lint asked for by name: its level
        let mut d = Levels::default();
        d.apply_flags(&[('D', "shared_memory_race".into())]);
        assert_eq!(d.of_finding(&not).0, Level::Deny);
    }

    #[test]
    fn last_flag_wins_and_forbid_sticks() {
        let mut l = Levels::default();
        l.apply_flags(&[('A', "divergent_branch".into()), ('D', "divergent_branch".into())]);
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Deny);
        assert_eq!(l.note(&DIVERGENT_BRANCH), "requested on the command line with `-D gpucheck::divergent_branch`");
        l.apply_flags(&[('F', "correctness".into()), ('A', "barrier_divergence".into())]);
        assert_eq!(l.level(&BARRIER_DIVERGENCE), Level::Forbid);
        assert_eq!(l.warnings.len(), 1);
        assert!(l.warnings[0].contains("forbidden"));
    }

    #[test]
    fn unknown_names_suggest_the_closest() {
        let mut l = Levels::default();
        l.apply_flags(&[('D', "gpucheck::divergent_branches".into())]);
        assert_eq!(
            l.warnings,
            vec!["unknown lint: `gpucheck::divergent_branches`; did you mean `gpucheck::divergent_branch`?".to_string()]
        );
        l.apply_table(&json!({"divergent_branch": "loud"}), "package.metadata.gpucheck.lints", "Cargo.toml");
        assert!(l.errors[0].contains("expected \"allow\""), "an unknown level is an error: {:?}", l.errors);
    }

    #[test]
    fn warnings_as_in_rustc() {
        use gpucheck_analysis::lints::{DATA_DEPENDENT_ACCESS, UNCOALESCED_GLOBAL_ACCESS};
        // `-D warnings` turns every warning into an error, whatever made it a warning, set before or after
        let mut l = Levels::default();
        l.apply_flags(&flags_from_args(&["-D".into(), "warnings".into(), "-W".into(), "gpucheck::divergent_branch".into()]));
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Deny);
        assert_eq!(l.level(&UNCOALESCED_GLOBAL_ACCESS), Level::Deny);
        assert_eq!(
            l.note(&UNCOALESCED_GLOBAL_ACCESS),
            "`#[warn(gpucheck::uncoalesced_global_access)]` on by default, and this warning is deny by `-D warnings`"
        );
        // errors stay errors, pedantic lints stay off
        assert_eq!(l.level(&BARRIER_DIVERGENCE), Level::Deny);
        assert_eq!(l.level(&DATA_DEPENDENT_ACCESS), Level::Allow);
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        // `-A warnings` hides them; a pedantic lint enabled afterwards is a warning, so hidden too
        let mut l = Levels::default();
        l.apply_flags(&[('A', "warnings".into()), ('W', "pedantic".into())]);
        assert_eq!((l.level(&DIVERGENT_BRANCH), l.level(&DATA_DEPENDENT_ACCESS)), (Level::Allow, Level::Allow));
        assert_eq!(l.level(&BARRIER_DIVERGENCE), Level::Deny);
        // and in a Cargo table
        let mut l = Levels::default();
        l.apply_table(&json!({"warnings": "deny"}), "workspace.metadata.gpucheck.lints", "Cargo.toml");
        assert_eq!(l.level(&DIVERGENT_BRANCH), Level::Deny);
        assert!(l.note(&DIVERGENT_BRANCH).ends_with("deny by `warnings` in `[workspace.metadata.gpucheck.lints]` of Cargo.toml"));
    }
}
